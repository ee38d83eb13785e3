"""Every page: 200 with the security headers, no inline script or style, every asset it references
served by the app, nothing loaded from another host, and the basics of an accessible document."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from itertools import pairwise
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from http_facade.pages.routers import PAGE_ROUTERS
from http_facade.pages.security import CONTENT_SECURITY_POLICY
from tests.conftest import BASE_URL
from tests.pages.html import Page, parse

SERVICE_HOST = urlsplit(BASE_URL).netloc
# Attributes that make a browser load something (or send a form) by themselves.
LOADING = {
    ("script", "src"),
    ("link", "href"),
    ("img", "src"),
    ("iframe", "src"),
    ("form", "action"),
    ("source", "src"),
}
CHECKOUT = {"item_id": "agent-architecture-review", "quantity": "1", "email": "buyer@example.com", "name": ""}


def page_paths() -> list[str]:
    """The home page and every page route without a path parameter, read from the routers."""
    paths = ["/"]
    for router in PAGE_ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute) and "GET" in route.methods and "{" not in route.path:
                paths.append(route.path)
    return paths


async def rendered_pages(browser: httpx.AsyncClient) -> AsyncIterator[tuple[str, httpx.Response]]:
    """Every GET page, and the pages that answer forms (confirmation, order, answer, error)."""
    for path in page_paths():
        yield path, await browser.get(path)
    yield "POST /newsletter", await browser.post("/newsletter", data={"email": "reader@example.com"})
    order = await browser.post("/checkout", data=CHECKOUT)
    yield "order page", await browser.get(order.headers["location"])
    yield "POST /ask", await browser.post("/ask", data={"query": "How do I rotate my API key?"})
    yield "error page", await browser.post("/checkout", data={**CHECKOUT, "item_id": "edge-inference-node"})


def test_the_page_list_is_complete() -> None:
    paths = page_paths()
    for path in ("/", "/pricing", "/faq", "/status-page", "/catalogue", "/catalogue/consulting",
                 "/catalogue/training", "/catalogue/hardware", "/catalogue/discovery-call", "/newsletter",
                 "/docs", "/docs/errors", "/terms", "/privacy"):  # fmt: skip
        assert path in paths


async def test_every_page_carries_the_security_headers(browser: httpx.AsyncClient) -> None:
    async for name, response in rendered_pages(browser):
        expected = 400 if name == "error page" else 200
        assert response.status_code == expected, (name, response.text[:500])
        assert response.headers["content-type"] == "text/html; charset=utf-8", name
        csp = response.headers["content-security-policy"]
        assert csp == CONTENT_SECURITY_POLICY, name
        directives = dict(d.split(" ", 1) for d in csp.split("; "))
        assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'"
        assert directives["style-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
        assert directives["report-uri"] == "/admin/csp-report/" and "unsafe" not in csp
        assert response.headers["x-content-type-options"] == "nosniff", name
        assert response.headers["referrer-policy"] == "same-origin", name


def inline_problems(page: Page) -> list[str]:
    problems = []
    for element in page.elements:
        if element.tag == "script" and "src" not in element.attrs:
            problems.append(f"inline <script>: {element.text[:60]!r}")
        if element.tag == "style":
            problems.append("<style> element")
        for attribute in element.attrs:
            if attribute == "style" or attribute.startswith("on"):
                problems.append(f"<{element.tag} {attribute}=...>")
    return problems


async def test_no_page_has_inline_script_or_style(browser: httpx.AsyncClient) -> None:
    async for name, response in rendered_pages(browser):
        assert inline_problems(parse(response.text)) == [], name


def test_the_inline_check_finds_what_it_looks_for() -> None:
    page = parse(
        '<p style="x" onclick="y">a</p><script>alert(1)</script><style>p{}</style><script src="/a.js"></script>'
    )
    assert len(inline_problems(page)) == 4


async def test_every_referenced_asset_is_served(browser: httpx.AsyncClient) -> None:
    assets: set[str] = set()
    async for _, response in rendered_pages(browser):
        page = parse(response.text)
        assets |= {e.attrs["src"] for e in page.all("script", "img") if "src" in e.attrs}
        assets |= {e.attrs["href"] for e in page.all("link")}
    assert {a.split("?")[0] for a in assets} >= {
        "/static/css/site.css",
        "/static/js/ask.js",
        "/static/js/chat.js",
    }
    modules: set[str] = set()
    for asset in sorted(assets):
        response = await browser.get(asset)
        assert response.status_code == 200, asset
        assert response.headers["x-content-type-options"] == "nosniff"
        path = urlsplit(asset).path
        if path.endswith(".js"):
            assert response.headers["content-type"].startswith("text/javascript"), asset
            # Modules import their siblings ("./sse.js"): those must be served too.
            modules |= {
                path.rsplit("/", 1)[0] + "/" + m for m in re.findall(r'from "\./([\w.-]+)"', response.text)
            }
        elif path.endswith(".css"):
            assert response.headers["content-type"].startswith("text/css"), asset
    for module in modules:
        assert (await browser.get(module)).status_code == 200, module


async def test_no_page_loads_anything_from_another_host(
    browser: httpx.AsyncClient, pages_app: FastAPI
) -> None:
    pack = pages_app.state.services.knowledge.pack
    # Links a visitor may follow to the company's own site (from the content pack), and mail. The
    # discovery call is booked on this site (its form), never on another host.
    own_links = {pack.company.website}
    async for name, response in rendered_pages(browser):
        for element in parse(response.text).elements:
            for attribute, value in element.attrs.items():
                if attribute not in ("src", "href", "action", "data", "poster", "srcset"):
                    continue
                url = urlsplit(value)
                if (element.tag, attribute) in LOADING or element.tag != "a":
                    assert url.scheme in ("", "http", "https") and url.netloc in ("", SERVICE_HOST), (
                        name,
                        value,
                    )
                elif url.netloc not in ("", SERVICE_HOST):
                    assert value in own_links or url.scheme == "mailto", (name, value)


async def test_pages_are_structured_for_assistive_technology(browser: httpx.AsyncClient) -> None:
    async for name, response in rendered_pages(browser):
        page = parse(response.text)
        assert page.all("html")[0].attrs.get("lang") == "en", name
        # The API explorer renders its own main landmark, so its page wraps the content in a div.
        assert len(page.all("main")) == (0 if name == "/docs" else 1) and "main" in page.ids(), name
        assert len(page.all("h1")) == 1, name
        assert page.all("a")[0].attrs["href"] == "#main", name  # the skip link comes first
        ids = page.ids()
        assert len(ids) == len(set(ids)), (name, sorted({i for i in ids if ids.count(i) > 1}))
        levels = [int(e.tag[1]) for e in page.all("h1", "h2", "h3", "h4")]
        assert levels[0] == 1, name
        jumps = [(a, b) for a, b in pairwise(levels) if b > a + 1]
        assert not jumps, (name, levels)
        labelled = {e.attrs.get("for") for e in page.all("label")}
        for field in page.all("input", "select", "textarea"):
            if field.attrs.get("type") not in ("hidden", "submit"):
                assert field.attrs.get("id") in labelled, (name, field.attrs)


async def test_a_page_error_is_a_page_for_a_browser_and_the_envelope_for_a_program(
    browser: httpx.AsyncClient, program: httpx.AsyncClient
) -> None:
    missing = await browser.get("/checkout/ord_missing")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert 'href="/docs/errors#not_found"' in missing.text
    envelope = await program.get("/checkout/ord_missing")
    assert envelope.status_code == 404 and envelope.json()["error"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("path", ["/static/js/none.js", "/static/../app.py", "/static/%2e%2e/app.py"])
async def test_static_serves_only_its_own_files(browser: httpx.AsyncClient, path: str) -> None:
    response = await browser.get(path)
    assert response.status_code == 404
    assert "create_app" not in response.text
