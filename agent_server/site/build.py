"""Wires the public site API from the app's services and registry, once, in ``create_app``."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from agent_server.billing.checkout import Checkout
from agent_server.billing.config import billing_provider
from agent_server.billing.port import BillingProvider
from agent_server.capabilities.context import ANONYMOUS, ToolContext
from agent_server.capabilities.registry import Registry
from agent_server.capabilities.services import Services
from agent_server.foundation.tasks import stop_tasks
from agent_server.gateway.request_log_bodies import BodyRetention
from agent_server.gateway.response_store import ResponseStore
from agent_server.jobs.queue import make_queue
from agent_server.jobs.runner import JobRunner
from agent_server.jobs.service import Consumer, Jobs
from agent_server.jobs.store import JobStore
from agent_server.jobs.types import JobTypes
from agent_server.policies.idempotency import IdempotencyStore
from agent_server.policies.ratelimit import Limiter, Policy
from agent_server.site.budget import SiteLLM
from agent_server.site.chat_token import ChatTokens, load_or_create_secret
from agent_server.site.subscriptions import Subscriptions

HOUR = 3600


@dataclass(frozen=True)
class SitePolicies:
    """Per-IP limits of the public routes; ``ask`` is the site's default policy (spec 8)."""

    chat: Policy
    ask: Policy
    jobs: Policy
    forms: Policy

    def describe(self) -> dict[str, dict[str, int | str]]:
        described: dict[str, dict[str, int | str]] = {}
        for field in dataclasses.fields(self):
            policy: Policy = getattr(self, field.name)
            described[field.name] = {
                "policy": policy.name,
                "requests": policy.limit,
                "window_seconds": policy.window,
            }
        return described


@dataclass
class Site:
    services: Services  # a view of the app's services whose ``llm`` is the budgeted SiteLLM
    limiter: Limiter
    policies: SitePolicies
    llm: SiteLLM
    tokens: ChatTokens
    idempotency: IdempotencyStore
    jobs: Jobs
    checkout: Checkout
    subscriptions: Subscriptions

    def worker(self) -> Consumer:
        # Housekeeping also deletes what outlived its retention: idempotency records, stored responses,
        # request bodies of the request log.
        responses = ResponseStore.of(self.services)
        retention = BodyRetention(self.services.db, self.services.clock)  # the request log's bodies
        return self.jobs.worker(
            self.services.settings.job_concurrency, self.idempotency.purge, responses.purge, retention.purge
        )

    async def serve_jobs(self) -> None:
        """A standalone worker (``agentgate worker``): arq's worker on the servers' Redis queue."""
        await self.jobs.recover(sole_worker=False)
        await self.worker().run()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The in-process job worker for the app's lifetime (``job_worker=inprocess``).

        First re-enqueues jobs a crashed process left queued or running. With the in-memory queue
        this process is the only consumer, so every unfinished job is an orphan.
        """
        settings = self.services.settings
        if settings.job_worker != "inprocess":
            yield
            return
        await self.jobs.recover(sole_worker=settings.redis_url is None)
        task = asyncio.create_task(self.worker().run(), name="agentgate-jobs")
        try:
            yield
        finally:
            await stop_tasks([task])


def build_site(services: Services, registry: Registry, provider: BillingProvider | None = None) -> Site:
    settings, clock = services.settings, services.clock
    base_url = settings.public_base_url.rstrip("/")
    limiter = Limiter(services.kv, clock)
    # Redis down (docs/operations.md): the chat proxy fails closed (503), the cheap routes count
    # per process and say X-RateLimit-Degraded: 1.
    policies = SitePolicies(
        chat=Policy("chat", settings.site_chat_limit, settings.site_chat_window_seconds),
        ask=Policy("default", settings.site_ask_limit, settings.site_ask_window_seconds, fail_open=True),
        jobs=Policy("jobs", settings.site_jobs_limit, HOUR, fail_open=True),
        forms=Policy("forms", settings.site_forms_limit, HOUR, fail_open=True),
    )
    site_llm = SiteLLM(
        lambda: services.llm,
        limiter,
        requests=Policy("site-llm-calls", settings.site_llm_requests_per_minute, 60),
        tokens=Policy("site-llm-tokens", settings.site_llm_tokens_per_day, 86_400),
    )
    # Tools called on behalf of the site (ask jobs) spend the site's budget, not the raw router.
    view = dataclasses.replace(services, llm=site_llm)
    secret = (
        settings.chat_token_secret.get_secret_value().encode()
        if settings.chat_token_secret
        else load_or_create_secret(settings.data_dir)
    )
    tokens = ChatTokens(
        secret, clock, ttl=settings.chat_token_ttl_seconds, min_age=settings.chat_token_min_age_seconds
    )
    store = JobStore(services.db, clock, settings.job_ttl_seconds)
    types = JobTypes(
        registry,
        lambda: ToolContext(view, ANONYMOUS, surface="job"),
        services.knowledge,
        ask_tool=f"ask_{settings.service_name}",
    )
    runner = JobRunner(store, types.handlers(), base_url)
    jobs = Jobs(store, make_queue(settings, services.kv), runner, types, lease=settings.job_lease_seconds)
    idempotency = IdempotencyStore(
        services.db, clock, ttl=settings.idempotency_ttl_seconds, wait=settings.idempotency_wait_seconds
    )
    # /api/checkout.php sells through the configured payment provider (docs/billing.md).
    provider = provider or billing_provider(services)
    checkout = Checkout(services.db, clock, provider, services.knowledge, base_url)
    return Site(
        view,
        limiter,
        policies,
        site_llm,
        tokens,
        idempotency,
        jobs,
        checkout,
        Subscriptions(services.db, clock),
    )
