"""The status document in the API health-check format (draft-inadarei-api-health-check-06).

``database`` failing is ``fail`` (HTTP 503: nothing durable works); ``cache`` or ``llm`` failing is
``warn`` (HTTP 200: FAQ, catalogues and jobs still work, the public limits fail closed). Each check
runs concurrently under a short timeout, so the document answers within about that timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agent_server.capabilities.services import Services
from agent_server.foundation.timeutil import iso, utc
from agent_server.llm.health import upstream_health

MEDIA_TYPE = "application/health+json"
STATUS_CODES = {"pass": 200, "warn": 200, "fail": 503}


async def _llm_probe(services: Services) -> object:
    """Upstreams: the latest background checks (false when none is reachable); otherwise the
    backend's own cheap probe, ``ping`` if it has one, else the router's model list."""
    monitor = upstream_health(services.extras)
    if monitor is not None and monitor.monitored:
        return not (await monitor.status(services.llm)).startswith("error")
    llm = services.llm
    for name in ("ping", "models"):
        probe = getattr(llm, name, None)
        if probe is not None:
            return await probe()
    return True


async def _check(
    component: str, kind: str, probe: Callable[[], Awaitable[object]], timeout: float, now: str
) -> tuple[str, dict[str, Any]]:
    started = time.perf_counter()
    output = None
    try:
        with anyio.fail_after(timeout):
            ok = await probe() is not False
        if not ok:
            output = "probe answered false"
    except TimeoutError:
        ok, output = False, f"no answer within {timeout:g} s"
    except Exception as exc:
        ok, output = False, type(exc).__name__  # the class only: messages may hold hosts or URLs
    detail: dict[str, Any] = {
        "componentId": component,
        "componentType": kind,
        "observedValue": round((time.perf_counter() - started) * 1000, 1),
        "observedUnit": "ms",
        "status": "pass" if ok else "fail",
        "time": now,
    }
    if output:
        detail["output"] = output
    return f"{component}:responseTime", detail


async def health(services: Services, *, version: str, timeout: float) -> tuple[dict[str, Any], int]:
    """The document and its HTTP status."""
    now = iso(utc(services.clock.now()))
    results = await asyncio.gather(
        _check("database", "datastore", services.db.ping, timeout, now),
        _check("cache", "datastore", services.kv.ping, timeout, now),
        _check("llm", "component", lambda: _llm_probe(services), timeout, now),
    )
    checks = {key: [detail] for key, detail in results}
    failed = {key.split(":")[0] for key, detail in results if detail["status"] == "fail"}
    status = "fail" if "database" in failed else "warn" if failed else "pass"
    document: dict[str, Any] = {
        "status": status,
        "version": version,
        "serviceId": services.settings.service_name,
        "description": f"health of the {services.settings.service_name} public API",
        "checks": checks,
        "links": {"about": services.settings.public_base_url.rstrip("/") + "/docs"},
    }
    if failed:
        document["output"] = f"failing: {', '.join(sorted(failed))}"
    return document, STATUS_CODES[status]
