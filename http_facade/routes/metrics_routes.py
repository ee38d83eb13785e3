"""Metrics routes: ``/metrics/`` (JSON, spec 4.1; this process's counts) and
``/metrics/prometheus`` (every worker process's counts added up, optionally behind a bearer token),
and the lifespan that starts traces and the sharing of counts between workers (docs/operations.md).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from pydantic import BaseModel, Field
from starlette.responses import Response

from agent_server.capabilities.services import Services
from agent_server.foundation.errors import AuthFailed
from agent_server.observability import telemetry
from agent_server.observability.metrics_share import MetricsShare, merge, process_state
from http_facade.deps import SettingsDep

SHARE_KEY = "metrics_share"  # app.state attribute: this process's MetricsShare, when workers share


@asynccontextmanager
async def observing(app: FastAPI) -> AsyncIterator[None]:
    """Traces (when the OTEL_* variables ask for them) and the shared counts, as long as the app runs."""
    services: Services = app.state.services
    settings = services.settings
    async with AsyncExitStack() as stack:
        if telemetry.start_tracing(settings, services.db.engine.sync_engine):
            stack.callback(telemetry.stop_tracing)
        share = MetricsShare(settings.metrics_dir) if settings.metrics_dir else None
        setattr(app.state, SHARE_KEY, share)
        if share is not None:
            metrics = app.state.metrics
            await stack.enter_async_context(
                share.running(lambda: process_state(metrics), settings.metrics_flush_seconds)
            )
        yield


router = APIRouter(lifespan=observing)


class Latency(BaseModel):
    p50: float
    p90: float
    p95: float
    p99: float
    mean: float
    max: float


class RouteMetrics(BaseModel):
    method: str
    route: str = Field(description="The route template, e.g. /v1/models/{model_id}.")
    model: str | None = Field(description="The model the route recorded in request.state.model.")
    requests: int
    statuses: dict[str, int]
    rate_limited: int = Field(description="Answers with 429.")
    upstream_errors: int = Field(description="Answers with 502, 503 or 504.")
    server_errors: int
    latency_ms: Latency


class MetricsTotals(BaseModel):
    requests: int
    rate_limited: int
    upstream_errors: int
    server_errors: int


class MetricsSnapshot(BaseModel):
    uptime_seconds: float
    totals: MetricsTotals
    routes: list[RouteMetrics]


@router.get("/metrics/", summary="Request metrics per route and model of the answering process (JSON)")
async def metrics_json(request: Request) -> MetricsSnapshot:
    return MetricsSnapshot.model_validate(request.app.state.metrics.snapshot())


@router.get(
    "/metrics/prometheus",
    summary="Metrics of every worker process in the Prometheus text format",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Metrics."},
        401: {"description": "AGENTGATE_METRICS_TOKEN is set and the bearer token is missing or wrong."},
    },
)
async def metrics_prometheus(request: Request, settings: SettingsDep) -> Response:
    if settings.metrics_token is not None:
        _check_token(request.headers.get("authorization", ""), settings.metrics_token.get_secret_value())
    state = process_state(request.app.state.metrics)
    share: MetricsShare | None = getattr(request.app.state, SHARE_KEY, None)
    merged = merge(share.gather(state) if share is not None else [state])
    # Imported at the first scrape: prometheus-client (~1.3 MB) stays out of workers never scraped.
    from agent_server.observability.prometheus import render

    body, content_type = render(
        merged, settings.service_name.replace("-", "_"), request.headers.get("accept")
    )
    return Response(body, media_type=content_type, headers={"Cache-Control": "no-store"})


def _check_token(authorization: str, expected: str) -> None:
    scheme, _, token = authorization.partition(" ")
    # Digests compared: constant time whatever the lengths.
    presented = hashlib.sha256(token.strip().encode()).digest()
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        presented, hashlib.sha256(expected.encode()).digest()
    ):
        raise AuthFailed(
            "The metrics need 'Authorization: Bearer <AGENTGATE_METRICS_TOKEN>'.",
            code="invalid_metrics_token",
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
