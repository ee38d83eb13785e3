"""Request metrics with bounded memory: counters and a fixed latency histogram per series.

A series is (method, route template, model). Route templates are finite; models come from requests,
so the number of series is capped and the overflow is folded into the model ``(other)``. Latency
percentiles are read from fixed buckets (linear interpolation inside a bucket), which costs one
``bisect`` per request and a few hundred bytes per series.

These counts are the process's own: ``/metrics/`` shows them as they are, and the Prometheus
exposition adds those every other worker process shared (``agent_server/observability/metrics_share.py``), so a
request costs no more than this in-process count.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

# Upper bounds in seconds; the last bucket (beyond 60 s) is open.
BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.04, 0.05, 0.075, 0.1, 0.15, 0.25, 0.4,
    0.5, 0.75, 1.0, 1.5, 2.5, 4.0, 5.0, 7.5, 10.0, 15.0, 30.0, 60.0,
)  # fmt: skip
RATE_LIMITED = frozenset({429})
UPSTREAM_ERRORS = frozenset({502, 503, 504})
OVERFLOW_MODEL = "(other)"
PERCENTILES = (50, 90, 95, 99)


@dataclass
class Series:
    method: str
    route: str
    model: str | None
    count: int = 0
    total_seconds: float = 0.0
    max_seconds: float = 0.0
    statuses: dict[int, int] = field(default_factory=dict)
    buckets: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))

    def observe(self, status: int, seconds: float) -> None:
        self.count += 1
        self.total_seconds += seconds
        if seconds > self.max_seconds:
            self.max_seconds = seconds
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.buckets[bisect_left(BUCKETS, seconds)] += 1

    def count_of(self, statuses: frozenset[int]) -> int:
        return sum(n for s, n in self.statuses.items() if s in statuses)

    def percentile(self, p: float) -> float:
        """The p-th percentile in seconds, interpolated inside its bucket."""
        if self.count == 0:
            return 0.0
        rank = p / 100 * self.count
        seen = 0
        for i, n in enumerate(self.buckets):
            if n and seen + n >= rank:
                lower = BUCKETS[i - 1] if i > 0 else 0.0
                upper = BUCKETS[i] if i < len(BUCKETS) else self.max_seconds
                upper = min(upper, self.max_seconds)
                lower = min(lower, upper)
                return lower + (upper - lower) * (rank - seen) / n
            seen += n
        return self.max_seconds


class Metrics:
    """Counts per series. One event loop writes, so plain ints are enough."""

    def __init__(self, max_series: int = 1000) -> None:
        self.max_series = max_series
        self.started = time.monotonic()
        self._series: dict[tuple[str, str, str | None], Series] = {}

    def observe(self, method: str, route: str, model: str | None, status: int, seconds: float) -> None:
        key = (method, route, model)
        series = self._series.get(key)
        if series is None:
            if len(self._series) >= self.max_series:
                key = (method, route, OVERFLOW_MODEL)
                series = self._series.get(key)
            if series is None:
                series = self._series[key] = Series(*key)
        series.observe(status, seconds)

    @property
    def series(self) -> list[Series]:
        return sorted(self._series.values(), key=lambda s: (s.route, s.method, s.model or ""))

    def snapshot(self) -> dict[str, Any]:
        """The JSON document of ``/metrics/``."""
        routes = [_series_json(s) for s in self.series]
        return {
            "uptime_seconds": round(time.monotonic() - self.started, 3),
            "totals": {
                "requests": sum(r["requests"] for r in routes),
                "rate_limited": sum(r["rate_limited"] for r in routes),
                "upstream_errors": sum(r["upstream_errors"] for r in routes),
                "server_errors": sum(r["server_errors"] for r in routes),
            },
            "routes": routes,
        }

    def export(self) -> list[list[Any]]:
        """Every series as JSON-safe rows, to share with the other worker processes."""
        return [
            [
                s.method,
                s.route,
                s.model,
                {str(k): v for k, v in s.statuses.items()},
                s.buckets,
                s.total_seconds,
            ]
            for s in self._series.values()
        ]


def _series_json(s: Series) -> dict[str, Any]:
    latency = {f"p{p}": round(s.percentile(p) * 1000, 3) for p in PERCENTILES}
    latency["mean"] = round(s.total_seconds / s.count * 1000, 3) if s.count else 0.0
    latency["max"] = round(s.max_seconds * 1000, 3)
    return {
        "method": s.method,
        "route": s.route,
        "model": s.model,
        "requests": s.count,
        "statuses": {str(k): v for k, v in sorted(s.statuses.items())},
        "rate_limited": s.count_of(RATE_LIMITED),
        "upstream_errors": s.count_of(UPSTREAM_ERRORS),
        "server_errors": sum(n for st, n in s.statuses.items() if st >= 500),
        "latency_ms": latency,
    }
