"""``/docs/errors``: every code the service can emit has an anchor, so every documentation_url resolves."""

from __future__ import annotations

import httpx

from agent_server.foundation.errors import AgentError
from http_facade.pages.error_catalogue import error_types
from tests.pages.error_codes import emitted_codes, source_codes, tree_codes
from tests.pages.html import parse


async def test_every_emitted_code_has_an_anchor(browser: httpx.AsyncClient) -> None:
    page = parse((await browser.get("/docs/errors")).text)
    anchors = set(page.ids())
    missing = sorted(code for code in emitted_codes() if code not in anchors)
    assert not missing, f"codes without an entry in http_facade/pages/error_codes.yaml: {missing}"


def test_the_collectors_find_codes_of_every_kind() -> None:
    tree, source = tree_codes(), source_codes()
    assert {"server_error", "validation_error", "rate_limit_exceeded", "sso_provider_unreachable"} <= tree
    # a keyword, a default_code, a parameter's default and a positional argument of a helper
    assert {"token_too_young", "endpoint_not_found", "saml_metadata_invalid", "saml_relay_state"} <= source


async def test_json_and_page_list_the_same_codes(
    browser: httpx.AsyncClient, program: httpx.AsyncClient
) -> None:
    document = (await program.get("/docs/errors")).json()
    listed = [code for group in document["groups"] for code in group["codes"]]
    names = [code["code"] for code in listed]
    assert len(names) == len(set(names))
    page = parse((await browser.get("/docs/errors")).text)
    articles = {e.attrs["id"] for e in page.all("article")}
    assert articles == set(names)
    for code in listed:
        assert code["url"] == f"http://127.0.0.1:8000/docs/errors#{code['code']}"
        assert code["site_code"] == code["code"].upper() and code["meaning"] and code["remedy"]
    assert {t["name"] for t in document["types"]} == {t.name for t in error_types()}


async def test_every_class_of_the_tree_is_a_type_row(browser: httpx.AsyncClient) -> None:
    page = parse((await browser.get("/docs/errors")).text)
    rows = set(page.ids())
    classes = {AgentError, *AgentError.__subclasses__()}
    for cls in classes:
        if cls.__module__ == "agent_server.foundation.errors":
            assert f"type-{cls.__name__}" in rows


async def test_a_real_error_links_to_its_entry(
    browser: httpx.AsyncClient, program: httpx.AsyncClient
) -> None:
    refusals = [
        await program.get("/api/nothing-here"),
        await program.get("/api/chat-completion.php", params={"action": "token"}),
        await program.post("/api/checkout.php", json={"item_id": "x", "email": "a@example.com"}),
    ]
    anchors = set(parse((await browser.get("/docs/errors")).text).ids())
    for response in refusals:
        url = response.json()["error"]["documentation_url"]
        path, _, anchor = url.partition("#")
        assert path == "http://127.0.0.1:8000/docs/errors" and anchor in anchors, url


async def test_meanings_render_code_spans_escaped(browser: httpx.AsyncClient) -> None:
    text = (await browser.get("/docs/errors")).text
    assert "<code>Content-Type: application/json</code>" in text
    assert "`" not in parse(text).all("main")[0].text
