"""Webhooks managed in the dashboard against a real receiver on loopback: edit, disable and enable, a
test event (signed, its answer on the page), a new signing secret (shown once), delete after a
confirmation; usage alerts; the plan gate on a plan without webhooks; every page safe and structured."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.webhooks.signing import platform_signature
from tests.admin.conftest import Receiver, _handler
from tests.pages.dashboard import Dash, dashboard_world, post_form
from tests.pages.manage import assert_page, disabled_fieldset, error_message, field, notice


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


@pytest.fixture
def hooks() -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    receiver = Receiver(server)
    server.RequestHandlerClass = _handler(receiver)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield receiver
    server.shutdown()
    server.server_close()


async def register(browser: httpx.AsyncClient, url: str) -> tuple[str, str]:
    created = await post_form(browser, "/app/webhooks", "/app/webhooks", url=url, events=["key.rotated"])
    assert_page(created)
    return re.search(r"<code>(wh_\w+)</code>", created.text).group(1), field(created.text, "secret-value")  # type: ignore[union-attr]


async def audit(browser: httpx.AsyncClient, action: str) -> int:
    return (await browser.get("/app/audit", params={"action": action})).text.count('data-test="audit-row"')


async def test_a_webhook_is_edited_tested_disabled_given_a_new_secret_and_deleted(
    dash: Dash, hooks: Receiver
) -> None:
    browser = await dash.signed_in(await dash.person())
    hook_id, secret = await register(browser, "http://127.0.0.1:9/wrong")
    page = f"/app/webhooks/{hook_id}"
    assert "webhook-edit-form" in assert_page(await browser.get(page))

    refused = await post_form(browser, page, f"{page}/edit", url="ftp://x.example/h", events=["key.rotated"])
    assert "scheme must be" in error_message(assert_page(refused, 400))
    assert field(refused.text, "edit-url") == "ftp://x.example/h"  # what was typed stays
    saved = await post_form(browser, page, f"{page}/edit", url=hooks.url, events=["key.rotated", "audit.flagged"],
                            description="ops")  # fmt: skip
    assert saved.status_code == 303
    shown = assert_page(await browser.get(saved.headers["location"]))
    assert notice(shown) == "The changes are saved." and field(shown, "edit-url") == hooks.url
    assert "key.rotated, audit.flagged" in shown or "audit.flagged, key.rotated" in shown

    tested = assert_page(await post_form(browser, page, f"{page}/test"))
    assert "Your receiver accepted the test event: HTTP 200" in tested
    [received] = hooks.requests
    assert received.json()["type"] == "webhook.test"
    assert received.headers["x-platform-signature"] == platform_signature(secret, received.body)

    off = await post_form(browser, page, f"{page}/state", enabled="false")
    off_page = assert_page(await browser.get(off.headers["location"]))
    assert 'data-test="webhook-state">disabled' in off_page and 'data-test="webhook-enable"' in off_page
    assert re.search(r'<button[^>]*disabled[^>]*data-test="webhook-test"', off_page)
    still = await post_form(browser, page, f"{page}/test")  # a crafted POST: the route's own refusal
    assert "disabled" in error_message(assert_page(still, 409)) and len(hooks.requests) == 1
    await post_form(browser, page, f"{page}/state", enabled="true")

    rotated = await post_form(browser, page, f"{page}/rotate-secret")
    new_secret = field(assert_page(rotated), "secret-value")
    assert new_secret.startswith("whsec_") and new_secret != secret
    assert new_secret not in (await browser.get(page)).text
    await post_form(browser, page, f"{page}/test")
    assert hooks.requests[-1].headers["x-platform-signature"] == platform_signature(
        new_secret, hooks.requests[-1].body
    )

    confirm = assert_page(await browser.get(f"{page}/delete"))
    assert 'data-test="webhook-delete-confirm"' in confirm
    deleted = await post_form(browser, f"{page}/delete", f"{page}/delete")
    assert deleted.status_code == 303
    listed = assert_page(await browser.get(deleted.headers["location"]))
    assert "is deleted" in notice(listed) and 'data-test="webhooks-empty"' in listed
    assert (await browser.get(page)).status_code == 404
    for action in ("webhook.update", "webhook.test", "webhook.rotate_secret", "webhook.delete"):
        assert await audit(browser, action) >= 1, action


async def test_another_organisations_webhook_is_404_on_every_form(dash: Dash, hooks: Receiver) -> None:
    owner = await dash.signed_in(await dash.person())
    hook_id, _ = await register(owner, hooks.url)
    stranger = await dash.signed_in(await dash.person())
    for action, fields in (("edit", {"url": hooks.url, "events": ["key.rotated"]}), ("state", {"enabled": "false"}),
                           ("test", {}), ("rotate-secret", {}), ("delete", {})):  # fmt: skip
        answer = await post_form(stranger, "/app/webhooks", f"/app/webhooks/{hook_id}/{action}", **fields)
        assert answer.status_code == 404, (action, answer.text[:300])
    assert (await stranger.get(f"/app/webhooks/{hook_id}/delete")).status_code == 404
    assert hooks.requests == []
    assert 'data-test="webhook-state">enabled' in (await owner.get(f"/app/webhooks/{hook_id}")).text


async def test_usage_alerts_are_saved_and_a_bad_value_keeps_what_was_typed(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    listed = assert_page(await browser.get("/app/webhooks"))
    assert field(listed, "usage-alerts-percents") == "80, 100" and "20,000,000 tokens" in listed
    saved = await post_form(browser, "/app/webhooks", "/app/usage/thresholds", percents="50, 90 ,120")
    assert saved.status_code == 303 and saved.headers["location"].endswith("#usage-alerts")
    shown = assert_page(await browser.get(saved.headers["location"]))
    assert (
        notice(shown) == "The usage alerts are saved."
        and field(shown, "usage-alerts-percents") == "50, 90, 120"
    )
    token = browser.cookies["agentgate_session"]
    api = await browser.get("/admin/usage/thresholds", headers={"Authorization": f"Bearer {token}"})
    assert api.json()["percents"] == [50, 90, 120]

    for typed in ("50, ninety", "0", "1001", ", ".join(["5"] * 11)):
        refused = await post_form(browser, "/app/webhooks", "/app/usage/thresholds", percents=typed)
        assert "1000" in error_message(assert_page(refused, 400)), typed
        assert field(refused.text, "usage-alerts-percents") == typed
    assert (
        await browser.get("/admin/usage/thresholds", headers={"Authorization": f"Bearer {token}"})
    ).json()["percents"] == [50, 90, 120]


async def test_a_plan_without_webhooks_shows_them_disabled_with_the_plan_that_has_them(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="starter"))
    shown = assert_page(await browser.get("/app/webhooks"))
    gate = re.search(r'data-test="plan-gate-webhooks">([\s\S]*?)</div>', shown).group(1)  # type: ignore[union-attr]
    assert "The Starter plan does not include webhooks." in gate and "The Professional plan does" in gate
    assert 'href="/app/billing"' in gate
    assert disabled_fieldset(shown, "/app/webhooks")
    assert (
        not disabled_fieldset(shown, "/app/usage/thresholds")
        if "<fieldset" in shown.split("usage-alerts")[1]
        else True
    )
    for internal in ("audit_log", "byok", "priority_support"):
        assert internal not in shown
