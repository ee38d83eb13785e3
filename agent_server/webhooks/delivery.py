"""The delivery worker: claims due deliveries with a lease, sends them signed, logs every attempt.

``tick()`` is one pass (tests call it directly after moving a ManualClock); ``run()`` loops it in
the app's lifespan. A claim is a compare-and-set UPDATE (``WHERE status='pending' AND
next_attempt_at <= now AND (lease_until IS NULL OR lease_until < now)``), so several processes
never send the same attempt twice; a process that dies mid-attempt loses its lease after
``lease_seconds`` and another process retries. Delivery is at-least-once: receivers dedupe on
``webhook-id``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from sqlalchemy import or_, select, update

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import AgentError
from agent_server.foundation.secret_box import SecretBox
from agent_server.foundation.tasks import wait_for_event
from agent_server.observability.instruments import INSTRUMENTS
from agent_server.storage.db import Database
from agent_server.webhooks.repository import utc
from agent_server.webhooks.signing import HEADER_PREFIX, merchant_signature, signature_headers
from agent_server.webhooks.tables import (
    DELIVERY_DELIVERED,
    DELIVERY_FAILED,
    DELIVERY_PENDING,
    WebhookAttemptRecord,
    WebhookDeliveryRecord,
    WebhookRecord,
)
from agent_server.webhooks.url_guard import UrlGuard, pinned_client

log = logging.getLogger("agentgate.webhooks")
D = WebhookDeliveryRecord
# Seconds after the 1st, 2nd, ... failed attempt; hourly afterwards, until retry_hours have passed.
SCHEDULE = (1, 5, 30, 120, 600)
HOURLY = 3600
JITTER = 0.1  # +-10 %: spreads retries of many deliveries that failed together
USER_AGENT = "agentgate-webhooks/1"
ACP_EVENT_PREFIX = "acp."  # agent_server/commerce/webhooks.py


def backoff(failed_attempts: int, rng: random.Random) -> float:
    base = SCHEDULE[failed_attempts - 1] if failed_attempts <= len(SCHEDULE) else HOURLY
    return base * rng.uniform(1 - JITTER, 1 + JITTER)


@dataclass(frozen=True)
class AttemptResult:
    status_code: int | None
    latency_ms: int
    error: str | None = None
    retry_after: float | None = None
    gone: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.status_code is not None and 200 <= self.status_code < 300


class DeliveryWorker:
    def __init__(
        self,
        db: Database,
        box: SecretBox,
        clock: Clock,
        guard: UrlGuard,
        *,
        timeout: float = 10.0,
        retry_hours: float = 24.0,
        lease_seconds: float = 60.0,
        batch: int = 20,
        concurrency: int = 8,
        rng: random.Random | None = None,
        header_prefix: str = HEADER_PREFIX,
    ) -> None:
        self.db, self.box, self.clock, self.guard = db, box, clock, guard
        self.timeout, self.retry_window = timeout, retry_hours * 3600
        self.lease_seconds, self.batch = lease_seconds, batch
        self.rng = rng or random.Random()
        self.header_prefix = header_prefix  # of the <prefix>Signature header
        self.worker_id = "wrk_" + secrets.token_hex(8)
        self._semaphore = asyncio.Semaphore(concurrency)
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Called after an enqueue so a new event goes out without waiting for the next poll."""
        self._wake.set()

    async def run(self, poll_seconds: float) -> None:
        while True:
            self._wake.clear()  # before the tick, so an enqueue during it is not missed
            try:
                busy = await self.tick()
            except Exception:  # a DB hiccup must not end the worker
                log.exception("webhook worker tick failed")
                busy = 0
            if not busy:
                await wait_for_event(self._wake, poll_seconds)

    async def tick(self) -> int:
        """Claim due deliveries and attempt each once; returns how many."""
        claimed = await self._claim()
        await asyncio.gather(*(self._process(delivery_id, retry=True) for delivery_id in claimed))
        return len(claimed)

    def lease(self) -> tuple[str, datetime]:
        """A lease of this worker from now on, for a delivery it will send itself (a test ping)."""
        return self.worker_id, utc(self.clock.now()) + timedelta(seconds=self.lease_seconds)

    async def send_now(self, delivery_id: str) -> None:
        """Attempt a delivery this worker already holds the lease of, once, without retries."""
        await self._process(delivery_id, retry=False)

    async def _claim(self) -> list[str]:
        now = utc(self.clock.now())
        due = (
            D.status == DELIVERY_PENDING,
            D.next_attempt_at <= now,
            or_(D.lease_until.is_(None), D.lease_until < now),  # type: ignore[union-attr,operator]
        )
        lease = now + timedelta(seconds=self.lease_seconds)
        async with self.db.session() as session:
            query = select(D.id).where(*due).order_by(D.next_attempt_at).limit(self.batch)
            candidates = list((await session.execute(query)).scalars())
            claimed = []
            for delivery_id in candidates:
                won = await session.execute(
                    update(D)
                    .where(D.id == delivery_id, *due)  # type: ignore[arg-type]
                    .values(lease_until=lease, lease_owner=self.worker_id)
                )
                if won.rowcount == 1:
                    claimed.append(delivery_id)
        return claimed

    async def _process(self, delivery_id: str, retry: bool) -> None:
        async with self._semaphore:
            async with self.db.session() as session:
                delivery = await session.get(D, delivery_id)
                hook = await session.get(WebhookRecord, delivery.webhook_id) if delivery else None
            if delivery is None:
                return
            if hook is None or not hook.enabled or hook.deleted_at is not None:
                reason = hook.disabled_reason if hook else "webhook missing"
                await self._finish(delivery, DELIVERY_FAILED, f"endpoint disabled: {reason}")
                return
            result = await self._send(hook, delivery)
            await self._record(hook, delivery, result, retry)

    async def _send(self, hook: WebhookRecord, delivery: WebhookDeliveryRecord) -> AttemptResult:
        started = time.monotonic()

        def elapsed() -> int:
            return int((time.monotonic() - started) * 1000)

        try:
            target = await self.guard.resolve(hook.url)
            secret = self.box.decrypt(hook.secret_encrypted)
        except AgentError as exc:
            return AttemptResult(None, elapsed(), exc.message[:300])
        body = delivery.payload.encode()
        headers = signature_headers(
            secret, delivery.event_id, int(self.clock.now()), body, self.header_prefix
        )
        headers["user-agent"] = USER_AGENT
        if delivery.event_type.startswith(ACP_EVENT_PREFIX):  # order events to an ACP agent platform
            headers["merchant-signature"] = merchant_signature(secret, int(self.clock.now()), body)
        try:
            async with (
                pinned_client(target, self.timeout) as client,
                client.stream("POST", hook.url, content=body, headers=headers) as response,
            ):
                # The receiver's body is never read or shown (OWASP API7/API10): the status decides.
                status = response.status_code
                retry_after = _retry_after(response)
        except httpx.TimeoutException:
            return AttemptResult(None, elapsed(), f"timed out after {self.timeout:g} s")
        except httpx.HTTPError as exc:
            return AttemptResult(None, elapsed(), f"connection failed: {type(exc).__name__}")
        if 300 <= status < 400:
            return AttemptResult(status, elapsed(), "redirect not followed")
        if status == 410:
            return AttemptResult(status, elapsed(), "receiver answered 410 Gone", gone=True)
        if not 200 <= status < 300:
            return AttemptResult(status, elapsed(), f"receiver answered {status}", retry_after)
        return AttemptResult(status, elapsed())

    async def _record(
        self, hook: WebhookRecord, delivery: WebhookDeliveryRecord, result: AttemptResult, retry: bool
    ) -> None:
        now_ts = self.clock.now()
        number = delivery.attempts + 1
        values: dict[str, object] = {
            "attempts": number,
            "last_status_code": result.status_code,
            "last_error": result.error,
            "lease_until": None,
            "lease_owner": None,
        }
        if result.ok:
            values.update(status=DELIVERY_DELIVERED, finished_at=utc(now_ts))
        else:
            delay = backoff(number, self.rng)
            if result.retry_after:
                delay = min(max(delay, result.retry_after), HOURLY)
            deadline = delivery.created_at + timedelta(seconds=self.retry_window)
            next_at = utc(now_ts + delay)
            if result.gone or not retry or next_at > deadline:
                values.update(status=DELIVERY_FAILED, finished_at=utc(now_ts))
            else:
                values.update(next_attempt_at=next_at)
        async with self.db.session() as session:
            session.add(
                WebhookAttemptRecord(
                    delivery_id=delivery.id,
                    webhook_id=hook.id,
                    tenant_id=hook.tenant_id,
                    attempt=number,
                    at=utc(now_ts),
                    status_code=result.status_code,
                    latency_ms=result.latency_ms,
                    error=result.error,
                )
            )
            await session.execute(update(D).where(D.id == delivery.id).values(**values))  # type: ignore[arg-type]
            if result.gone:
                await session.execute(
                    update(WebhookRecord)
                    .where(WebhookRecord.id == hook.id)  # type: ignore[arg-type]
                    .values(enabled=False, disabled_reason="receiver answered 410 Gone")
                )
        log.info(
            "webhook delivery %s attempt %d to %s: %s",
            delivery.id,
            number,
            hook.id,
            result.status_code if result.ok else result.error,
        )
        INSTRUMENTS.count_webhook(str(values.get("status", "retrying")))  # delivered, failed or retrying

    async def _finish(self, delivery: WebhookDeliveryRecord, status: str, error: str) -> None:
        async with self.db.session() as session:
            await session.execute(
                update(D)
                .where(D.id == delivery.id)  # type: ignore[arg-type]
                .values(
                    status=status,
                    last_error=error[:300],
                    finished_at=utc(self.clock.now()),
                    lease_until=None,
                    lease_owner=None,
                )
            )


def _retry_after(response: httpx.Response) -> float | None:
    if response.status_code not in (429, 503):
        return None
    value = response.headers.get("retry-after", "")
    return float(value) if value.isdigit() else None
