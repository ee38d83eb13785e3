"""Registration and password links through the dashboard: the mail links open pages, and only the
page's button (a POST) uses a token up."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from agent_server.foundation.settings import Settings
from agent_server.mail.tables import OutboxMail
from tests.gateway.conftest import PASSWORD
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form

NEW_PASSWORD = "amber-orchard-violin-77"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def mails_to(dash: Dash, address: str) -> list[str]:
    box = dash.app.state.accounts.box
    async with dash.app.state.services.db.session() as session:
        rows = (await session.execute(select(OutboxMail).order_by(OutboxMail.created_at))).scalars().all()
    return [box.decrypt(row.body_encrypted) for row in rows if row.to_addr == address]


def link_in(text: str, path: str) -> str:
    match = re.search(rf"http://127\.0\.0\.1:8000{re.escape(path)}\S*", text)
    assert match, f"no link to {path} in {text!r}"
    return match.group(0)


async def register(dash: Dash, email: str, organisation: str) -> str:
    """Register with the form; the link of the verification mail."""
    browser = dash.browser("10.0.0.7")
    sent = await post_form(browser, "/app/register", "/app/register", email=email, organisation=organisation,
                           plan="starter", method="password", password=PASSWORD)  # fmt: skip
    assert sent.status_code == 200 and 'data-test="register-sent"' in sent.text, sent.text[:800]
    assert "no-store" in sent.headers["cache-control"]
    return link_in((await mails_to(dash, email))[-1], "/app/register/verify")


async def test_the_mail_link_opens_the_verify_page_and_its_button_creates_the_organisation(
    dash: Dash,
) -> None:
    link = await register(dash, "ada@analytical.example", "Analytical")
    token = parse_qs(urlsplit(link).query)["token"][0]
    browser = dash.browser()
    for _ in range(2):  # a mail scanner's fetch, then the person's: nothing is used up
        page = await browser.get(link)
        assert page.status_code == 200 and 'data-test="verify-submit"' in page.text
    state = await browser.get(
        "/register/verify", params={"token": token}, headers={"Accept": "application/json"}
    )
    assert state.json()["state"] == "valid"
    done = await browser.post("/app/register/verify", data={"csrf_token": csrf_of(page.text), "token": token})
    assert done.status_code == 303 and done.headers["location"] == "/app?welcome=1"
    assert done.headers["set-cookie"].startswith("agentgate_session=")
    home = await browser.get("/app?welcome=1")
    assert (
        home.status_code == 200 and "<h1>Analytical</h1>" in home.text and 'data-test="welcome"' in home.text
    )
    used = await browser.get(link)
    assert 'data-test="verify-used"' in used.text and "verify-submit" not in used.text
    again = await browser.post(
        "/app/register/verify", data={"csrf_token": csrf_of(home.text), "token": token}
    )
    assert again.status_code == 400 and "link_used" in again.text


async def test_a_taken_name_asks_for_another_and_the_link_still_works(dash: Dash) -> None:
    first = await register(dash, "bo@one.example", "Globex")
    second = await register(dash, "cy@two.example", "Globex")
    browser = dash.browser()
    page = await browser.get(first)
    token = parse_qs(urlsplit(first).query)["token"][0]
    assert (
        await browser.post("/app/register/verify", data={"csrf_token": csrf_of(page.text), "token": token})
    ).status_code == 303
    other = dash.browser("10.0.0.3")
    page = await other.get(second)
    token = parse_qs(urlsplit(second).query)["token"][0]
    taken = await other.post("/app/register/verify", data={"csrf_token": csrf_of(page.text), "token": token})
    assert taken.status_code == 409 and 'data-test="verify-organisation"' in taken.text
    renamed = await other.post("/app/register/verify", data={"csrf_token": csrf_of(taken.text), "token": token,
                                                              "organisation": "Globex Two"})  # fmt: skip
    assert renamed.status_code == 303 and "<h1>Globex Two</h1>" in (await other.get("/app")).text


async def test_a_passkey_registration_without_scripts_says_what_it_needs(dash: Dash) -> None:
    refused = await post_form(dash.browser(), "/app/register", "/app/register", email="dee@org.example",
                              organisation="Dee", plan="starter", method="passkey")  # fmt: skip
    assert refused.status_code == 400 and "needs JavaScript" in refused.text
    assert 'value="dee@org.example"' in refused.text and await mails_to(dash, "dee@org.example") == []


async def test_an_existing_address_gets_the_sign_in_and_reset_pages(dash: Dash) -> None:
    person = await dash.person()
    sent = await post_form(dash.browser(), "/app/register", "/app/register", email=person.email,
                           organisation="Again", plan="starter", password=PASSWORD)  # fmt: skip
    assert 'data-test="register-sent"' in sent.text  # the same answer as for a new address
    (mail,) = await mails_to(dash, person.email)
    assert "http://127.0.0.1:8000/app/login" in mail and "http://127.0.0.1:8000/app/password/forgot" in mail


async def test_the_reset_link_opens_a_page_whose_form_sets_the_password(dash: Dash) -> None:
    person = await dash.person()
    old = await dash.signed_in(person, "10.0.0.4")
    browser = dash.browser()
    asked = await post_form(browser, "/app/password/forgot", "/app/password/forgot", email=person.email)
    assert asked.status_code == 200 and 'data-test="forgot-sent"' in asked.text
    link = link_in((await mails_to(dash, person.email))[-1], "/app/password/reset")
    page = await browser.get(link)
    assert page.status_code == 200 and 'data-test="reset-password"' in page.text
    token = parse_qs(urlsplit(link).query)["token"][0]
    weak = await browser.post("/app/password/reset", data={"csrf_token": csrf_of(page.text), "token": token,
                                                           "password": "too-short"})  # fmt: skip
    assert (
        weak.status_code == 400
        and "password_too_short" in weak.text
        and 'data-test="reset-password"' in weak.text
    )
    done = await browser.post("/app/password/reset", data={"csrf_token": csrf_of(weak.text), "token": token,
                                                           "password": NEW_PASSWORD})  # fmt: skip
    assert done.status_code == 303 and done.headers["location"] == "/app"
    assert (await browser.get("/app")).status_code == 200
    assert (await old.get("/app")).status_code == 303  # the other sessions ended
    assert 'data-test="reset-used"' in (await browser.get(link)).text
    fresh = dash.browser("10.0.0.5")
    signed = await post_form(fresh, "/app/login", "/app/login", email=person.email, password=NEW_PASSWORD)
    assert signed.status_code == 303
