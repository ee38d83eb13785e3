"""The newsletter confirms by e-mail before subscribing (double opt-in): a new subscription is pending,
its link's page changes nothing until its button is pressed, and only then is the address on the list."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from sqlmodel import select

from agent_server.foundation.settings import Settings
from agent_server.site.tables import SubscriptionRecord
from tests.pages.dashboard import Dash, dashboard_world
from tests.pages.outbox import letters


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def status_of(dash: Dash, email: str) -> list[str]:
    async with dash.app.state.services.db.session() as session:
        rows = await session.execute(select(SubscriptionRecord).where(SubscriptionRecord.email == email))
        return [row.status for row in rows.scalars()]


async def test_the_form_subscribes_only_after_the_mailed_link_is_confirmed(dash: Dash) -> None:
    visitor = dash.browser()
    signed_up = await visitor.post("/newsletter", data={"email": "Reader@Example.com", "list": "newsletter"})
    assert signed_up.status_code == 200 and "Check your mail." in signed_up.text
    assert await status_of(dash, "reader@example.com") == ["pending"]
    [letter] = await letters(dash, "reader@example.com")
    link = letter.link("/newsletter/confirm")
    assert "reader" not in letter.subject.lower() and "token=" in link

    target = urlsplit(link)
    shown = await visitor.get(f"{target.path}?{target.query}")  # what a mail scanner does too
    assert (
        'data-test="subscription-confirm-form"' in shown.text and shown.headers["cache-control"] == "no-store"
    )
    assert await status_of(dash, "reader@example.com") == ["pending"]
    token = re.search(r'name="token" value="([^"]+)"', shown.text).group(1)  # type: ignore[union-attr]
    confirmed = await visitor.post("/newsletter/confirm", data={"token": token})
    assert confirmed.status_code == 200 and "You are subscribed." in confirmed.text
    assert await status_of(dash, "reader@example.com") == ["active"]
    used = await visitor.get(f"{target.path}?{target.query}")
    assert 'data-test="subscription-used"' in used.text
    again = await visitor.post("/newsletter/confirm", data={"token": token})
    assert again.status_code == 400 and 'data-test="subscription-used"' in again.text

    repeat = await visitor.post("/newsletter", data={"email": "reader@example.com"})
    assert "You were already subscribed." in repeat.text
    assert len(await letters(dash, "reader@example.com")) == 1  # an active subscription gets no mail


async def test_the_json_route_is_pending_until_confirmed_and_resends_at_most_every_ten_minutes(
    dash: Dash,
) -> None:
    program = dash.browser()
    program.headers["accept"] = "application/json"
    first = await program.post("/api/subscribe.php", json={"email": "dev@example.com", "list": "waitlist"})
    assert first.status_code == 201 and first.json()["status"] == "pending"
    again = await program.post("/api/subscribe.php", json={"email": "dev@example.com", "list": "waitlist"})
    assert again.status_code == 200 and again.json() == first.json()
    assert len(await letters(dash, "dev@example.com")) == 1  # not a second mail a moment later
    dash.clock.advance(11 * 60)
    await program.post("/api/subscribe.php", json={"email": "dev@example.com", "list": "waitlist"})
    old, new = await letters(dash, "dev@example.com")
    stale = urlsplit(old.link("/newsletter/confirm")).query.removeprefix("token=")
    fresh = urlsplit(new.link("/newsletter/confirm")).query.removeprefix("token=")
    refused = await program.post("/api/subscribe/confirm", json={"token": stale})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "LINK_INVALID"
    confirmed = await program.post("/api/subscribe/confirm", json={"token": fresh})
    assert confirmed.status_code == 200 and confirmed.json() == {**first.json(), "status": "active"}
    dash.clock.advance(8 * 86_400)
    await program.post("/api/subscribe.php", json={"email": "late@example.com"})
    [late] = await letters(dash, "late@example.com")
    dash.clock.advance(8 * 86_400)
    expired = await program.post(
        "/api/subscribe/confirm", json={"token": urlsplit(late.link("/confirm")).query[6:]}
    )
    assert expired.status_code == 400 and expired.json()["error"]["code"] == "LINK_EXPIRED"
