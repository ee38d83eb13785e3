"""Which pages there are, read from the app's page routers, and how a person reaches the pages that
answer forms."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter
from fastapi.routing import APIRoute
from playwright.sync_api import expect

from http_facade.pages.dashboard import AREA_ROUTERS
from http_facade.pages.routers import PAGE_ROUTERS
from tests.browser.harness import Visitor

ADMIN_EMAIL, ADMIN_PASSWORD = "root@agentgate.example", "quiet-meadow-copper-71"  # the bootstrap admin
# Dashboard pages a person sees before signing in (the link pages with a token that is not valid).
SIGNED_OUT = ("/app/login", "/app/register", "/app/password/forgot", "/app/register/verify?token=nope",
              "/app/password/reset?token=nope")  # fmt: skip
# A hand-off, not a page: it needs the ticket of a single sign-on in this browser.
# The consent screen shows an OAuth client's authorization request only: tests/browser/test_oauth_consent.py
# opens it with one and checks it at both widths.
NOT_A_PAGE = {"/app/login/sso/finish", "/app/oauth/consent"}


def get_paths(routers: tuple[APIRouter, ...]) -> list[str]:
    """Every GET route of ``routers`` without a path parameter."""
    paths = [
        route.path
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute) and "GET" in route.methods and "{" not in route.path
    ]
    return list(dict.fromkeys(paths))


def public_paths() -> list[str]:
    return ["/", *get_paths(PAGE_ROUTERS)]


def signed_in_paths() -> list[str]:
    """The dashboard's pages behind the sign-in (all of them, for a platform admin)."""
    signed_out = {path.split("?")[0] for path in SIGNED_OUT}
    return [p for p in get_paths(AREA_ROUTERS) if p not in signed_out | NOT_A_PAGE]


def form_pages(visitor: Visitor) -> Iterator[str]:
    """Fills the public forms as a person does and yields the name of each page that answers one."""
    page = visitor.page
    visitor.open("/catalogue/consulting")
    offer = page.locator("details.buy").first
    offer.locator("summary").click()
    offer.get_by_label("E-mail address for the confirmation").fill("buyer@example.com")
    offer.get_by_role("button", name="Continue to checkout").click()
    page.wait_for_url("**/checkout/ord_*")
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    yield "order page"

    visitor.open("/newsletter")
    page.locator("main").get_by_label("E-mail address").fill("reader@example.com")
    page.locator("main").get_by_role("button", name="Subscribe").click()
    expect(page.locator("#newsletter-result")).to_contain_text("reader@example.com")
    yield "newsletter signed up"

    # The ask form as it is sent without scripts (``submit()`` skips ask.js): the answer is a page.
    visitor.open("/")
    page.get_by_label("Your question").fill("How do I rotate my API key?")
    with page.expect_navigation():
        page.evaluate("document.getElementById('ask-form').submit()")
    expect(page.locator("main")).to_contain_text("We recommend rotating every key")
    yield "ask answer page"

    visitor.announce("/checkout/ord_missing", 404)
    visitor.open("/checkout/ord_missing", status=404)
    yield "error page"


def dashboard_pages(visitor: Visitor) -> Iterator[str]:
    """Every dashboard page: those before signing in, then (signed in with the password form as the
    bootstrap platform admin) every other one, and the playground's answer and trace."""
    page = visitor.page
    for path in SIGNED_OUT:
        visitor.open(path)
        yield path
    visitor.open("/app/login")
    page.get_by_test_id("login-email").fill(ADMIN_EMAIL)
    page.get_by_test_id("login-password").fill(ADMIN_PASSWORD)
    page.get_by_test_id("login-submit").click()
    page.wait_for_url("**/app")
    for path in signed_in_paths():
        visitor.open(path)
        yield path

    visitor.open("/app/playground")
    page.get_by_test_id("playground-message").fill("Hello from the page check")
    page.get_by_test_id("playground-send").click()
    expect(page.get_by_test_id("playground-answer")).not_to_be_empty()
    expect(page.get_by_test_id("trace-steps").locator("li").first).to_be_visible()  # streamed in
    yield "playground answer"
    page.get_by_test_id("trace-link").click()
    expect(page.get_by_test_id("trace-facts")).to_be_visible()
    yield "playground trace"
