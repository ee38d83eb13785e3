"""/admin/llm-routing/: validated edits with a revision, effective in every process, reset to defaults."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent_server.foundation.errors import UpstreamFailed
from agent_server.llm.router import build_router
from agent_server.llm.types import ChatRequest, Completion, Delta
from tests.admin.conftest import World

PATH = "/admin/llm-routing/"
MODEL = "agentgate-mock-small"


class Flaky:
    """A backend that always fails the retryable way, so the router falls back."""

    name = "flaky"

    async def complete(self, request: ChatRequest) -> Completion:
        raise UpstreamFailed("flaky upstream answered 502")

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        raise UpstreamFailed("flaky upstream answered 502")
        yield Delta("")  # unreachable; makes this an async generator


async def test_get_patch_with_revision_and_reset(world: World) -> None:
    auth = world.auth("platform")
    first = await world.client.get(PATH, headers=auth)
    assert first.status_code == 200
    table = first.json()
    assert first.headers["etag"] == f'"rev-{table["revision"]}"' and "mock" in table["backends"]
    assert table["routes"][MODEL] == [{"backend": "mock", "weight": 1.0, "priority": 0}]

    change = {"routes": {"my-model": [{"backend": "mock", "weight": 2}]}}
    missing = await world.client.patch(PATH, json=change, headers=auth)
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "If-Match"
    stale = await world.client.patch(PATH, json=change, headers={**auth, "If-Match": '"rev-999"'})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "revision_mismatch"

    ok = await world.client.patch(PATH, json=change, headers={**auth, "If-Match": first.headers["etag"]})
    assert ok.status_code == 200, ok.text
    assert (
        ok.json()["revision"] == table["revision"] + 1 and ok.json()["routes"]["my-model"][0]["weight"] == 2.0
    )
    assert MODEL in ok.json()["routes"]  # a PATCH merges: untouched models stay
    # The same base revision again loses: no lost update.
    again = await world.client.patch(PATH, json=change, headers={**auth, "If-Match": first.headers["etag"]})
    assert again.status_code == 409
    by_body = await world.client.patch(
        PATH, json={"routes": {"my-model": None}, "revision": ok.json()["revision"]}, headers=auth
    )
    assert by_body.status_code == 200 and "my-model" not in by_body.json()["routes"]

    reset = await world.client.delete(PATH, headers=auth)
    assert reset.status_code == 200 and reset.json()["routes"] == table["routes"]
    assert reset.json()["revision"] > by_body.json()["revision"]


async def test_patch_is_validated(world: World) -> None:
    auth = world.auth("platform")
    etag = (await world.client.get(PATH, headers=auth)).headers["etag"]
    cases = {
        "unknown backend": ({"m": [{"backend": "nope"}]}, "routes.m.0"),
        "weight 0": ({"m": [{"backend": "mock", "weight": 0}]}, "routes.m.0.weight"),
        "negative weight": ({"m": [{"backend": "mock", "weight": -1}]}, "routes.m.0.weight"),
        "no backend": ({"m": []}, "routes.m"),
        "duplicate backend": ({"m": [{"backend": "mock"}, {"backend": "mock"}]}, "routes.m"),
        "unknown field": ({"m": [{"backend": "mock", "cost": 1}]}, "routes.m.0.cost"),
    }
    for name, (routes, param) in cases.items():
        response = await world.client.patch(PATH, json={"routes": routes}, headers={**auth, "If-Match": etag})
        assert response.status_code == 400, name
        assert response.json()["error"]["param"] == param, name
    assert (await world.client.get(PATH, headers=auth)).headers["etag"] == etag  # nothing was written


async def test_an_edit_takes_effect_in_every_process_without_restart(world: World) -> None:
    services = world.app.state.services
    # A second process: its own router on the same database, its own clock for the re-check.
    other = build_router(
        services.settings,
        services.db,
        world.clock,
        lambda: [(m.id, m.vendor) for m in services.knowledge.pack.models],
    )
    other.backends["flaky"] = Flaky()
    services.llm.backends["flaky"] = Flaky()
    try:
        assert "routed-later" not in await other.models()
        auth = world.auth("platform")
        etag = (await world.client.get(PATH, headers=auth)).headers["etag"]
        change = {
            "routes": {
                "routed-later": [{"backend": "flaky", "priority": 0}, {"backend": "mock", "priority": 1}]
            }
        }
        assert (
            await world.client.patch(PATH, json=change, headers={**auth, "If-Match": etag})
        ).status_code == 200
        assert "routed-later" in await services.llm.models()  # this process: at once
        world.clock.advance(services.settings.llm_routing_check_seconds)
        assert "routed-later" in await other.models()  # another process: at its next check
        answer = await other.complete(
            ChatRequest(model="routed-later", messages=[{"role": "user", "content": "x"}])
        )
        assert "sandbox model routed-later" in answer.content  # flaky failed over to the mock
    finally:
        await other.aclose()
