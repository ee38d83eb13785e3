"""Process-wide counters of what happens below the HTTP edge: upstream calls, tokens, tool calls,
webhook deliveries and mail.

They are plain dictionaries, written by one event loop: counting costs a dictionary update, and
the Prometheus exposition reads them (with the HTTP series of ``agent_server/observability/metrics.py`` and the
counts the other worker processes shared). Label values come from configuration (backends,
endpoints, the registry's tools) or a fixed set (outcomes, surfaces, token kinds), except models,
which are capped like the HTTP series.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from agent_server.observability.metrics import BUCKETS, OVERFLOW_MODEL

MAX_MODELS = 1000


class Instruments:
    def __init__(self) -> None:
        # (backend, endpoint, outcome) -> [bucket counts..., sum of seconds]
        self.upstream: dict[tuple[str, str, str], list[float]] = {}
        self.tokens: dict[tuple[str, str], int] = {}  # (model, "input" | "output") -> tokens
        self.tools: dict[tuple[str, str, str], int] = {}  # (tool, surface, outcome) -> calls
        self.webhooks: dict[str, int] = {}  # outcome -> deliveries
        self.mail: dict[str, int] = {}  # outcome -> messages

    def observe_upstream(self, backend: str, endpoint: str, outcome: str, seconds: float) -> None:
        key = (backend, endpoint, outcome)
        row = self.upstream.get(key)
        if row is None:
            row = self.upstream[key] = [0] * (len(BUCKETS) + 2)
        row[bisect_left(BUCKETS, seconds)] += 1
        row[-1] += seconds

    def count_tokens(self, model: str, input_tokens: int, output_tokens: int) -> None:
        if model and len(self.tokens) >= 2 * MAX_MODELS and (model, "input") not in self.tokens:
            model = OVERFLOW_MODEL
        for kind, n in (("input", input_tokens), ("output", output_tokens)):
            if n:
                key = (model, kind)
                self.tokens[key] = self.tokens.get(key, 0) + n

    def count_tool_call(self, tool: str, surface: str, outcome: str) -> None:
        key = (tool, surface, outcome)
        self.tools[key] = self.tools.get(key, 0) + 1

    def count_webhook(self, outcome: str) -> None:
        self.webhooks[outcome] = self.webhooks.get(outcome, 0) + 1

    def count_mail(self, outcome: str) -> None:
        self.mail[outcome] = self.mail.get(outcome, 0) + 1

    def export(self) -> dict[str, Any]:
        """JSON-safe, to share with the other worker processes."""
        return {
            "upstream": [[*key, row] for key, row in self.upstream.items()],
            "tokens": [[*key, n] for key, n in self.tokens.items()],
            "tools": [[*key, n] for key, n in self.tools.items()],
            "webhooks": dict(self.webhooks),
            "mail": dict(self.mail),
        }


# One per process: the upstream clients, the webhook worker and the mail worker count here.
INSTRUMENTS = Instruments()
