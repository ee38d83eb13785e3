"""The Prometheus exposition of the merged counts (``metrics_share.merge``), rendered by
prometheus-client in the format the scraper asks for (text 0.0.4 by default, OpenMetrics on request).

Names follow Prometheus conventions: base units (seconds), ``_total`` counters, the service name
as prefix (``agentgate_``). docs/operations.md lists every family and its labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

from agent_server.observability.metrics import BUCKETS, RATE_LIMITED, UPSTREAM_ERRORS

HTTP_LABELS = ["method", "route", "model"]
_LE = [*(floatToGoString(b) for b in BUCKETS), "+Inf"]


def render(state: dict[str, Any], prefix: str, accept: str | None) -> tuple[bytes, str]:
    """The exposition body and its content type."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(_Families(list(families(state, prefix)))), content_type


def families(state: dict[str, Any], prefix: str) -> Iterator[Metric]:
    yield from _http(state["http"], prefix)
    upstream = HistogramMetricFamily(
        f"{prefix}_upstream_request_duration_seconds",
        "LLM upstream calls by backend, endpoint and outcome: to the whole answer or the stream's end.",
        labels=["backend", "endpoint", "outcome"],
    )
    for backend, endpoint, outcome, row in state["upstream"]:
        upstream.add_metric([backend, endpoint, outcome], _buckets(row[:-1]), row[-1])
    yield upstream
    tokens = CounterMetricFamily(
        f"{prefix}_llm_tokens", "Tokens of gateway requests by model and kind.", labels=["model", "kind"]
    )
    for model, kind, n in state["tokens"]:
        tokens.add_metric([model, kind], n)
    yield tokens
    tools = CounterMetricFamily(
        f"{prefix}_tool_calls",
        "Registry tool calls by tool, surface (mcp, http, internal, job) and outcome: ok or the error code.",
        labels=["tool", "surface", "outcome"],
    )
    for tool, surface, outcome, n in sorted(state.get("tools", ())):
        tools.add_metric([tool, surface, outcome], n)
    yield tools
    for name, key, text in (
        (
            "webhook_deliveries",
            "webhooks",
            "Webhook delivery attempts by outcome: delivered, retrying, failed.",
        ),
        ("mail_messages", "mail", "Mail delivery attempts by outcome: sent, retrying, failed."),
    ):
        family = CounterMetricFamily(f"{prefix}_{name}", text, labels=["outcome"])
        for outcome, n in sorted(state[key].items()):
            family.add_metric([outcome], n)
        yield family
    yield GaugeMetricFamily(
        f"{prefix}_metrics_processes",
        "Worker processes whose counts this scrape adds up (exited ones included).",
        value=state.get("processes", 1),
    )


def _http(rows: list[list[Any]], prefix: str) -> Iterator[Metric]:
    requests = CounterMetricFamily(
        f"{prefix}_http_requests",
        "HTTP requests by route, method, model and status.",
        labels=[*HTTP_LABELS, "status"],
    )
    limited = CounterMetricFamily(
        f"{prefix}_http_rate_limited", "Requests refused with 429 (rate limits).", labels=HTTP_LABELS
    )
    upstream = CounterMetricFamily(
        f"{prefix}_http_upstream_errors", "Requests answered 502, 503 or 504.", labels=HTTP_LABELS
    )
    duration = HistogramMetricFamily(
        f"{prefix}_http_request_duration_seconds", "Time to the response start.", labels=HTTP_LABELS
    )
    for method, route, model, statuses, buckets, seconds in sorted(rows, key=_series_order):
        labels = [method, route, model or ""]
        for status, n in sorted(statuses.items()):
            requests.add_metric([*labels, status], n)
        limited.add_metric(labels, sum(n for s, n in statuses.items() if int(s) in RATE_LIMITED))
        upstream.add_metric(labels, sum(n for s, n in statuses.items() if int(s) in UPSTREAM_ERRORS))
        duration.add_metric(labels, _buckets(buckets), seconds)
    yield from (requests, limited, upstream, duration)


def _series_order(row: list[Any]) -> tuple[str, str, str]:
    return row[1], row[0], row[2] or ""


def _buckets(counts: Iterable[float]) -> list[tuple[str, float]]:
    """Per-bucket counts as the cumulative ``le`` buckets of the exposition."""
    cumulative, out = 0.0, []
    for le, n in zip(_LE, counts, strict=True):
        cumulative += n
        out.append((le, cumulative))
    return out


class _Families:
    """What prometheus-client's encoders read: an object with ``collect()``."""

    def __init__(self, metrics: list[Metric]) -> None:
        self._metrics = metrics

    def collect(self) -> list[Metric]:
        return self._metrics
