"""Webhooks in the dashboard: the secret shown once, deliveries with their attempts, redelivery of
the same event to a real receiver on loopback."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_server.admin.wiring import admin_services
from agent_server.foundation.settings import Settings
from agent_server.webhooks.signing import platform_signature
from tests.admin.conftest import Receiver, _handler
from tests.pages.dashboard import Dash, dashboard_world, post_form


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


@pytest.fixture
def hooks() -> Iterator[Receiver]:
    """A webhook receiver on loopback (the admin tests' handler): 200 unless told otherwise."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    receiver = Receiver(server)
    server.RequestHandlerClass = _handler(receiver)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield receiver
    server.shutdown()
    server.server_close()


async def deliver_due(dash: Dash) -> None:
    await dash.app.state.services.events.drain()  # events reach the webhook queue
    await admin_services(dash.app.state.services).worker.tick()  # the delivery worker's own step


async def test_a_webhook_is_registered_its_deliveries_shown_and_one_sent_again(
    dash: Dash, hooks: Receiver
) -> None:
    browser = await dash.signed_in(await dash.person())
    created = await post_form(browser, "/app/webhooks", "/app/webhooks", url=hooks.url, events=["key.rotated"],
                              description="ops")  # fmt: skip
    assert created.status_code == 200 and created.headers["cache-control"] == "no-store"
    secret = re.search(r'readonly value="([^"]+)"', created.text).group(1)  # type: ignore[union-attr]
    hook_id = re.search(r"<code>(wh_\w+)</code>", created.text).group(1)  # type: ignore[union-attr]
    listed = await browser.get("/app/webhooks")
    assert hook_id in listed.text and secret not in listed.text

    made = await post_form(browser, "/app/keys", "/app/keys", name="svc", scopes=["chat"])
    key_id = re.search(r"<code>(key_\w+)</code>", made.text).group(1)  # type: ignore[union-attr]
    await post_form(browser, "/app/keys", f"/app/keys/{key_id}/rotate")  # emits key.rotated
    await deliver_due(dash)
    assert len(hooks.requests) == 1
    first = hooks.requests[0]
    assert first.headers["x-platform-signature"] == platform_signature(secret, first.body)

    page = await browser.get(f"/app/webhooks/{hook_id}")
    assert page.status_code == 200 and page.text.count('data-test="delivery-row"') == 1
    assert 'data-test="delivery-status">delivered<' in page.text and "key.rotated" in page.text
    delivery_id = re.search(r'data-delivery-id="(dlv_\w+)"', page.text).group(1)  # type: ignore[union-attr]
    again = await post_form(browser, f"/app/webhooks/{hook_id}",
                            f"/app/webhooks/{hook_id}/deliveries/{delivery_id}/redeliver")  # fmt: skip
    assert again.status_code == 303
    shown = await browser.get(again.headers["location"])
    assert shown.text.count('data-test="delivery-row"') == 2 and "is queued again" in shown.text
    await deliver_due(dash)
    assert len(hooks.requests) == 2
    assert hooks.requests[1].body == first.body and hooks.requests[1].json()["id"] == first.json()["id"]
    audit = (await browser.get("/app/audit", params={"action": "webhook.redeliver"})).text
    assert audit.count('data-test="audit-row"') == 1


async def test_a_plan_without_webhooks_and_another_tenants_webhook_are_refused(
    dash: Dash, hooks: Receiver
) -> None:
    starter = await dash.signed_in(await dash.person(plan="starter"))
    refused = await post_form(
        starter, "/app/webhooks", "/app/webhooks", url=hooks.url, events=["key.rotated"]
    )
    assert refused.status_code == 403 and "plan_limit_exceeded" in refused.text
    assert f'value="{hooks.url}"' in refused.text  # the form keeps what was typed
    owner = await dash.signed_in(await dash.person())
    created = await post_form(
        owner, "/app/webhooks", "/app/webhooks", url=hooks.url, events=["audit.flagged"]
    )
    hook_id = re.search(r"<code>(wh_\w+)</code>", created.text).group(1)  # type: ignore[union-attr]
    stranger = await dash.signed_in(await dash.person())
    assert (await stranger.get(f"/app/webhooks/{hook_id}")).status_code == 404
    foreign = await post_form(
        stranger, "/app/webhooks", f"/app/webhooks/{hook_id}/deliveries/dlv_x/redeliver"
    )
    assert foreign.status_code == 404


async def test_the_json_api_redelivers_too(dash: Dash, hooks: Receiver) -> None:
    browser = await dash.signed_in(await dash.person())
    token = browser.cookies["agentgate_session"]
    auth = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    hook = (
        await browser.post(
            "/admin/webhooks", json={"url": hooks.url, "events": ["key.rotated"]}, headers=auth
        )
    ).json()
    made = (
        await browser.post("/admin/api-keys", json={"name": "k", "scopes": ["chat"]}, headers=auth)
    ).json()
    await browser.post("/admin/keys/rotate", json={"key_id": made["id"]}, headers=auth)
    await deliver_due(dash)
    listed = (await browser.get(f"/admin/webhooks/{hook['id']}/deliveries", headers=auth)).json()["data"]
    answer = await browser.post(
        f"/admin/webhooks/{hook['id']}/deliveries/{listed[0]['id']}/redeliver", headers=auth
    )
    assert answer.status_code == 202 and answer.json()["status"] == "pending"
    assert answer.json()["event_id"] == listed[0]["event_id"] and answer.json()["id"] != listed[0]["id"]
    missing = await browser.post(f"/admin/webhooks/{hook['id']}/deliveries/dlv_none/redeliver", headers=auth)
    assert missing.status_code == 404
