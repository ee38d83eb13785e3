"""Health documents: the gateway's ``/health`` shape (spec 2.4) and the IETF health-check format
(``application/health+json``, draft-inadarei-api-health-check-06) the probes also speak.

A check result is a short string: ``ok``, ``ok (mock)``, ``unknown ...``, ``degraded: ...`` (part
of a dependency fails, e.g. one upstream LLM of several), ``timeout`` or ``error: ...``. Only
``timeout``, ``error`` and ``degraded`` make the service degraded; only the first two fail a check.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

HEALTH_JSON = "application/health+json"
# Spec 2.4 names the checks; the IETF format wants a component type for each.
COMPONENT_TYPES = {
    "gateway": "system",
    "database": "datastore",
    "cache": "datastore",
    "masterLlm": "component",
}


def failed(result: str) -> bool:
    return result.startswith(("error", "timeout"))


def overall(checks: dict[str, str]) -> str:
    """Spec 2.4 status: ``ok`` or ``degraded``."""
    return "degraded" if any(failed(r) or r.startswith("degraded") for r in checks.values()) else "ok"


def ietf_status(result: str) -> str:
    if failed(result):
        return "fail"
    return "pass" if result.startswith("ok") else "warn"


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def gateway_health(checks: dict[str, str], version: str) -> dict[str, Any]:
    return {"status": overall(checks), "checks": dict(checks), "version": version}


def health_json(
    checks: dict[str, str],
    *,
    now: float,
    version: str,
    service_id: str,
    description: str,
    durations_ms: dict[str, float] | None = None,
    fail_on: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """The IETF document. ``fail_on`` names the checks whose failure fails the whole (readiness);
    otherwise a failed check only warns (the service still answers)."""
    durations_ms = durations_ms or {}
    components: dict[str, list[dict[str, Any]]] = {}
    statuses = []
    for name, result in checks.items():
        status = ietf_status(result)
        entry: dict[str, Any] = {
            "componentId": name,
            "componentType": COMPONENT_TYPES.get(name, "component"),
            "status": status,
            "time": iso(now),
        }
        if name in durations_ms:
            entry.update(observedValue=round(durations_ms[name], 3), observedUnit="ms")
        if status != "pass":
            entry["output"] = result
        components[f"{name}:responseTime" if name in durations_ms else name] = [entry]
        critical = fail_on is None or name in fail_on
        statuses.append(status if status != "fail" or critical else "warn")
    worst = "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"
    doc: dict[str, Any] = {
        "status": worst,
        "version": version,
        "serviceId": service_id,
        "description": description,
        "checks": components,
    }
    if worst != "pass":
        doc["output"] = "; ".join(f"{k}: {v}" for k, v in checks.items() if ietf_status(v) != "pass")
    return doc
