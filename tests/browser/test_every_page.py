"""Journeys 5 and 6: every page passes axe-core and works 375 px wide, and fits 1280 px as well; no page
loads anything from outside the service. And the guards that decide this catch what they look for."""

from __future__ import annotations

import time
from itertools import chain
from pathlib import Path

import pytest
from playwright.sync_api import Browser
from pydantic import SecretStr

from agent_server.foundation.settings import Settings
from tests.browser.first_hour import assert_fits, settle
from tests.browser.harness import Visitor, assert_accessible
from tests.browser.live import ThreadedServer
from tests.browser.pages import (
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    SIGNED_OUT,
    dashboard_pages,
    form_pages,
    public_paths,
    signed_in_paths,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The app with a platform admin (bootstrapped at its first start), who may see every page."""
    return settings.model_copy(
        update={"admin_email": ADMIN_EMAIL, "admin_password": SecretStr(ADMIN_PASSWORD)}
    )


def check_wide_then_narrow(visitor: Visitor, name: str) -> None:
    """No sideways scroll at 1280 px (a desktop), then the full check at 375 px (axe-core, screenshot)."""
    page = visitor.page
    page.set_viewport_size({"width": 1280, "height": 900})
    settle(page)
    assert_fits(page, f"{name} at 1280 px")
    page.set_viewport_size({"width": 375, "height": 812})
    settle(page)
    visitor.check(name)


def test_every_public_page_passes_axe_and_fits_375_px(visitor: Visitor) -> None:
    paths = public_paths()
    assert {
        "/",
        "/pricing",
        "/faq",
        "/terms",
        "/privacy",
        "/docs",
        "/docs/errors",
        "/newsletter",
        "/catalogue/discovery-call",
    } <= set(paths)
    for path in paths:
        visitor.open(path)
        visitor.quiet()  # the API explorer draws itself after load
        check_wide_then_narrow(visitor, path)
    for name in form_pages(visitor):
        check_wide_then_narrow(visitor, name)


def test_every_dashboard_page_passes_axe_and_fits_375_px(visitor: Visitor) -> None:
    paths = signed_in_paths()
    assert {
        "/app",
        "/app/keys",
        "/app/usage",
        "/app/webhooks",
        "/app/passkeys",
        "/app/routing",
        "/app/leads",
    } <= set(paths)
    seen = []
    for name in dashboard_pages(visitor):
        assert "/app/login" not in visitor.page.url or name.startswith("/app/login"), (name, visitor.page.url)
        check_wide_then_narrow(visitor, name)
        seen.append(name)
    assert len(seen) == len(SIGNED_OUT) + len(paths) + 2


def test_no_page_loads_anything_from_outside_the_service(visitor: Visitor) -> None:
    loaded: set[str] = set()
    visitor.context.on("request", lambda request: loaded.add(request.url))
    for path in public_paths():
        visitor.open(path)
        visitor.quiet()
    for _ in chain(form_pages(visitor), dashboard_pages(visitor)):
        visitor.quiet()
    assert any("/static/js/dashboard/" in url for url in loaded)  # the pages' own modules did load
    assert visitor.problems.outside == []
    visitor.assert_clean()


def test_the_guards_catch_outside_requests_csp_violations_and_errors(
    browser: Browser, server: ThreadedServer, artifacts: Path
) -> None:
    # The policy stops a page's own fetch to another host; the route guard stops what the policy does not
    # govern (here the policy is off, as it would be on a page that forgot it).
    for bypass_csp in (False, True):
        visitor = Visitor(browser, server.url, artifacts, bypass_csp=bypass_csp)
        expected = ["uncaught exception: a broken script", "unexpected HTTP error: 404 GET"]
        if bypass_csp:
            expected.append("request to another origin: https://cdn.example.net/library.js")
        else:
            expected += ['violates the following Content Security Policy directive: "connect-src',
                         "Applying inline style violates"]  # fmt: skip
        try:
            page = visitor.open("/")
            page.evaluate("fetch('https://cdn.example.net/library.js').catch(() => {})")
            page.evaluate(
                "document.body.insertAdjacentHTML('beforeend', '<p style=\"color: red\">inline</p>')"
            )
            page.evaluate("setTimeout(() => { throw new Error('a broken script') })")
            page.evaluate("fetch('/api/no-such-thing')")
            deadline = time.monotonic() + 5
            while missing := [text for text in expected if text not in "\n".join(visitor.report())]:
                assert time.monotonic() < deadline, f"the guards missed {missing}: {visitor.report()}"
                page.wait_for_timeout(50)
            with pytest.raises(AssertionError, match="did not load cleanly"):
                visitor.assert_clean()
        finally:
            visitor.close()


def test_axe_finds_an_image_without_a_text_alternative(visitor: Visitor) -> None:
    page = visitor.open("/")
    page.evaluate(
        "document.querySelector('main').insertAdjacentHTML('afterbegin', '<img src=\"/static/img/favicon.svg\">')"
    )
    with pytest.raises(AssertionError, match="image-alt"):
        assert_accessible(page, "home with an unlabelled image")
