"""``/app/agent-commerce``: the platform administrator sees the agent platforms and their orders (what
the admin API lists), in the platform part of the navigation, and does there what the admin API does:
adds a platform (credential shown once), revokes it (its credential then gets 401), marks orders
fulfilled or canceled and refunds them (the platform gets its order_update); anyone else gets 403."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.admin.wiring import admin_services
from agent_server.foundation.settings import Settings
from tests.admin.conftest import Receiver, receiver  # noqa: F401  (the loopback receiver fixture)
from tests.commerce.conftest import BOOKED, TRAINING, Shop, payment
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form

PAGE = "/app/agent-commerce"


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


def _shown(html: str, test_id: str) -> str:
    """The value of the read-only field ``data-test=test_id`` (a secret shown once)."""
    match = re.search(rf'value="([^"]+)" data-test="{test_id}"', html)
    assert match, f"no {test_id} on the page"
    return match.group(1)


async def test_a_platform_added_on_the_page_buys_until_it_is_revoked_there(dash: Dash) -> None:
    person = await dash.person(permissions=("platform:admin", "tenant:admin"))
    admin = await dash.signed_in(person)
    made = await post_form(
        admin, PAGE, f"{PAGE}/platforms", name="Paged assistant", webhook_url="https://assistant.example/hook"
    )
    assert made.status_code == 200, made.text[:500]
    credential = _shown(made.text, "agent-platform-credential")
    secret = _shown(made.text, "agent-platform-signing-secret")
    assert credential.startswith("acp_") and secret.startswith("whsec_")
    [platform] = await dash.app.state.commerce.platforms.list()
    assert platform.name == "Paged assistant" and platform.webhook_url == "https://assistant.example/hook"
    listed = await admin.get(PAGE)
    assert f'data-platform-id="{platform.id}"' in listed.text
    assert credential not in listed.text and secret not in listed.text  # shown once, on the answer only

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as api:
        shop = Shop(dash.app, api, dash.clock, credential, platform.id, secret)
        await shop.create()  # the credential buys
        revoked = await post_form(admin, PAGE, f"{PAGE}/platforms/{platform.id}/revoke")
        assert revoked.status_code == 303 and revoked.headers["location"] == f"{PAGE}?done=revoked"
        shown = await admin.get(revoked.headers["location"])
        assert 'data-test="agent-commerce-notice"' in shown.text and "revoked" in shown.text
        refused = await shop.post("/checkout_sessions", {"currency": "eur", "line_items": [{"id": TRAINING}]})
        assert refused.status_code == 401 and refused.json()["code"] == "invalid_credential"

    audit = admin_services(dash.app.state.services).audit
    actions = [entry.action for entry in await audit.list(person.tenant_id)]
    assert "platform.agent_platform.create" in actions and "platform.agent_platform.revoke" in actions


async def test_a_refused_platform_form_keeps_what_was_typed(dash: Dash) -> None:
    admin = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    await dash.app.state.commerce.platforms.create("Taken name", None)
    taken = await post_form(admin, PAGE, f"{PAGE}/platforms", name="Taken name", webhook_url="")
    assert taken.status_code == 409
    assert 'data-test="form-error"' in taken.text and "exists already" in taken.text
    assert 'value="Taken name" data-test="agent-platform-name"' in taken.text
    bad_url = await post_form(admin, PAGE, f"{PAGE}/platforms", name="Other", webhook_url="ftp://x.example/")
    assert bad_url.status_code == 400
    assert 'data-test="field-error-webhook_url"' in bad_url.text and "scheme" in bad_url.text
    assert 'aria-invalid="true" aria-describedby="platform-webhook-url-error"' in bad_url.text
    short = await post_form(admin, PAGE, f"{PAGE}/platforms", name="x")
    assert short.status_code == 400 and 'data-test="field-error-name"' in short.text
    assert [p.name for p in await dash.app.state.commerce.platforms.list()] == ["Taken name"]

    tenant_admin = await dash.signed_in(await dash.person())
    shown = await tenant_admin.get("/app/keys")  # a page this person may open, for a CSRF token
    denied = await tenant_admin.post(
        f"{PAGE}/platforms", data={"csrf_token": csrf_of(shown.text), "name": "Sneaky"}
    )
    assert denied.status_code == 403
    no_token = await admin.post(f"{PAGE}/platforms", data={"name": "No token"})
    assert no_token.status_code == 403
    assert len(await dash.app.state.commerce.platforms.list()) == 1


async def test_orders_are_fulfilled_canceled_and_refunded_from_the_page(
    dash: Dash,
    receiver: Receiver,  # noqa: F811
) -> None:
    commerce = dash.app.state.commerce
    made = await commerce.platforms.create("Hooked assistant", receiver.url)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as api:
        shop = Shop(dash.app, api, dash.clock, made.credential, made.platform.id, made.signing_secret)
        orders = []
        for _ in range(2):
            session = await shop.create()
            done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
            assert done.status_code == 200, done.text
            orders.append(done.json()["order"]["id"])
    worker = admin_services(dash.app.state.services).worker
    assert await worker.tick() == 2  # the two order_create events
    first, second = orders

    admin = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    fulfilled = await post_form(admin, PAGE, f"{PAGE}/orders/{first}/status", status="completed")
    assert fulfilled.status_code == 303 and fulfilled.headers["location"].startswith(f"{PAGE}?done=completed")
    assert await worker.tick() == 1
    event = json.loads(receiver.requests[-1].body)
    assert event["type"] == "order_update" and event["data"]["id"] == first
    assert event["data"]["status"] == "completed"
    assert (await commerce.orders.get(first)).status == "completed"

    again = await post_form(admin, PAGE, f"{PAGE}/orders/{first}/status", status="canceled")
    assert again.status_code == 409 and 'data-test="form-error"' in again.text
    assert "cannot become canceled" in again.text
    wrong = await post_form(admin, PAGE, f"{PAGE}/orders/{first}/status", status="shipped")
    assert wrong.status_code == 400
    missing = await post_form(admin, PAGE, f"{PAGE}/orders/acpord_nothing/status", status="completed")
    assert missing.status_code == 404

    canceled = await post_form(admin, PAGE, f"{PAGE}/orders/{second}/status", status="canceled")
    assert canceled.status_code == 303
    refunded = await post_form(admin, PAGE, f"{PAGE}/orders/{second}/refund")
    assert refunded.status_code == 303 and "done=refunded" in refunded.headers["location"]
    order = await commerce.orders.get(second)
    assert order.status == "canceled" and order.refunded_minor == order.amount_minor and order.refund_ref
    assert await worker.tick() == 2  # the cancel's and the refund's order_update, in either order
    events = [json.loads(request.body)["data"] for request in receiver.requests[-2:]]
    assert {event["id"] for event in events} == {second}
    assert any(event.get("adjustments", [{}])[0].get("type") == "refund" for event in events)
    twice = await post_form(admin, PAGE, f"{PAGE}/orders/{second}/refund")
    assert twice.status_code == 409 and "refunded already" in twice.text

    shown = await admin.get(PAGE)
    row = shown.text.split(f'data-order-id="{second}"', 1)[1].split("</tr>", 1)[0]
    assert 'data-test="agent-order-refunded"' in row and 'data-test="agent-order-refund"' not in row
    assert 'data-test="agent-order-fulfil"' not in row


async def test_the_page_changes_where_order_events_go(dash: Dash, receiver: Receiver) -> None:  # noqa: F811
    commerce = dash.app.state.commerce
    made = await commerce.platforms.create("Quiet assistant", None)
    admin = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    target = f"{PAGE}/platforms/{made.platform.id}/webhook"
    refused = await post_form(admin, PAGE, target, webhook_url="ftp://x.example/")
    assert refused.status_code == 400 and "Webhook URL refused" in refused.text
    before_orders = refused.text.split('id="orders-heading"', 1)[0]
    assert 'data-test="form-error"' in before_orders  # shown above the platforms, where the form is
    changed = await post_form(admin, PAGE, target, webhook_url=receiver.url)
    assert changed.status_code == 303 and changed.headers["location"] == f"{PAGE}?done=webhook"
    assert (await commerce.platforms.get(made.platform.id)).webhook_url == receiver.url
    shown = await admin.get(changed.headers["location"])
    assert (
        f'value="{receiver.url}" placeholder="https://…" data-test="agent-platform-webhook-edit"'
        in shown.text
    )

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as api:
        shop = Shop(dash.app, api, dash.clock, made.credential, made.platform.id, made.signing_secret)
        session = await shop.create()
        done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
        assert done.status_code == 200, done.text
    worker = admin_services(dash.app.state.services).worker
    assert await worker.tick() == 1
    assert json.loads(receiver.requests[-1].body)["type"] == "order_create"

    cleared = await post_form(admin, PAGE, target, webhook_url="")
    assert cleared.status_code == 303
    assert (await commerce.platforms.get(made.platform.id)).webhook_url is None
    await post_form(admin, PAGE, f"{PAGE}/orders/{done.json()['order']['id']}/status", status="completed")
    assert await worker.tick() == 0 and len(receiver.requests) == 1


async def test_a_booked_package_shows_its_range_in_the_orders(dash: Dash) -> None:
    """The booked range the admin API lists with an order's line is on the page too."""
    commerce = dash.app.state.commerce
    made = await commerce.platforms.create("Booking assistant", None)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(dash.app), base_url="http://127.0.0.1:8000"
    ) as api:
        shop = Shop(dash.app, api, dash.clock, made.credential, made.platform.id, made.signing_secret)
        session = await shop.create(BOOKED)
        [option] = [o for o in session["fulfillment_options"] if o["type"] == "local_delivery"][:1]
        chosen = {"type": "local_delivery", "option_id": option["id"], "item_ids": [f"li_{BOOKED}"]}
        path = f"/checkout_sessions/{session['id']}"
        assert (await shop.post(path, {"selected_fulfillment_options": [chosen]})).status_code == 200
        done = await shop.post(f"{path}/complete", payment())
        assert done.status_code == 200, done.text
    order_id = done.json()["order"]["id"]
    window = option["delivery_window"]

    admin = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    shown = await admin.get(PAGE)
    row = shown.text.split(f'data-order-id="{order_id}"', 1)[1].split("</tr>", 1)[0]
    booked = row.split('data-test="agent-order-booking">', 1)[1].split("</span>", 1)[0]
    assert booked == f"booked {window['start'][:10]} to {window['end'][:10]} (3 working days)"
