"""Plans sold by negotiation (Enterprise: no list price) are never self-served: registration offers the
self-serve plans only, a platform administrator sets a negotiated plan with a contract end, and past
that end (or without one, after the trial) live keys get 402 like any unpaid plan's."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_server.foundation.timeutil import iso, utc
from http_facade import cli
from tests.billing.conftest import Billed
from tests.billing.events_support import DAY, Live, end_trial, engine, plan_of
from tests.billing.events_support import live_billed as live_billed
from tests.billing.test_trial import chat, refusal
from tests.conftest import BASE_URL

pytestmark = pytest.mark.parametrize("provider", ["sandbox"])  # the rule is the provider's no matter
SELF_SERVE = ["starter", "professional"]


def iso_in(billed: Billed, seconds: float) -> str:
    return iso(utc(billed.clock.now() + seconds))


async def platform_standing(live: Live) -> dict[str, Any]:
    """The standing of tenant P, as its platform administrator reads it."""
    answer = await live.get("status", who="platform")
    assert answer.status_code == 200, answer.text
    return answer.json()["standing"]


async def patch(billed: Billed, tenant: str, body: dict[str, Any]) -> Any:
    path = f"/admin/platform/tenants/{billed.tenants[tenant]}"
    return await billed.client.patch(path, json=body, headers=billed.auth("platform"))


async def test_registration_offers_the_self_serve_plans_only(billed: Billed) -> None:
    body = {
        "email": "ceo@bigcorp.example",
        "organisation": "Big Corp",
        "password": "violet-harbour-lantern-42",
    }
    refused = await billed.client.post("/register", json={**body, "plan": "enterprise"})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["param"]) == ("PLAN_NOT_PURCHASABLE", "plan")
    assert "sold by contract" in error["message"] and "professional, starter" in error["message"]
    accepted = await billed.client.post("/register", json={**body, "plan": "starter"})
    assert accepted.status_code == 202, accepted.text

    described = (await billed.client.get("/register")).json()
    assert [plan["id"] for plan in described["plans"]] == SELF_SERVE
    field = next(f for f in described["fields"] if f["name"] == "plan")
    assert field["enum"] == SELF_SERVE
    document = (await billed.client.get("/openapi.json")).json()
    for schema in ("RegisterBody", "RegisterForm"):
        assert document["components"]["schemas"][schema]["properties"]["plan"]["enum"] == SELF_SERVE
    page = (await billed.client.get("/app/register", headers={"Accept": "text/html"})).text
    assert 'value="starter"' in page and 'value="professional"' in page and 'value="enterprise"' not in page


async def test_a_negotiated_plan_without_a_contract_is_refused_after_the_trial(live_billed: Live) -> None:
    live_key, sandbox_key = await live_billed.keys("p")  # tenant P: Enterprise, made without a contract
    await end_trial(live_billed, live_billed.tenants["p"])
    error = await refusal(live_billed, live_key)
    assert error.status_code == 402 and error.code == "trial_ended"
    assert await chat(live_billed, sandbox_key)


async def test_a_contract_keeps_live_keys_working_until_its_end_then_402(live_billed: Live) -> None:
    live, tenant = live_billed, live_billed.tenants["p"]
    live_key, _ = await live.keys("p")
    await end_trial(live, tenant)
    ends = iso_in(live, 30 * DAY)
    set_by_platform = await patch(live, "p", {"contract_ends_at": ends})
    assert set_by_platform.status_code == 200, set_by_platform.text
    assert set_by_platform.json()["contract_ends_at"] == ends
    assert await chat(live, live_key)  # at once in this process: the PATCH re-read the tenant
    now = await platform_standing(live)
    assert (now["state"], now["contract_ends_at"], now["code"]) == ("contract", ends, None)
    assert "contract_ends_at" not in now["reason"] and ends[:10] in now["reason"]

    live.advance(30 * DAY + 1)
    await engine(live).gate.scan()
    error = await refusal(live, live_key)
    assert error.status_code == 402 and error.code == "contract_ended"
    assert "contract" in error.message and f"{BASE_URL}/billing_provider/status" in error.message
    ended = await platform_standing(live)
    assert (ended["state"], ended["code"]) == ("contract_ended", "contract_ended")

    renewed = await patch(live, "p", {"contract_ends_at": iso_in(live, 365 * DAY)})
    assert renewed.status_code == 200 and await chat(live, live_key)


async def test_a_platform_admin_sets_a_negotiated_plan_with_its_contract_end(billed: Billed) -> None:
    tenant = billed.tenants["a"]  # Professional, self-serve
    cases = [
        ({"plan_id": "enterprise"}, "sold by negotiation"),
        ({"plan_id": "enterprise", "contract_ends_at": iso_in(billed, -60)}, "in the future"),
        ({"plan_id": "enterprise", "contract_ends_at": iso_in(billed, 11 * 366 * DAY)}, "ten years"),
        ({"plan_id": "enterprise", "contract_ends_at": "2030-01-01T00:00:00"}, "timezone"),  # no offset
        ({"plan_id": "starter", "contract_ends_at": iso_in(billed, DAY)}, "self-serve"),
        ({"contract_ends_at": iso_in(billed, DAY)}, "self-serve"),  # still Professional
    ]
    for body, says in cases:
        refused = await patch(billed, "a", body)
        assert refused.status_code == 400, (body, refused.text)
        error = refused.json()["error"]
        assert error["param"] == "contract_ends_at" and says in error["message"], (body, error)
    assert await plan_of(billed, tenant) == "professional"

    ends = iso_in(billed, 365 * DAY)
    moved = await patch(billed, "a", {"plan_id": "enterprise", "contract_ends_at": ends})
    assert moved.status_code == 200 and moved.json()["contract_ends_at"] == ends
    limit = await patch(billed, "a", {"rate_limit_per_minute": 5000})  # the contract stays
    assert limit.status_code == 200 and limit.json()["contract_ends_at"] == ends
    back = await patch(billed, "a", {"plan_id": "starter"})
    assert back.status_code == 200 and back.json()["contract_ends_at"] is None

    created = await billed.client.post(
        "/admin/platform/tenants",
        json={"name": "Contracted", "plan_id": "enterprise", "contract_ends_at": ends},
        headers=billed.auth("platform"),
    )
    assert created.status_code == 201 and created.json()["contract_ends_at"] == ends


def test_the_cli_sets_a_negotiated_plan_with_its_contract_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], provider: str
) -> None:
    for name in list(os.environ):
        if name.startswith("AGENTGATE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AGENTGATE_DATA_DIR", str(tmp_path))

    def agentgate(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    assert agentgate("migrate")[0] == 0
    next_year = (datetime.now(UTC) + timedelta(days=365)).date().isoformat()
    code, out, _ = agentgate(
        "tenants", "create", "--name", "Big", "--plan", "enterprise", "--contract-end", next_year, "--json"
    )
    assert code == 0 and json.loads(out)["contract_ends_at"] == f"{next_year}T00:00:00Z"
    code, _, err = agentgate(
        "tenants", "create", "--name", "Small", "--plan", "starter", "--contract-end", next_year
    )
    assert code == 1 and "self-serve" in err  # a subscription pays for it: no contract end
    assert agentgate("tenants", "create", "--name", "Small", "--plan", "starter")[0] == 0
    code, _, err = agentgate("tenants", "set-plan", "--tenant", "Small", "--plan", "enterprise")
    assert code == 1 and "sold by negotiation" in err
    no_offset = (
        "tenants",
        "set-plan",
        "--tenant",
        "Small",
        "--plan",
        "enterprise",
        "--contract-end",
        "2030-01-01T00:00",
    )
    with pytest.raises(SystemExit) as usage_error:  # argparse's answer to a malformed argument
        agentgate(*no_offset)
    assert usage_error.value.code == 2 and "offset (Z or +01:00)" in capsys.readouterr().err
    code, out, _ = agentgate(
        "tenants", "set-plan", "--tenant", "Small", "--plan", "enterprise", "--contract-end", next_year
    )
    assert code == 0 and f"contract ends {next_year}T00:00:00Z" in out
    code, out, _ = agentgate("tenants", "set-plan", "--tenant", "Small", "--plan", "starter", "--json")
    assert code == 0 and json.loads(out)["contract_ends_at"] is None
