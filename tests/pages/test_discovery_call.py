"""The discovery call is requested on the site itself: the page's form and the JSON route make a lead
the team sees (a mail and /app/leads), the visitor gets a confirmation, and nothing links to a
booking host that does not exist."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from agent_server.foundation.settings import Settings
from tests.conftest import BASE_URL
from tests.gateway.conftest import PASSWORD
from tests.pages.dashboard import Dash, dashboard_world
from tests.pages.outbox import letters

TEAM = "sales-team@agentgate.example"
TOPIC = "Migrating existing OpenAI-compatible clients to agentgate"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings, leads_email=TEAM, site_forms_limit=3) as world:
        yield world


async def test_the_form_makes_a_lead_the_team_sees_and_confirms_it_to_the_visitor(dash: Dash) -> None:
    visitor = dash.browser("10.0.0.5")
    page = (await visitor.get("/catalogue/discovery-call")).text
    assert 'data-test="call-form"' in page and 'action="/catalogue/discovery-call"' in page
    assert "agentgate.example/book" not in page
    fields = {"name": "Grace Hopper", "email": "Grace@Compilers.example", "company": "Compilers Ltd",
              "topic": TOPIC, "language": "de", "preferred_times": "Tuesday mornings",
              "message": "We run 40 agents against three vendors."}  # fmt: skip
    sent = await visitor.post("/catalogue/discovery-call", data=fields)
    assert sent.status_code == 200 and sent.headers["cache-control"] == "no-store"
    assert 'data-test="call-sent"' in sent.text and "grace@compilers.example" in sent.text
    reference = re.search(r"reference <code>(lead_\w+)</code>", sent.text).group(1)  # type: ignore[union-attr]

    [confirmation] = await letters(dash, "grace@compilers.example")
    assert reference in confirmation.text and TOPIC in confirmation.text
    assert "40 agents" not in confirmation.text and "Grace" not in confirmation.text  # nothing typed in
    [notice] = await letters(dash, TEAM)
    assert notice.subject == "Discovery call request: Grace Hopper"
    for value in (reference, "Compilers Ltd", "Tuesday mornings", "We run 40 agents", "Language: de"):
        assert value in notice.text, value

    admin = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    listed = await admin.get("/app/leads")
    assert (
        listed.status_code == 200
        and 'href="/app/leads" data-test="nav-leads" aria-current="page"' in listed.text
    )
    assert f'data-lead-id="{reference}"' in listed.text and "We run 40 agents" in listed.text
    tenant_admin = await dash.signed_in(await dash.person())
    assert (await tenant_admin.get("/app/leads")).status_code == 403
    assert 'data-test="nav-leads"' not in (await tenant_admin.get("/app")).text


async def test_agents_read_the_form_and_request_the_call_over_json(dash: Dash) -> None:
    agent = dash.browser("10.0.0.6")
    agent.headers["accept"] = "application/json"
    call = (await agent.get("/api/discovery-call.json")).json()
    assert call["booking_url"] == f"{BASE_URL}/catalogue/discovery-call" == call["links"]["book"]
    form = call["booking"]["form"]
    assert form["url"] == call["booking_url"] and form["method"] == "POST"
    names = [f["name"] for f in form["fields"]]
    page = (await dash.browser().get("/catalogue/discovery-call")).text
    assert all(f'name="{name}"' in page for name in names)  # the document describes the page's form
    assert call["booking"]["api"] == {"url": f"{BASE_URL}/api/discovery-call.json", "method": "POST",
                                      "content_type": "application/json"}  # fmt: skip
    body = {"name": "Agent Smith", "email": "smith@agents.example", "topic": "other", "message": "Hi"}
    key = {"Idempotency-Key": "5b4d8bf6-0c4c-4d0e-9d3c-9d9e4f1c2a11"}
    made = await agent.post("/api/discovery-call.json", json=body, headers=key)
    assert made.status_code == 201 and made.json()["id"].startswith("lead_") and "email" not in made.json()
    again = await agent.post("/api/discovery-call.json", json=body, headers=key)
    assert again.json() == made.json() and again.headers["idempotency-replayed"] == "true"
    assert len(await letters(dash, "smith@agents.example")) == 1
    wrong = await agent.post("/api/discovery-call.json", json={**body, "language": "fr"})
    assert wrong.status_code == 400 and wrong.json()["error"]["param"] == "language"

    listed = {}
    for permissions in (("platform:admin", "tenant:admin"), ("tenant:admin",)):
        person = await dash.person(permissions=permissions)
        login = await agent.post("/admin/auth/login", json={"email": person.email, "password": PASSWORD})
        bearer = {"Authorization": f"Bearer {login.json()['access_token']}"}
        listed[permissions] = await agent.get("/admin/platform/leads", headers=bearer)
    platform, tenant = listed.values()
    assert platform.status_code == 200 and [lead["id"] for lead in platform.json()["data"]] == [
        made.json()["id"]
    ]
    assert platform.json()["data"][0]["email"] == "smith@agents.example"
    assert tenant.status_code == 403


async def test_the_forms_limit_and_other_sites_are_refused(dash: Dash) -> None:
    visitor = dash.browser("10.0.0.7")
    fields = {"name": "Ann", "email": "ann@example.com", "topic": "other"}
    foreign = await visitor.post(
        "/catalogue/discovery-call", data=fields, headers={"Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403 and "/docs/errors#cross_site_form" in foreign.text
    for _ in range(3):
        assert (await visitor.post("/catalogue/discovery-call", data=fields)).status_code == 200
    limited = await visitor.post("/catalogue/discovery-call", data=fields)
    assert limited.status_code == 429 and 'value="Ann"' in limited.text  # the form again, input kept
    assert int(limited.headers["retry-after"]) > 0
    assert len(await letters(dash, "ann@example.com")) == 3
