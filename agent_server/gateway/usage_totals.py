"""Sums of usage rows as the usage API shows them: requests, tokens, errors, latency and spend.

Spend is in the deployment's currency: ``cost_micros`` exactly (millionths of a minor unit) and
``cost`` in whole minor units, half up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func

from agent_server.gateway.spend import USAGE, cost_sum, minor


def sum_columns(currency: str) -> list[Any]:
    """The sums of a group of usage rows, labelled as ``Totals.of`` reads them."""
    return [
        func.count().label("requests"),
        func.coalesce(func.sum(USAGE.prompt_tokens), 0).label("prompt_tokens"),
        func.coalesce(func.sum(USAGE.completion_tokens), 0).label("completion_tokens"),
        func.coalesce(func.sum(case((USAGE.status >= 400, 1), else_=0)), 0).label("errors"),
        func.coalesce(func.sum(USAGE.latency_ms), 0).label("latency_ms"),
        cost_sum(currency).label("cost_micros"),
    ]


@dataclass(slots=True)
class Totals:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0
    latency_ms: float = 0.0  # the sum, for an average over any grouping
    cost_micros: int = 0

    @classmethod
    def of(cls, row: Any) -> Totals:
        """The sums of a row selected with ``sum_columns``."""
        return cls(
            int(row.requests),
            int(row.prompt_tokens),
            int(row.completion_tokens),
            int(row.errors),
            float(row.latency_ms),
            int(row.cost_micros),
        )

    def add(self, other: Totals) -> Totals:
        self.requests += other.requests
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.errors += other.errors
        self.latency_ms += other.latency_ms
        self.cost_micros += other.cost_micros
        return self

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def view(self, currency: str) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "errors": self.errors,
            "avg_latency_ms": round(self.latency_ms / self.requests, 2) if self.requests else 0.0,
            "cost": minor(self.cost_micros),
            "cost_micros": self.cost_micros,
            "currency": currency,
        }
