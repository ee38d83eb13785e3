"""Which organisation an access token is for: the one the consent page names, the person's own.

A person belongs to one organisation at a time (``users.tenant_id``; an invitation elsewhere is 409
``member_elsewhere`` until they leave), so the consent page has no choice to offer. What holds is
the binding: a token answers for the organisation it was consented for, and when its person leaves
and joins another, that token is refused (it never shows the new organisation's data); a new
consent, naming the new organisation, gives a token for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from tests.accounts.members import invitation_token
from tests.agent_auth.oauth_world import access_token, authorization, oauth_client, register
from tests.conftest import BASE_URL
from tests.gateway.conftest import PASSWORD, password_hash
from tests.mcp.support import rpc
from tests.pages.dashboard import Dash, Person, dashboard_world

USAGE = {"name": "get_usage_this_month", "arguments": {}}


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def organisation_of(person: Person) -> str:
    return person.email.split("@")[1].removesuffix(".example")  # Dash.person's naming


async def developer_in(dash: Dash, owner: Person, email: str) -> Person:
    now = dash.clock.now()
    user = repo.new_user(now, owner.tenant_id, email, await password_hash(), [], role="developer")
    await repo.add_user(dash.app.state.services.db, user)
    return Person(user.email, user.id, owner.tenant_id)


async def usage_plan(api: httpx.AsyncClient, token: str) -> httpx.Response:
    return await rpc(api, "tools/call", USAGE, Authorization=f"Bearer {token}")


async def login(api: httpx.AsyncClient, email: str) -> dict[str, str]:
    answer = await api.post("/admin/auth/login", json={"email": email, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


async def test_a_token_answers_for_the_organisation_consented_for_and_not_the_next_one(dash: Dash) -> None:
    owner_a, owner_b = await dash.person("starter"), await dash.person("professional")
    kim = await developer_in(dash, owner_a, "kim@people.example")
    token_a = await access_token(dash, "usage:read", person=kim)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as api:
        first = await usage_plan(api, token_a)
        assert first.json()["result"]["structuredContent"]["report"]["plan"]["id"] == "starter"

        # Kim leaves A, and joins B by an invitation of B's owner.
        assert (await api.delete("/admin/membership", headers=await login(api, kim.email))).status_code == 200
        invited = {"email": kim.email, "role": "developer"}
        made = await api.post("/admin/invitations", json=invited, headers=await login(api, owner_b.email))
        assert made.status_code == 201, made.text
        link = {"token": await invitation_token(dash.app, kim.email)}
        joined = await api.post("/admin/auth/invitation", json=link, headers=await login(api, kim.email))
        assert joined.status_code == 200 and joined.json()["tenant_id"] == owner_b.tenant_id

        # The token consented for A is refused once the lookups cached before the move have expired
        # (at most the key cache's TTL, as for any revocation): it never answers for B.
        dash.clock.advance(dash.settings.key_cache_ttl_seconds + 0.01)
        stale = await usage_plan(api, token_a)
        assert stale.status_code == 401 and "resource_metadata" in stale.headers["www-authenticate"]

        # Connecting again: the consent page names B, and the new token answers for B.
        kim_in_b = Person(kim.email, kim.user_id, owner_b.tenant_id)
        browser = await dash.signed_in(kim_in_b)
        client = oauth_client(
            dash, (await register(dash, scope="usage:read")).json()["client_id"], "usage:read"
        )
        shown = await browser.get((await browser.get(authorization(client).url)).headers["location"])
        assert organisation_of(owner_b) in shown.text and organisation_of(owner_a) not in shown.text
        token_b = await access_token(dash, "usage:read", person=kim_in_b)
        second = await usage_plan(api, token_b)
        assert second.json()["result"]["structuredContent"]["report"]["plan"]["id"] == "professional"
