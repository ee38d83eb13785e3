"""Every server-side form error comes back on the page that holds the form: a message in plain words
next to its field, the summary at the top, the values typed kept (never a password)."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.foundation.settings import Settings
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form

RAW = ("value is not a valid email address", "Invalid body field", "String should have", "Input should be")


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def field_error(page: str, name: str) -> str:
    match = re.search(
        rf'<p class="field-error" id="([\w-]+)-error" data-test="field-error-{name}">([^<]+)</p>', page
    )
    assert match, f"no message next to the field {name}"
    field_id, message = match.group(1), html.unescape(match.group(2))
    # the field says where its message is, for screen readers
    assert re.search(rf'id="{field_id}"[^>]*aria-invalid="true" aria-describedby="{field_id}-error', page), (
        name
    )
    return message


def refused(answer: httpx.Response, status: int = 400) -> str:
    assert answer.status_code == status, answer.text[:400]
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    page = answer.text
    assert 'data-test="form-error"' in page and not any(words in page for words in RAW), page[:2000]
    return page


async def test_registration_keeps_the_input_and_says_what_is_wrong(dash: Dash) -> None:
    browser = dash.browser()
    page = refused(await post_form(browser, "/app/register", "/app/register", email="ada.example",
                                   organisation="Analytical Engines", plan="starter", password="a secret"))  # fmt: skip
    assert field_error(page, "email") == "Enter an e-mail address like name@example.com."
    assert 'value="ada.example"' in page and 'value="Analytical Engines"' in page
    assert 'data-test="register-form"' in page and "a secret" not in page  # the page, without the password
    weak = refused(await post_form(browser, "/app/register", "/app/register", email="ada@analytical.example",
                                   organisation="Analytical Engines", plan="starter", password="password1234"))  # fmt: skip
    assert "breach" in field_error(weak, "password") and 'value="ada@analytical.example"' in weak
    assert 'href="#register-password"' in weak  # the summary leads to the field


async def test_sign_in_forgot_and_reset_keep_the_address(dash: Dash) -> None:
    browser = dash.browser()
    wrong = await post_form(browser, "/app/login", "/app/login", email="nobody@example.com", password="nope")
    page = refused(wrong, 401)
    assert 'value="nobody@example.com"' in page and 'data-test="login-form"' in page
    empty = refused(
        await post_form(browser, "/app/login", "/app/login", email="nobody@example.com", password="")
    )
    assert field_error(empty, "password") == "Fill this in."
    forgot = refused(await post_form(browser, "/app/password/forgot", "/app/password/forgot", email="ada@"))
    assert field_error(forgot, "email").startswith("Enter an e-mail address") and 'value="ada@"' in forgot
    token = csrf_of((await browser.get("/app/login")).text)  # one browser, one token for its forms
    reset = refused(
        await browser.post(
            "/app/password/reset", data={"csrf_token": token, "token": "nope", "password": "short"}
        )
    )
    assert 'data-test="reset-invalid"' in reset


async def test_keys_webhooks_and_playground_keep_their_input(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    keys = refused(await post_form(browser, "/app/keys", "/app/keys", name="", scopes=["chat", "models"]))
    assert field_error(keys, "name") == "The key's name must not be blank."
    assert re.search(r'value="models" checked', keys) and not re.search(r'value="embeddings" checked', keys)
    hook = refused(await post_form(browser, "/app/webhooks", "/app/webhooks", url="ftp:x",
                                   events=["key.rotated"], description="ops"))  # fmt: skip
    assert field_error(hook, "url") == "Use at least 8 characters."
    assert 'value="ftp:x"' in hook and 'value="ops"' in hook
    chat = refused(await post_form(browser, "/app/playground", "/app/playground", model="agentgate-mock-small",
                                   message="Hello there", max_tokens="99999"))  # fmt: skip
    assert field_error(chat, "max_tokens") == "Enter 4096 or less."
    assert "Hello there</textarea>" in chat and 'value="99999"' in chat


async def test_the_public_forms_keep_their_input(dash: Dash) -> None:
    browser = dash.browser()
    letter = refused(
        await browser.post("/newsletter", data={"email": "reader", "name": "Ann", "list": "waitlist"})
    )
    assert field_error(letter, "email").startswith("Enter an e-mail address") and 'value="Ann"' in letter
    assert re.search(r'value="waitlist" checked', letter)
    order = refused(await browser.post("/checkout", data={"item_id": "agent-architecture-review",
                                                          "quantity": "1", "email": "buyer", "name": "Acme"}))  # fmt: skip
    assert field_error(order, "email").startswith("Enter an e-mail address")
    assert '<details class="buy" open>' in order and 'value="Acme"' in order  # its item's form, open
    call = refused(await browser.post("/catalogue/discovery-call", data={"name": "Ann", "email": "ann@example.com",
                                                                        "topic": "Something we do not offer"}))  # fmt: skip
    assert field_error(call, "topic") == "Choose one of the topics offered, or 'other'."
    assert 'value="Ann"' in call and 'value="ann@example.com"' in call


async def test_a_refused_form_from_another_page_is_not_shown_again(dash: Dash) -> None:
    """The dashboard's CSRF token and the public forms' origin are checked before anything typed is
    shown again: a form of another site gets the error page, its values nowhere."""
    browser = await dash.signed_in(await dash.person())
    forged = await browser.post("/app/keys", data={"csrf_token": "0" * 64, "name": "", "scopes": "chat"})
    assert forged.status_code == 403 and 'data-test="error-page"' in forged.text
    elsewhere = await browser.post("/newsletter", data={"email": "victim", "name": "Injected"},
                                   headers={"Origin": "https://evil.example"})  # fmt: skip
    assert elsewhere.status_code == 403 and "Injected" not in elsewhere.text
    assert "/docs/errors#cross_site_form" in elsewhere.text
    good = await browser.post(
        "/newsletter", data={"email": "x@example.com"}, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert good.status_code == 403


async def test_programs_get_the_envelope(dash: Dash) -> None:
    program = dash.browser()
    program.headers["accept"] = "application/json"
    answer = await program.post("/newsletter", data={"email": "reader"})
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "email"
    page = await dash.browser().get("/app/register")
    assert 'data-test="form-error"' not in page.text  # nothing to say before the form is sent
    assert csrf_of(page.text)
