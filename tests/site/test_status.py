"""/api/status.php and its aliases in the health-check format: pass, warn, fail; unversioned."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI

from tests.site.conftest import site_of

PATHS = ["/api/status.php", "/status", "/.well-known/health"]


async def test_status_passes_in_the_health_check_format(web: httpx.AsyncClient) -> None:
    for path in PATHS:
        response = await web.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/health+json")
        assert "api-version" not in response.headers  # unversioned (spec 9)
        document = response.json()
        assert document["status"] == "pass" and document["version"] == "2026-05-18"
        assert set(document["checks"]) == {"database:responseTime", "cache:responseTime", "llm:responseTime"}
        for details in document["checks"].values():
            assert len(details) == 1 and details[0]["status"] == "pass" and details[0]["observedUnit"] == "ms"
            assert details[0]["time"].endswith("Z")
        assert "output" not in document
        assert (await web.head(path)).status_code == 200


async def test_a_failing_cache_or_llm_warns_and_a_failing_database_fails(
    web: httpx.AsyncClient, site_app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = site_of(site_app).services
    monkeypatch.setattr(services.settings, "health_timeout_seconds", 0.2)

    async def broken() -> bool:
        raise ConnectionError("secret-host:6379 refused")

    async def hanging() -> bool:
        await asyncio.sleep(30)
        return True

    monkeypatch.setattr(services.kv, "ping", broken)
    warned = await web.get("/api/status.php")
    assert warned.status_code == 200 and warned.json()["status"] == "warn"
    cache = warned.json()["checks"]["cache:responseTime"][0]
    assert cache["status"] == "fail" and cache["output"] == "ConnectionError"  # no host in the output
    monkeypatch.setattr(services.db, "ping", hanging)
    failed = await web.get("/status")
    assert failed.status_code == 503 and failed.json()["status"] == "fail"
    assert "0.2 s" in failed.json()["checks"]["database:responseTime"][0]["output"]
    assert failed.json()["output"] == "failing: cache, database"
