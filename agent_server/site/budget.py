"""The site's own upstream budget in front of the gateway's router (spec 8: 30 req/min, 1.5M tok/day).

Every model call of the public site (chat proxy, ask's LLM route, ask jobs) goes through
``SiteLLM``, an ``LLMBackend`` that admits a call only while both budgets have room and counts the
tokens the call used. When a budget is spent the call fails with 503 ``site_budget_exhausted`` and
``Retry-After``, the seconds until the next call is admitted, as on every 429 (the site, not the
caller, is out of capacity); FAQ and weather answers need no
model and keep working. Token counting happens after the call, so calls already in flight may
overshoot the daily budget by at most their own size (bounded by the per-minute budget).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from agent_server.foundation.errors import Unavailable
from agent_server.llm.types import ChatRequest, Completion, Delta, LLMBackend, Usage
from agent_server.policies.ratelimit import Limiter, Policy

SUBJECT = "site"


class SiteLLM:
    name = "site"

    def __init__(
        self, backend: Callable[[], LLMBackend], limiter: Limiter, requests: Policy, tokens: Policy
    ) -> None:
        # The backend is looked up per call: the gateway may swap ``services.llm`` after start.
        self.backend, self.limiter, self.requests, self.tokens = backend, limiter, requests, tokens

    async def admit(self) -> None:
        spent = await self.limiter.peek(self.tokens, SUBJECT)
        if spent.remaining <= 0:
            raise Unavailable(
                f"The site's daily model budget ({self.tokens.limit} tokens) is spent; FAQ and weather "
                f"questions still work. Retry in {spent.retry_after} s or use the gateway with your own key.",
                code="site_budget_exhausted",
                retry_after=spent.retry_after,
            )
        calls = await self.limiter.hit(self.requests, SUBJECT)
        if not calls.allowed:
            raise Unavailable(
                f"The site's model budget of {self.requests.limit} calls per {self.requests.window} s "
                f"is spent; FAQ and weather questions still work. Retry in {calls.retry_after} s.",
                code="site_budget_exhausted",
                retry_after=calls.retry_after,
            )

    async def record(self, usage: Usage | None) -> None:
        if usage is not None and usage.total_tokens > 0:
            await self.limiter.spend(self.tokens, SUBJECT, usage.total_tokens)

    async def complete(self, request: ChatRequest) -> Completion:
        await self.admit()
        completion = await self.backend().complete(request)
        await self.record(completion.usage)
        return completion

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        await self.admit()
        async for delta in self.backend().stream(request):
            if delta.usage is not None:
                await self.record(delta.usage)
            yield delta
