"""One URL, two readers: ``/`` and ``/docs/errors`` are pages for a browser and JSON for programs."""

from __future__ import annotations

import httpx
import pytest

from http_facade.pages.negotiation import quality
from tests.conftest import BASE_URL
from tests.pages.conftest import BROWSER_ACCEPT

POINTER = {
    "name": "agentgate",
    "tagline": "One secure gateway for every AI agent you run.",
    "for_agents": f"{BASE_URL}/?mode=agent",
    "site_meta": f"{BASE_URL}/api/site-meta.json",
    "documentation": f"{BASE_URL}/docs",
}


async def test_a_browser_gets_the_home_page(browser: httpx.AsyncClient) -> None:
    response = await browser.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert "Accept" in response.headers.get_list("vary")
    assert "<h1" in response.text and 'id="ask-form"' in response.text and "data-chat" in response.text


@pytest.mark.parametrize(
    "accept",
    [None, "*/*", "application/json", "application/json, text/html", "text/html;q=0.5, application/json"],
)
async def test_programs_keep_the_json_pointer(program: httpx.AsyncClient, accept: str | None) -> None:
    headers = {"Accept": accept} if accept else {}
    if accept is None:
        program.headers.pop("accept", None)
    response = await program.get("/", headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == POINTER


async def test_mode_agent_is_json_even_for_a_browser(
    browser: httpx.AsyncClient, program: httpx.AsyncClient
) -> None:
    meta = (await program.get("/api/site-meta.json")).json()
    for client in (browser, program):
        response = await client.get("/", params={"mode": "agent"})
        assert response.headers["content-type"].startswith("application/json")
        assert response.json() == meta


async def test_error_docs_negotiate_between_page_and_json(
    browser: httpx.AsyncClient, program: httpx.AsyncClient
) -> None:
    page = await browser.get("/docs/errors")
    assert page.headers["content-type"].startswith("text/html") and 'id="validation_error"' in page.text
    document = await program.get("/docs/errors", headers={"Accept": "application/json"})
    assert document.headers["content-type"].startswith("application/json")
    codes = {c["code"] for g in document.json()["groups"] for c in g["codes"]}
    assert "validation_error" in codes
    for response in (page, document):
        assert "Accept" in response.headers.get_list("vary")


@pytest.mark.parametrize(
    ("accept", "html", "json"),
    [
        (BROWSER_ACCEPT, 1.0, 0.8),
        ("*/*", 1.0, 1.0),
        ("text/*;q=0.4, application/json;q=0.9", 0.4, 0.9),
        ("text/html;q=bogus", 0.0, 0.0),
        ("", 0.0, 0.0),
    ],
)
def test_quality_takes_the_most_specific_range(accept: str, html: float, json: float) -> None:
    assert quality(accept, "text/html") == html
    assert quality(accept, "application/json") == json
