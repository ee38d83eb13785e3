"""Gateway probes (spec 2.4, 4.1): health, liveness, readiness, the JWT key, metrics
(``metrics_routes.py``, included here), and the self-serve registration description.

The database and the cache are really probed, concurrently, under
``settings.health_timeout_seconds``. Upstream LLMs are checked in the background by
``agent_server/llm/health.py`` (started by this router's lifespan); the probes read its results.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
from fastapi import APIRouter, FastAPI, Query, Request
from pydantic import BaseModel
from starlette.responses import JSONResponse, Response

from agent_server.capabilities.services import Services
from agent_server.foundation.errors import ValidationFailed
from agent_server.llm.health import EXTRAS_KEY, UpstreamHealth, upstream_health
from http_facade.deps import ServicesDep, SettingsDep
from http_facade.routes import metrics_routes
from wellknown import health as docs
from wellknown.registration import consultant_code


@asynccontextmanager
async def checking_upstreams(app: FastAPI) -> AsyncIterator[None]:
    """The upstream checks run as long as the app (FastAPI runs a router's lifespan inside the app's)."""
    services: Services = app.state.services
    monitor = UpstreamHealth.from_settings(services.settings)
    services.extras[EXTRAS_KEY] = monitor
    async with monitor.running():
        yield


router = APIRouter(tags=["probes"], lifespan=checking_upstreams)
router.include_router(metrics_routes.router)  # with its lifespan: traces and the shared counts
HEALTH_JSON = {"content": {docs.HEALTH_JSON: {"schema": {"type": "object", "required": ["status"]}}}}


class HealthChecks(BaseModel):
    gateway: str
    database: str
    cache: str
    masterLlm: str


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    checks: HealthChecks
    version: str


async def probe(check: Callable[[], Any], timeout: float) -> tuple[str, float]:
    """Run one check; ``True``/``None`` is ok, ``False`` an error, a string is reported as is."""
    started = time.perf_counter()
    try:
        with anyio.fail_after(timeout):
            result = check()
            if inspect.isawaitable(result):
                result = await result
    except TimeoutError:
        outcome = "timeout"
    except Exception as exc:  # a probe reports its dependency's failure, it does not raise it
        outcome = f"error: {type(exc).__name__}"
    else:
        outcome = "ok" if result in (True, None) else "error" if result is False else str(result)
    return outcome, (time.perf_counter() - started) * 1000


def llm_check(llm: Any, upstreams: UpstreamHealth | None = None) -> Callable[[], Awaitable[str] | str]:
    """The master LLM: with upstreams configured, their latest background checks; otherwise the
    mock is always ok; a backend with ``ping``/``health`` is asked; a router over mocks only is
    ``ok (mock)``; anything else is ``unknown``."""
    if upstreams is not None and upstreams.monitored:
        return lambda: upstreams.status(llm)
    if getattr(llm, "name", "") == "mock":
        return lambda: "ok"
    for attr in ("ping", "health", "healthcheck"):
        method = getattr(llm, attr, None)
        if callable(method):
            return method
    backends = getattr(llm, "backends", None)
    if (
        isinstance(backends, dict)
        and backends
        and all(getattr(b, "name", "") == "mock" for b in backends.values())
    ):
        return lambda: "ok (mock)"
    return lambda: "unknown (no reachability check)"


async def dependency_checks(
    services: Services, names: tuple[str, ...]
) -> tuple[dict[str, str], dict[str, float]]:
    timeout = services.settings.health_timeout_seconds
    available: dict[str, Callable[[], Any]] = {
        "database": services.db.ping,
        "cache": services.kv.ping,
        "masterLlm": llm_check(services.llm, upstream_health(services.extras)),
    }
    results = await asyncio.gather(*(probe(available[n], timeout) for n in names))
    return {n: r[0] for n, r in zip(names, results, strict=True)}, {
        n: r[1] for n, r in zip(names, results, strict=True)
    }


def _version(request: Request) -> str:
    return request.app.state.versions.current.name


def _ietf(request: Request, services: Services, checks: dict[str, str], **kw: Any) -> dict[str, Any]:
    company = services.knowledge.pack.company
    return docs.health_json(
        checks,
        now=services.clock.now(),
        version=_version(request),
        service_id=services.settings.service_name,
        description=f"{company.name} gateway",
        **kw,
    )


def _health_json_response(doc: dict[str, Any], status: int | None = None) -> JSONResponse:
    code = status if status is not None else (503 if doc["status"] == "fail" else 200)
    return JSONResponse(
        doc, status_code=code, media_type=docs.HEALTH_JSON, headers={"Cache-Control": "no-store"}
    )


@router.get(
    "/health",
    summary="Gateway health: database, cache and master LLM (spec 2.4)",
    responses={200: {**HEALTH_JSON, "description": "application/json per spec 2.4; health+json on request."}},
)
async def health(request: Request, services: ServicesDep) -> Health:
    checks, durations = await dependency_checks(services, ("database", "cache", "masterLlm"))
    checks = {"gateway": "ok", **checks}
    if docs.HEALTH_JSON in request.headers.get("accept", ""):
        doc = _ietf(request, services, checks, durations_ms=durations, fail_on=())
        return _health_json_response(doc, 200)  # type: ignore[return-value]
    return Health.model_validate(docs.gateway_health(checks, _version(request)))


@router.get(
    "/health/live",
    summary="Liveness: the process answers",
    response_class=Response,
    responses={200: HEALTH_JSON | {"description": "Alive."}},
)
async def live(request: Request, services: ServicesDep) -> Response:
    return _health_json_response(_ietf(request, services, {"gateway": "ok"}))


@router.get(
    "/health/ready",
    summary="Readiness: migrations applied and dependencies reachable",
    response_class=Response,
    responses={
        200: HEALTH_JSON | {"description": "Ready."},
        503: HEALTH_JSON | {"description": "Not ready."},
    },
)
async def ready(request: Request, services: ServicesDep) -> Response:
    if not getattr(request.app.state, "ready", False):
        checks = {"gateway": "error: starting (migrations and start-up not finished)"}
    else:
        deps, _ = await dependency_checks(services, ("database", "cache", "masterLlm"))
        checks = {"gateway": "ok", **deps}
    # Only start-up and the database decide readiness: with Redis or every upstream down the
    # service keeps serving, degraded (docs/operations.md), and taking every instance out of the
    # load balancer would turn that into an outage. The other checks are shown, not counted.
    return _health_json_response(_ietf(request, services, checks, fail_on=("gateway", "database")))


async def jwt_check(request: Request, services: Services) -> str:
    """Sign and verify a probe token with the gateway's own token service (the admin JWT key)."""
    tokens = getattr(getattr(request.app.state, "gateway", None), "tokens", None)
    if tokens is None or not (hasattr(tokens, "issue") and hasattr(tokens, "verify")):
        return "unknown (no token service)"
    token, _ = tokens.issue("health-probe", "health-probe", [])
    claims = tokens.verify(token)
    return "ok" if getattr(claims, "user_id", None) == "health-probe" else "error: round trip"


@router.get(
    "/health/jwt",
    summary="The admin JWT signing key signs and verifies",
    response_class=Response,
    responses={200: HEALTH_JSON | {"description": "Works."}, 503: HEALTH_JSON | {"description": "Broken."}},
)
async def jwt_health(request: Request, services: ServicesDep) -> Response:
    result, ms = await probe(lambda: jwt_check(request, services), services.settings.health_timeout_seconds)
    doc = _ietf(request, services, {"jwt": result}, durations_ms={"jwt": ms})
    return _health_json_response(doc)


class ConsultantCode(BaseModel):
    code: str
    valid: bool
    message: str


@router.get("/consultant-code/validate", summary="Check a consultant code before registering")
async def validate_consultant_code(
    settings: SettingsDep,
    code: str | None = Query(None, max_length=64, description="The code to check."),
) -> ConsultantCode:
    if code is None or not code.strip():
        raise ValidationFailed("Query parameter 'code' is required, e.g. ?code=ABC123.", param="code")
    return ConsultantCode.model_validate(consultant_code(settings, code))
