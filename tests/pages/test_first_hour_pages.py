"""What a new user meets in the first hour, over HTTP: who is signed in, the grouped navigation, the
playground's models, its trace in words, the audit log's people, the status page's copy."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from agent_server.foundation.settings import Settings
from http_facade.pages.dashboard.route import APP_NAV, NAV_GROUPS, PLATFORM_NAV, grouped
from http_facade.pages.dashboard.trace_text import describe_step
from tests.pages.dashboard import Dash, dashboard_world, post_form

MODEL = "agentgate-mock-small"


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def test_the_header_names_who_is_signed_in_and_offers_sign_out(dash: Dash) -> None:
    person = await dash.person()
    signed_out = (await dash.browser().get("/app/login")).text
    assert 'data-test="signed-in-as"' not in signed_out and ">Dashboard</a>" in signed_out
    assert ">Sign in</a>" not in signed_out  # the site's entry says where it leads, signed in or not
    page = (await (await dash.signed_in(person)).get("/app/keys")).text
    header = page[page.index('<header class="site-header">') : page.index("</header>")]
    assert f'data-test="who-email">{person.email}</span>' in header
    assert re.search(r'data-test="who-organisation">org-\w+</span>', header)
    assert 'action="/app/logout"' in header and 'data-test="sign-out"' in header
    assert page.count('data-test="sign-out"') == 1


async def test_the_navigation_is_grouped_and_a_menu_without_script(dash: Dash) -> None:
    platform = await dash.signed_in(await dash.person(permissions=("platform:admin", "tenant:admin")))
    page = (await platform.get("/app/usage")).text
    assert (
        '<details class="menu dash-menu">' in page
        and '<summary class="menu-button" data-test="dash-menu">' in page
    )
    assert '<details class="menu site-menu">' in page
    groups = re.findall(r'<p class="dash-nav-group" id="dash-nav-group-\d+">([^<]+)</p>', page)
    assert groups == ["Build", "Watch", "Organisation", "Your account", "Platform"]
    assert 'href="/app/usage" data-test="nav-usage" aria-current="page"' in page
    assert 'Dashboard menu<span class="menu-current">: Usage</span>' in page
    # every entry lands in a group, and an entry added without one is still listed (under More)
    placed = [href for _, entries in grouped((*APP_NAV, *PLATFORM_NAV)) for href, _ in entries]
    assert sorted(placed) == sorted(href for href, _ in (*APP_NAV, *PLATFORM_NAV))
    assert grouped((("/app/new-area", "New area"),)) == [("More", [("/app/new-area", "New area")])]
    assert sum(len(paths) for _, paths in NAV_GROUPS) >= 14  # room for the areas being added


async def test_the_playground_offers_chat_models_and_its_trace_reads_as_words(dash: Dash) -> None:
    browser = await dash.signed_in(await dash.person(plan="professional"))
    page = (await browser.get("/app/playground")).text
    offered = re.findall(r'<option value="([^"]+)"', page)
    assert MODEL in offered and "text-embedding-3-small" not in offered  # the plan has it, but it cannot chat
    answer = await post_form(browser, "/app/playground", "/app/playground", model=MODEL, message="Hello")
    trace_id = re.search(r'/app/playground/trace/(\w+)" data-test="trace-link"', answer.text).group(1)  # type: ignore[union-attr]
    trace = (await browser.get(f"/app/playground/trace/{trace_id}")).text
    steps = re.findall(r'<td class="step-text">([^<]+)</td>', trace)
    assert steps[0] == f"Request for {MODEL}: 1 message."
    assert re.fullmatch(r"Backends to try, in order \(routing table revision \d+\): \w+\.", steps[1])
    assert re.fullmatch(r"\w+ answered in [\d.]+ ms\.", steps[2])
    assert not any(c in "".join(steps) for c in "{}[]'\"")  # no JSON or Python notation


def test_steps_read_alike_whatever_their_values() -> None:
    assert describe_step(
        {"seq": 1, "at_ms": 0, "kind": "request", "model": "m", "messages": 2, "max_tokens": 1}
    ) == ("Request for m: 2 messages, at most 1 token.")
    failed = {
        "seq": 3,
        "at_ms": 5,
        "kind": "attempt",
        "backend": "b",
        "ok": False,
        "latency_ms": 4.5,
        "error": "x",
    }
    assert describe_step(failed) == "b failed after 4.5 ms (x)."
    odd = {"seq": 4, "at_ms": 6, "kind": "cache_hit", "keys": ["a", "b"], "hit": True, "meta": {"n": None}}
    assert describe_step(odd) == "Cache_hit: keys a, b; hit yes; meta n none."


async def test_the_audit_log_names_people_by_their_address(dash: Dash) -> None:
    person = await dash.person(plan="professional")
    browser = await dash.signed_in(person)
    await post_form(browser, "/app/keys", "/app/keys", name="backend", scopes=["chat"])
    page = (await browser.get("/app/audit")).text
    actors = re.findall(r'<td data-test="audit-actor">(.*?)</td>', page)
    assert actors and all(a.startswith(person.email) for a in actors)
    assert f'<code class="hint">{person.user_id}</code>' in actors[0]


async def test_the_status_page_reads_as_sentences(dash: Dash) -> None:
    page = (await dash.browser().get("/status-page")).text
    assert (
        "API API" not in page and 'data-test="status-about">Health of the agentgate public API.</p>' in page
    )
    assert re.search(r"<dt>API version</dt><dd><code>\d{4}-\d{2}-\d{2}</code></dd>", page)
