"""Journey: an app connects through OAuth. A person registers; an app registers itself (RFC 7591) and
sends the person to the authorization endpoint; the consent page names the app, where it sends them
back and what it may do; they allow it; the app's token works on /v1; on "Connected apps" they
disconnect it and the token stops at once. At 1280 and 375 px, every page checked with axe-core."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.accounts.smtp import SmtpServer
from tests.browser.conftest import OpenVisitor
from tests.browser.dashboard import go_to, register
from tests.browser.live import ThreadedServer

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1280, 375])
def test_allow_an_app_then_disconnect_it(
    open_visitor: OpenVisitor, smtp: SmtpServer, server: ThreadedServer, width: int
) -> None:
    visitor = open_visitor()
    page = visitor.page
    page.set_viewport_size({"width": width, "height": 900 if width > 800 else 812})
    register(visitor, smtp, "ada@consent.example", "Consent Works")

    back = f"{server.url}/"  # a page of the service itself, so the browser stays on its origin
    app = {"client_name": "Browser agent", "redirect_uris": [back], "token_endpoint_auth_method": "none",
           "grant_types": ["authorization_code", "refresh_token"], "scope": "chat models"}  # fmt: skip
    client_id = httpx.post(f"{server.url}/oauth/register", json=app).json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": back, "state": "s1",
             "code_challenge": challenge, "code_challenge_method": "S256", "resource": server.url}  # fmt: skip
    visitor.open(f"/oauth/authorize?{urlencode(query)}")
    expect(page.get_by_test_id("consent-title")).to_have_text("Connect Browser agent?")
    expect(page.get_by_test_id("consent-host")).to_have_text(urlsplit(server.url).netloc)
    expect(page.get_by_test_id("consent-scopes").locator("li")).to_have_count(2)
    visitor.check("the consent screen")
    page.get_by_test_id("consent-approve").click()
    page.wait_for_url(re.compile(r".*[?&]code="))
    code = parse_qs(urlsplit(page.url).query)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": back, "client_id": client_id,
            "code_verifier": verifier}  # fmt: skip
    token = httpx.post(f"{server.url}/oauth/token", data=form).json()["access_token"]
    bearer = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{server.url}/v1/models", headers=bearer).status_code == 200

    visitor.open("/app")
    go_to(page, "connected-apps")
    expect(page.get_by_test_id("connected-app")).to_have_count(1)
    visitor.check("connected apps")
    page.get_by_test_id(f"disconnect-{client_id}").click()
    expect(page.get_by_test_id("apps-notice")).to_be_visible()
    expect(page.get_by_test_id("no-connected-apps")).to_be_visible()
    visitor.check("connected apps after disconnecting")
    assert httpx.get(f"{server.url}/v1/models", headers=bearer).status_code == 401
