"""Keys in full in the dashboard: create with scopes, models, a budget in money, an expiry day and
metadata (stored as the API stores them); a refused form comes back with the message next to its
field and the input kept; the key page with its spend, requests and settings; rotation after a
confirmation, with an overlap in which the old key keeps working."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import select

from agent_server.admin.tables import AuditRecord
from agent_server.foundation.settings import Settings
from agent_server.gateway.key_settings import KeyOptions
from agent_server.gateway.repository import find_key, list_keys
from tests.gateway.conftest import MODEL
from tests.pages.dashboard import Dash, Person, dashboard_world, post_form
from tests.pages.test_dashboard_keys import chat, key_id_of, secret_of

HOUR = 3600


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def day(dash: Dash, days: int) -> str:
    return (datetime.fromtimestamp(dash.clock.now(), UTC) + timedelta(days=days)).date().isoformat()


def field_value(html: str, field_id: str) -> str:
    match = re.search(rf'id="{field_id}"[^>]*value="([^"]*)"', html)
    assert match, f"no value of {field_id}"
    return match.group(1)


async def create(dash: Dash, browser: httpx.AsyncClient, **fields: object) -> httpx.Response:
    return await post_form(browser, "/app/keys", "/app/keys", **{"name": "k", "scopes": ["chat"], **fields})


async def test_the_create_form_offers_chat_and_models_ticked_and_the_plans_models(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    form = (await browser.get("/app/keys")).text
    for scope in ("chat", "models"):
        assert re.search(rf'value="{scope}" checked data-test="key-scope-{scope}"', form), scope
    offered = re.findall(r'data-test="key-model-([^"]+)"', form)
    assert offered == ["agentgate-mock-small", "gpt-4o-mini"]  # the Starter plan's grant, from the table
    assert "0 active keys of the 10 the Starter plan allows" in form


async def test_a_key_created_with_every_setting_is_stored_as_the_api_stores_it(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    expires = day(dash, 30)
    created = await create(
        dash,
        browser,
        name="  backend  ",
        scopes=["chat", "models"],
        models=[MODEL, "gpt-4o-mini"],
        budget_money="12.50",
        budget_tokens="2 000 000",
        budget_period="day",
        expires_on=expires,
        metadata="team = search\n\nticket=4711\n",
    )
    assert created.status_code == 200, created.text[:2000]
    record = await find_key(dash.app.state.gateway.db, person.tenant_id, key_id_of(created.text))
    assert record.name == "backend" and record.scopes == ["chat", "models"]
    assert record.models == [MODEL, "gpt-4o-mini"]
    assert (record.budget_period, record.budget_spend, record.budget_tokens) == ("day", 1250, 2_000_000)
    assert record.expires_at is not None and record.expires_at.date().isoformat() == expires
    assert record.key_metadata == {"team": "search", "ticket": "4711"}
    key = secret_of(created.text)
    assert await chat(dash, key) == 200


async def test_the_created_page_shows_the_first_request_with_the_key_filled_in(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    created = await create(dash, browser, models=["gpt-4o-mini"])
    key = secret_of(created.text)
    base = f"{dash.settings.public_base_url}/v1"
    assert f'data-test="first-request-base-url">{base}<' in created.text
    for snippet in ("curl", "python-openai", "js-openai", "python-anthropic"):
        code = re.search(rf'data-test="snippet-{snippet}">(.*?)</textarea>', created.text, re.S)
        assert code and key in code.group(1) and "gpt-4o-mini" in code.group(1), snippet
        assert f'data-copy="snippet-{snippet}"' in created.text
    assert "/v1/chat/completions" in created.text and "Anthropic(base_url=" in created.text


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": "   "}, "name", "must not be blank"),
        ({"name": "x" * 201}, "name", "at most 200 characters"),
        ({"scopes": []}, "scopes", "scopes must be a non-empty list"),
        ({"budget_money": "0.001"}, "budget_money", "steps of 0.01 EUR"),
        ({"budget_money": "ten"}, "budget_money", "such as 25 or 12.50"),
        ({"budget_money": "-5"}, "budget_money", "such as 25 or 12.50"),
        ({"budget_tokens": "1.5"}, "budget_tokens", "whole number"),
        ({"budget_money": "5", "budget_period": "week"}, "budget_period", "per month, per day or in total"),
        ({"expires_on": "2020-01-01"}, "expires_on", "choose a day after today"),
        ({"expires_on": "soon"}, "expires_on", "choose a day (YYYY-MM-DD)"),
        ({"metadata": "team search"}, "metadata", "line 1: write key=value"),
        ({"metadata": "a=1\na=2"}, "metadata", "appears twice"),
        ({"metadata": "\n".join(f"k{i}=v" for i in range(17))}, "metadata", "at most 16 keys"),
        ({"models": ["gpt 4o"]}, "models", "white space"),
    ],
)
async def test_a_refused_form_shows_the_message_at_its_field_and_keeps_the_input(
    dash: Dash, fields: dict[str, object], field: str, message: str
) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    typed = {"name": "kept name", "metadata": "owner=ada", "budget_tokens": "777", **fields}
    refused = await create(dash, browser, **typed)
    assert refused.status_code == 400, refused.text[:500]
    error = re.search(rf'data-test="field-error-{field}">([^<]*)<', refused.text)
    assert error and message in error.group(1), (field, error and error.group(1))
    assert 'data-test="form-error"' in refused.text
    if field not in ("scopes", "models"):  # a single field is marked; a group names its message
        assert re.search(
            rf'id="([\w-]+)" name="{field}"[^>]*aria-invalid="true" aria-describedby="\1-error', refused.text
        )
    if "name" not in fields:
        assert field_value(refused.text, "key-name") == "kept name"
    if "metadata" not in fields:
        assert ">owner=ada</textarea>" in refused.text
    if "budget_tokens" not in fields:
        assert field_value(refused.text, "key-budget-tokens") == "777"
    assert (
        f'id="key-{field.replace("_", "-")}-error"' in refused.text
    )  # the message's id: the field's, -error
    assert await list_keys(dash.app.state.gateway.db, person.tenant_id) == []  # nothing half-written


async def test_the_plans_key_limit_is_a_message_on_the_form(dash: Dash) -> None:
    person = await dash.person(plan="starter")
    browser = await dash.signed_in(person)
    for number in range(10):
        assert (await create(dash, browser, name=f"k{number}")).status_code == 200
    refused = await create(dash, browser, name="eleventh", metadata="team=ops")
    assert refused.status_code == 403
    assert "The Starter plan allows 10 active API keys" in refused.text
    assert "move to the Professional plan (100 keys)" in refused.text
    assert field_value(refused.text, "key-name") == "eleventh" and ">team=ops</textarea>" in refused.text
    assert "10 active keys of the 10 the Starter plan allows" in refused.text


async def test_the_key_page_shows_requests_spend_against_the_budget_and_the_latest_requests(
    dash: Dash,
) -> None:
    browser = await dash.signed_in(await dash.person())
    created = await create(dash, browser, budget_tokens="1000", budget_period="month")
    key, key_id = secret_of(created.text), key_id_of(created.text)
    empty = (await browser.get(f"/app/keys/{key_id}")).text
    assert 'data-test="key-recent-empty"' in empty and re.search(r'key-month-requests">0<', empty)
    for _ in range(3):
        assert await chat(dash, key) == 200
    shown = (await browser.get(f"/app/keys/{key_id}")).text
    assert re.search(r'data-test="key-month-requests">3<', shown)
    spent = int(re.search(r'data-test="key-month-tokens">(\d+)<', shown).group(1))  # type: ignore[union-attr]
    assert spent > 0 and f"Spent {spent} tokens of 1,000 tokens" in shown
    assert re.search(rf'<meter id="budget-tokens"[^>]*max="1000" value="{spent}"', shown)
    assert shown.count(f"<code>{MODEL}</code>") >= 3  # the latest requests, one row each
    assert "key-logs" not in shown  # no request log installed here: no link to one


async def test_the_key_page_changes_only_what_was_changed(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    key_id = key_id_of((await create(dash, browser, name="svc")).text)
    gateway = dash.app.state.gateway
    # Set through the API's service: a number in the metadata and an expiry at a time of day.
    expires = datetime.fromtimestamp(dash.clock.now(), UTC).replace(microsecond=0) + timedelta(
        days=3, hours=5
    )
    options = KeyOptions(metadata={"ticket": 4711, "team": "ads"}, expires_at=expires)
    await gateway.key_admin.update(person.tenant_id, key_id, options=options)
    page = (await browser.get(f"/app/keys/{key_id}")).text
    assert field_value(page, "key-expires-on") == expires.date().isoformat()
    assert ">ticket=4711\nteam=ads</textarea>" in page
    saved = await post_form(
        browser,
        f"/app/keys/{key_id}",
        f"/app/keys/{key_id}",
        name="svc renamed",
        scopes=["chat"],
        expires_on=expires.date().isoformat(),
        metadata="ticket=4711\nteam=ads",
        budget_period="month",
    )
    assert saved.status_code == 303 and saved.headers["location"] == f"/app/keys/{key_id}?saved=1"
    record = await find_key(gateway.db, person.tenant_id, key_id)
    assert record.name == "svc renamed"
    assert record.key_metadata == {"ticket": 4711, "team": "ads"}  # left as shown: unchanged
    assert record.expires_at is not None and record.expires_at.replace(tzinfo=UTC) == expires
    changed = await post_form(
        browser,
        f"/app/keys/{key_id}",
        f"/app/keys/{key_id}",
        name="svc renamed",
        scopes=["chat", "models"],
        models=[MODEL],
        budget_money="5",
        budget_period="month",
        expires_on="",
        metadata="team=ads",
    )
    assert changed.status_code == 303
    record = await find_key(gateway.db, person.tenant_id, key_id)
    assert record.scopes == ["chat", "models"] and record.models == [MODEL]
    assert (record.budget_period, record.budget_spend, record.expires_at) == ("month", 500, None)
    assert record.key_metadata == {"team": "ads"}
    assert "The key&#39;s settings are saved." in (await browser.get(saved.headers["location"])).text
    refused = await post_form(
        browser, f"/app/keys/{key_id}", f"/app/keys/{key_id}", name="svc renamed", scopes=["chat"],
        budget_money="5.555", metadata="team=ads",
    )  # fmt: skip
    assert refused.status_code == 400 and 'data-test="field-error-budget_money"' in refused.text
    assert field_value(refused.text, "key-budget-money") == "5.555"
    assert (await find_key(gateway.db, person.tenant_id, key_id)).budget_spend == 500
    async with dash.app.state.services.db.session() as session:
        query = select(AuditRecord).where(AuditRecord.action == "api_key.update").order_by(AuditRecord.id)
        entries = [(r.outcome, r.details.get("fields")) for r in (await session.execute(query)).scalars()]
    assert entries[:2] == [("ok", ["name"]), ("ok", ["budget", "expires_at", "metadata", "models", "scopes"])]
    assert entries[2][0] == "failed"


async def rotate_with(dash: Dash, browser: httpx.AsyncClient, key_id: str, overlap: int) -> httpx.Response:
    return await post_form(
        browser, f"/app/keys/{key_id}/rotate", f"/app/keys/{key_id}/rotate", overlap=overlap
    )


async def test_rotation_asks_first_and_an_overlap_keeps_the_old_key_working(dash: Dash) -> None:
    person: Person = await dash.person()
    browser = await dash.signed_in(person)
    created = await create(dash, browser, name="worker")
    old_key, old_id = secret_of(created.text), key_id_of(created.text)
    confirm = await browser.get(f"/app/keys/{old_id}/rotate")
    assert confirm.status_code == 200 and 'data-test="key-rotate-confirm"' in confirm.text
    assert re.search(r'value="0" checked data-test="overlap-0"', confirm.text)
    for seconds in (3600, 86_400, 604_800):
        assert f'data-test="overlap-{seconds}"' in confirm.text
    assert await chat(dash, old_key) == 200  # looking at the confirmation changes nothing
    rotated = await rotate_with(dash, browser, old_id, HOUR)
    assert rotated.status_code == 200 and rotated.headers["cache-control"] == "no-store"
    new_key = secret_of(rotated.text)
    assert "keeps working until" in rotated.text and new_key in rotated.text
    assert await chat(dash, old_key) == 200 and await chat(dash, new_key) == 200
    listed = (await browser.get("/app/keys")).text
    assert "key-retiring" in listed and "before its overlap ends" in listed
    old_page = (await browser.get(f"/app/keys/{old_id}")).text
    assert 'data-test="key-settings-fixed"' in old_page and "key-settings-form" not in old_page
    dash.clock.advance(HOUR)
    assert await chat(dash, old_key) == 401 and await chat(dash, new_key) == 200
    assert "key-replaced" in (await browser.get("/app/keys")).text
    async with dash.app.state.services.db.session() as session:
        rows = (
            await session.execute(select(AuditRecord).where(AuditRecord.action == "api_key.rotate"))
        ).scalars()
        entry = next(r for r in rows if r.tenant_id == person.tenant_id)
    assert entry.target == old_id and entry.details["overlap_seconds"] == HOUR


async def test_an_overlap_over_the_key_limit_is_a_message_on_the_confirmation(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    ids = [key_id_of((await create(dash, browser, name=f"k{n}")).text) for n in range(10)]
    refused = await rotate_with(dash, browser, ids[0], 86_400)
    assert refused.status_code == 403 and "The Starter plan allows 10 active API keys" in refused.text
    assert re.search(r'value="86400" checked data-test="overlap-86400"', refused.text)  # the choice kept
    at_once = await rotate_with(dash, browser, ids[0], 0)
    assert at_once.status_code == 200 and "stopped working just now" in at_once.text


async def test_an_expired_key_is_marked_and_a_later_expiry_brings_it_back(dash: Dash) -> None:
    person = await dash.person()
    browser = await dash.signed_in(person)
    created = await create(dash, browser, name="temp", expires_on=day(dash, 1))
    key, key_id = secret_of(created.text), key_id_of(created.text)
    dash.clock.advance(2 * 86_400)
    assert await chat(dash, key) == 401
    browser = await dash.signed_in(person)  # the session of two days ago has ended
    row = re.search(rf'data-key-id="{key_id}">(.*?)</tr>', (await browser.get("/app/keys")).text, re.S)
    assert row and "key-expired" in row.group(1) and "key-rotate" not in row.group(1)
    assert "cannot be rotated (expired)" in (await browser.get(f"/app/keys/{key_id}/rotate")).text
    page = (await browser.get(f"/app/keys/{key_id}")).text
    assert 'data-test="key-settings-form"' in page
    saved = await post_form(
        browser, f"/app/keys/{key_id}", f"/app/keys/{key_id}", name="temp", scopes=["chat"],
        expires_on=day(dash, 30), budget_period="month",
    )  # fmt: skip
    assert saved.status_code == 303 and await chat(dash, key) == 200
