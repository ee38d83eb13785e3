"""``/app/agent-commerce``: the platform administrator sees the agent platforms and their orders (what
the admin API lists), in the platform part of the navigation; anyone else gets 403."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.foundation.settings import Settings
from tests.commerce.conftest import Shop, payment
from tests.pages.dashboard import Dash, dashboard_world


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_the_page_lists_platforms_and_orders_for_platform_admins_only(dash: Dash) -> None:
    commerce = dash.app.state.commerce
    made = await commerce.platforms.create("Page assistant", "https://assistant.example/events")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as api:
        shop = Shop(dash.app, api, dash.clock, made.credential, made.platform.id, made.signing_secret)
        session = await shop.create()
        done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
        assert done.status_code == 200, done.text
    order_id = done.json()["order"]["id"]

    admin = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    listed = await admin.get("/app/agent-commerce")
    assert listed.status_code == 200
    assert 'href="/app/agent-commerce" data-test="nav-agent-commerce" aria-current="page"' in listed.text
    assert f'data-platform-id="{made.platform.id}"' in listed.text and "Page assistant" in listed.text
    assert f'data-order-id="{order_id}"' in listed.text and "690.00 EUR" in listed.text
    assert made.credential not in listed.text  # shown once, at creation
    tenant_admin = await dash.signed_in(await dash.person())
    assert (await tenant_admin.get("/app/agent-commerce")).status_code == 403
    assert 'data-test="nav-agent-commerce"' not in (await tenant_admin.get("/app")).text
