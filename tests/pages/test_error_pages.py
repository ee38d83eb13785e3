"""Every error a browser asks for is a page with the site's header and a way back; programs, ``/api/``
and the gateway's prefixes keep the contract's JSON, whatever the Accept header."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.pages.security import CONTENT_SECURITY_POLICY
from tests.conftest import BASE_URL, running
from tests.pages.conftest import BROWSER_ACCEPT, client_of

HTML = "text/html; charset=utf-8"


@pytest.fixture
async def crashing_app(settings: Settings, clock: ManualClock) -> AsyncIterator[FastAPI]:
    """The app with one route that fails the way a bug does (an exception nobody expected)."""
    app = create_app(settings, clock=clock)

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken)
    app.add_api_route("/api/broken", broken)
    async with running(app) as started:
        yield started


def assert_page(response: httpx.Response, status: int, heading: str) -> str:
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"] == HTML
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    text = response.text
    assert 'class="site-header"' in text and 'href="/">' in text  # the site's header, home
    assert f"<h1>{heading}</h1>" in text and 'data-test="error-back"' in text  # and a way back
    return text


async def test_a_browser_gets_pages_for_404_405_400_and_403(browser: httpx.AsyncClient) -> None:
    missing = assert_page(await browser.get("/no-such-page"), 404, "Page not found")
    assert "/docs/errors#endpoint_not_found" in missing and 'data-test="error-home"' not in missing

    not_taken = await browser.get("/app/logout", headers={"Referer": "http://127.0.0.1:8000/pricing"})
    page = assert_page(not_taken, 405, "This address does not take that request")
    assert not_taken.headers["allow"] == "POST"
    assert 'href="/pricing" data-test="error-back"' in page and 'data-test="error-dashboard"' in page

    # A Referer urllib cannot split (an unclosed IPv6 bracket) leads home, and the page still renders.
    odd_referer = await browser.get("/no-such-page", headers={"Referer": "http://[127.0.0.1/pricing"})
    assert 'href="/" data-test="error-back"' in assert_page(odd_referer, 404, "Page not found")

    bad_query = await browser.get("/app/register/verify", params={"token": "x" * 201})
    assert_page(bad_query, 400, "This request could not be used")

    forged = await browser.post(
        "/app/login", data={"csrf_token": "0" * 64, "email": "a@b.example", "password": "x"}
    )
    assert "/docs/errors#csrf_token_invalid" in assert_page(forged, 403, "You may not do this here")


async def test_a_browser_gets_a_page_for_too_many_requests(settings: Settings, clock: ManualClock) -> None:
    limited = create_app(settings.model_copy(update={"site_ask_limit": 1}), clock=clock)
    async with running(limited) as app, client_of(app, Accept="text/html") as client:
        first = await client.post("/ask", data={"query": "What is the weather in Berlin?"})
        assert first.status_code == 200
        refused = await client.post("/ask", data={"query": "And tomorrow?"})
    assert "Please try again in" in assert_page(refused, 429, "Too many requests")
    assert int(refused.headers["retry-after"]) > 0


def uncaught(app: FastAPI, **headers: str) -> httpx.AsyncClient:
    """A client that receives the 500 answer (the server re-raises the exception after sending it)."""
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers)


async def test_a_crash_is_a_page_for_a_browser_and_the_envelope_for_a_program(crashing_app: FastAPI) -> None:
    async with uncaught(crashing_app, Accept=BROWSER_ACCEPT) as browser, uncaught(crashing_app) as program:
        page = assert_page(await browser.get("/broken"), 500, "Something went wrong on our side")
        assert "a bug" not in page and "Please try again in a moment." in page
        for client in (browser, program):  # under /api/ every client gets JSON
            failed = await client.get("/api/broken")
            assert failed.status_code == 500 and failed.json()["error"]["type"] == "server_error"
        failed = await program.get("/broken")
        assert failed.status_code == 500 and failed.headers["content-type"].startswith("application/json")


async def test_api_and_the_gateway_keep_their_json_for_a_browser(browser: httpx.AsyncClient) -> None:
    missing = await browser.get("/api/nothing.json")
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/json; charset=utf-8"
    assert (
        missing.json()["error"]["code"] == "ENDPOINT_NOT_FOUND"
        and missing.json()["error"]["documentation_url"]
    )
    for path in ("/v1/models", "/admin/api-keys", "/agent/nothing"):
        answer = await browser.get(path)
        assert answer.headers["content-type"].startswith("application/json"), path
        error = answer.json()["error"]
        assert "documentation_url" not in error and error["type"] != "auth_error", (
            path
        )  # the gateway envelope
    assert (await browser.get("/.well-known/nothing")).headers["content-type"].startswith("application/json")


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", "text/html;q=0.5, application/json"])
async def test_programs_keep_the_site_envelope(program: httpx.AsyncClient, accept: str | None) -> None:
    if accept is None:
        program.headers.pop("accept", None)
    answer = await program.get("/no-such-page", headers={"Accept": accept} if accept else {})
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "ENDPOINT_NOT_FOUND"
