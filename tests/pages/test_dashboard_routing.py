"""The LLM routing page: platform admins only; edits carry the revision they were made at."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator

import pytest

from agent_server.admin import routing
from agent_server.foundation.settings import Settings
from tests.pages.dashboard import Dash, csrf_of, dashboard_world, post_form

PLATFORM = ("platform:admin", "tenant:admin")
MODEL = "agentgate-mock-small"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


def revision_of(html: str) -> int:
    return int(re.search(r'name="revision" value="(\d+)"', html).group(1))  # type: ignore[union-attr]


async def test_a_tenant_admin_gets_403_and_no_link(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person())
    assert 'href="/app/routing"' not in (await browser.get("/app")).text
    page = await browser.get("/app/routing")
    assert page.status_code == 403 and "platform:admin" in page.text
    refused = await post_form(browser, "/app/keys", "/app/routing", revision="1", model=MODEL)
    assert refused.status_code == 403


async def test_a_platform_admin_edits_a_route_at_the_shown_revision(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="enterprise", permissions=PLATFORM))
    page = await browser.get("/app/routing")
    assert page.status_code == 200 and 'href="/app/routing"' in page.text
    revision = revision_of(page.text)
    assert (
        f"ETag: {routing.etag(revision)}" in html.unescape(page.text)
        and f'data-test="route-{MODEL}"' in page.text
    )
    backends = list(
        dict.fromkeys(re.findall(r'name="backend" value="([\w.-]+)"', page.text))
    )  # every form lists all
    assert "mock" in backends
    weights = ["3" if b == "mock" else "" for b in backends]
    fields = {"revision": str(revision), "model": MODEL, "backend": backends, "weight": weights,
              "priority": ["0"] * len(backends)}  # fmt: skip
    saved = await browser.post("/app/routing", data={"csrf_token": csrf_of(page.text), **fields})
    assert saved.status_code == 303 and saved.headers["location"] == f"/app/routing?saved={MODEL}"
    services = dash.app.state.services
    table = routing.table_view(await routing.current(services), backends)
    assert table["revision"] == revision + 1 and table["routes"][MODEL] == [
        {"backend": "mock", "weight": 3.0, "priority": 0}
    ]
    stale = await browser.post("/app/routing", data={"csrf_token": csrf_of(page.text), **fields})
    assert stale.status_code == 409 and "revision_mismatch" in stale.text  # someone else's edit came first
    shown = await browser.get(saved.headers["location"])
    assert f"The route of {MODEL} is saved" in shown.text and revision_of(shown.text) == revision + 1
    bad = await browser.post("/app/routing", data={"csrf_token": csrf_of(shown.text), **fields,
                                                   "revision": str(revision + 1), "weight": ["x"] * len(backends)})  # fmt: skip
    assert bad.status_code == 400 and "must be numbers" in bad.text
    audit = (await browser.get("/app/audit", params={"action": "llm_routing.patch"})).text
    assert audit.count('data-test="audit-row"') == 3  # one ok, the conflict and the bad weights failed
