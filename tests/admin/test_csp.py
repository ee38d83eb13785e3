"""CSP reports: both browser formats, no JWT but size and per-IP limits, a platform-admin aggregate."""

from __future__ import annotations

import json

from tests.admin.conftest import World

PATH = "/admin/csp-report/"


def legacy(directive: str, blocked: str) -> str:
    report = {
        "document-uri": "https://app.example/dash?token=abc",
        "violated-directive": directive,
        "blocked-uri": blocked,
    }
    return json.dumps({"csp-report": {**report, "original-policy": "default-src 'self'"}})


def reporting_api(*pairs: tuple[str, str]) -> str:
    reports = [
        {
            "type": "csp-violation",
            "age": 1,
            "url": "https://app.example/",
            "body": {
                "documentURL": "https://app.example/",
                "effectiveDirective": d,
                "blockedURL": b,
                "disposition": "report",
            },
        }
        for d, b in pairs
    ] + [{"type": "deprecation", "body": {"id": "x"}}]
    return json.dumps(reports)


async def send(world: World, content: str, content_type: str) -> int:
    response = await world.client.post(PATH, content=content, headers={"content-type": content_type})
    return response.status_code


async def test_both_formats_are_accepted_and_aggregated(world: World) -> None:
    assert (
        await send(
            world, legacy("script-src-elem", "https://evil.example/a.js?sid=1"), "application/csp-report"
        )
        == 202
    )
    assert (
        await send(world, legacy("script-src-elem", "https://evil.example/a.js"), "application/csp-report")
        == 202
    )
    assert (
        await send(
            world,
            reporting_api(
                ("img-src", "https://img.example/p.png"), ("script-src-elem", "https://evil.example/a.js")
            ),
            "application/reports+json",
        )
        == 202
    )
    response = await world.client.get(f"{PATH}aggregate", headers=world.auth("platform"))
    assert response.status_code == 200
    rows = {(r["directive"], r["blocked_uri"]): r["count"] for r in response.json()["data"]}
    assert rows == {
        ("script-src-elem", "https://evil.example/a.js"): 3,
        ("img-src", "https://img.example/p.png"): 1,
    }
    assert "token=abc" not in response.text and "sid=1" not in response.text  # queries are dropped


async def test_a_uri_urllib_cannot_split_is_kept_without_its_query(world: World) -> None:
    odd = legacy("script-src-elem", "https://[evil.example/a.js?sid=1#f")
    assert await send(world, odd, "application/csp-report") == 202
    response = await world.client.get(f"{PATH}aggregate", headers=world.auth("platform"))
    rows = {(r["directive"], r["blocked_uri"]) for r in response.json()["data"]}
    assert rows == {("script-src-elem", "https://[evil.example/a.js")}


async def test_reports_are_bounded(world: World) -> None:
    settings = world.app.state.services.settings
    big = legacy("script-src", "https://x.example/" + "a" * settings.csp_report_max_bytes)
    assert await send(world, big, "application/csp-report") == 413
    assert await send(world, "not json", "application/csp-report") == 400
    assert await send(world, json.dumps({"hello": 1}), "application/csp-report") == 400
    assert await send(world, legacy("script-src", "inline"), "text/plain") == 400
    settings.csp_reports_per_ip_per_hour = 3
    statuses = [await send(world, legacy("script-src", "inline"), "application/csp-report") for _ in range(3)]
    assert statuses[-1] == 429
    world.clock.advance(3601)
    assert await send(world, legacy("script-src", "inline"), "application/csp-report") == 202


async def test_the_aggregate_is_for_platform_admins(world: World) -> None:
    assert (await world.client.get(f"{PATH}aggregate", headers=world.auth("a_admin"))).status_code == 403
    assert (await world.client.get(f"{PATH}aggregate")).status_code == 401
