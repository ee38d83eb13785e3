"""Every dashboard page, signed in and out: the security headers, no inline script or style, every
asset and module served, nothing from another host, and the basics of an accessible document."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from itertools import pairwise
from urllib.parse import urlsplit

import httpx
import pytest

from agent_server.foundation.settings import Settings
from http_facade.pages.security import CONTENT_SECURITY_POLICY
from tests.gateway.conftest import PASSWORD
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form
from tests.pages.html import Page, parse
from tests.pages.test_pages import SERVICE_HOST, inline_problems

# The sign-in page points to itself at localhost, where passkeys work (browsers refuse them on an IP).
SAME_SERVICE_AT_LOCALHOST = SERVICE_HOST.replace("127.0.0.1", "localhost")

MODEL = "agentgate-mock-small"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def rendered(dash: Dash) -> AsyncIterator[tuple[str, httpx.Response]]:
    """Every page a person can see, with the objects the pages with an id need."""
    anonymous = dash.browser("10.0.0.9")
    for path in ("/app/login", "/app/register", "/app/password/forgot", "/app/register/verify?token=nope",
                 "/app/password/reset?token=nope", "/app/login?signed_out=1"):  # fmt: skip
        yield path, await anonymous.get(path)
    yield "register sent", await post_form(anonymous, "/app/register", "/app/register", email="new@org.example",
                                           organisation="New Org", plan="starter", password=PASSWORD)  # fmt: skip
    yield "register refused", await post_form(anonymous, "/app/register", "/app/register",
                                              email="weak@org.example", organisation="Weak Org", plan="starter",
                                              password="password1234")  # fmt: skip
    yield "forgot sent", await post_form(anonymous, "/app/password/forgot", "/app/password/forgot",
                                         email="new@org.example")  # fmt: skip

    person = await dash.person(plan="enterprise", permissions=("platform:admin", "tenant:admin"))
    browser = await dash.signed_in(person)
    for path in ("/app", "/app?welcome=1", "/app/keys", "/app/usage", "/app/webhooks", "/app/playground",
                 "/app/routing", "/app/audit", "/app/passkeys", "/app/sso", "/app/billing", "/app/tenants"):  # fmt: skip
        yield path, await browser.get(path)
    created = await post_form(browser, "/app/keys", "/app/keys", name="ci", scopes=["chat", "models"])
    yield "key created", created
    key_id = re.search(r"<code>(key_\w+)</code>", created.text).group(1)  # type: ignore[union-attr]
    yield "revoke page", await browser.get(f"/app/keys/{key_id}/revoke")
    yield "key page", await browser.get(f"/app/keys/{key_id}")
    yield "rotate page", await browser.get(f"/app/keys/{key_id}/rotate")
    yield "key rotated", await post_form(browser, "/app/keys", f"/app/keys/{key_id}/rotate")
    hook = await post_form(
        browser, "/app/webhooks", "/app/webhooks", url="http://127.0.0.1:9/h", events=["key.rotated"]
    )
    yield "webhook created", hook
    hook_id = re.search(r"<code>(wh_\w+)</code>", hook.text).group(1)  # type: ignore[union-attr]
    yield "deliveries", await browser.get(f"/app/webhooks/{hook_id}")
    chat = await post_form(browser, "/app/playground", "/app/playground", model=MODEL, message="Hello")
    yield "playground answer", chat
    trace_id = re.search(r"/app/playground/trace/(\w+)\"", chat.text).group(1)  # type: ignore[union-attr]
    yield "trace page", await browser.get(f"/app/playground/trace/{trace_id}")
    yield "error page", await browser.get("/app/keys/key_none/revoke")


def structure_problems(page: Page) -> list[str]:
    problems = []
    if page.all("html")[0].attrs.get("lang") != "en":
        problems.append("no lang")
    if len(page.all("main")) != 1 or "main" not in page.ids() or len(page.all("h1")) != 1:
        problems.append("one main landmark and one h1")
    if page.all("a")[0].attrs["href"] != "#main":
        problems.append("the skip link is not first")
    ids = page.ids()
    problems += [f"duplicate id {i}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    levels = [int(e.tag[1]) for e in page.all("h1", "h2", "h3", "h4")]
    problems += [f"heading {a} -> {b}" for a, b in pairwise(levels) if b > a + 1]
    labelled = {e.attrs.get("for") for e in page.all("label")}
    for field in page.all("input", "select", "textarea"):
        if field.attrs.get("type") not in ("hidden", "submit") and field.attrs.get("id") not in labelled:
            problems.append(f"unlabelled {field.attrs}")
    for button in page.all("button"):
        if not (button.text.strip() or button.attrs.get("aria-label")):
            problems.append(f"a button without a name {button.attrs}")
    return problems


async def test_every_dashboard_page_is_safe_and_structured(dash: Dash) -> None:
    seen = 0
    async for name, response in rendered(dash):
        seen += 1
        expected = {"error page": 404, "register refused": 400}.get(name, 200)
        assert response.status_code == expected, (name, response.text[:500])
        assert response.headers["content-type"] == "text/html; charset=utf-8", name
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, name
        assert response.headers["cache-control"] == "no-store", name
        assert response.headers["x-frame-options"] == "DENY", name
        page = parse(response.text)
        assert inline_problems(page) == [], name
        assert structure_problems(page) == [], name
        for element in page.elements:
            for attribute in ("src", "href", "action"):
                url = urlsplit(element.attrs.get(attribute, ""))
                assert url.netloc in ("", SERVICE_HOST, SAME_SERVICE_AT_LOCALHOST), (name, element.attrs)
        for form in page.all("form"):
            if form.attrs.get("method") == "post":
                assert 'name="csrf_token"' in _form_html(response.text, form), (name, form.attrs)
    assert seen == 31


def _form_html(html: str, form: object) -> str:
    """The markup of the first form with this action (enough to see its hidden fields)."""
    action = form.attrs.get("action", "")  # type: ignore[attr-defined]
    start = html.index(f'action="{action}"')
    return html[start : html.index("</form>", start)]


async def test_every_asset_and_module_of_the_dashboard_is_served(dash: Dash) -> None:
    assets: set[str] = set()
    async for _, response in rendered(dash):
        page = parse(response.text)
        assets |= {e.attrs["src"] for e in page.all("script") if "src" in e.attrs}
        assets |= {e.attrs["href"] for e in page.all("link")}
    browser = dash.browser()
    modules: set[str] = set()
    for asset in sorted(assets):
        response = await browser.get(asset)
        assert response.status_code == 200, asset
        path = urlsplit(asset).path
        if path.endswith(".js"):
            assert response.headers["content-type"].startswith("text/javascript"), asset
            folder = path.rsplit("/", 1)[0]
            for imported in re.findall(r'from "(\.{1,2}/[\w./-]+)"', response.text):
                modules.add(str(_join(folder, imported)))
    assert {a.split("?")[0] for a in assets} >= {
        "/static/css/dashboard.css",
        "/static/js/dashboard/passkey-login.js",
        "/static/js/dashboard/copy.js",
        "/static/js/dashboard/trace-stream.js",
    }
    assert "/static/js/dashboard/webauthn.js" in modules and "/static/js/sse.js" in modules
    for module in modules:
        assert (await browser.get(module)).status_code == 200, module


def _join(folder: str, relative: str) -> str:
    parts = folder.split("/")
    for piece in relative.split("/"):
        if piece == "..":
            parts.pop()
        elif piece != ".":
            parts.append(piece)
    return "/".join(parts)


async def test_pages_with_forms_carry_this_sessions_token(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    page = await browser.get("/app/keys")
    tokens = set(re.findall(r'name="csrf_token" value="(\w+)"', page.text))
    assert tokens == {csrf_of(page.text)}  # one token for every form of the page
