"""The ``batch`` job, run by the job workers (agent_server/jobs): a slice of a batch's lines, or its end.

A slice runs lines (up to ``concurrency`` at once, each admitted by the batch limiter) for at most
``slice_seconds``, then queues the batch's next job, so no job outlives the job lease and any worker
may take the next one. Every ``CHECK_SECONDS`` the slice records the lines that finished (once each,
batch_results), beats and reads the batch's status: a cancel or the end of the completion window
stops new lines within that time. A worker killed mid-slice leaves its job ``running``; the job
sweep hands it to another worker after the lease, and that worker skips every line already
recorded. When every line is recorded the batch is ``finalizing`` and the next job ends it
(output.py); so does the job after a cancel or the window's end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from agent_server.batches.limiter import BatchLimiter
from agent_server.batches.lines import Outcome, line_token, run_line
from agent_server.batches.output import Finisher
from agent_server.batches.store import BatchStore
from agent_server.batches.tables import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    EXPIRED,
    FAILED,
    FINAL,
    FINALIZING,
    IN_PROGRESS,
    VALIDATING,
    BatchRecord,
)
from agent_server.files.jsonl import parse_line, split_lines
from agent_server.files.service import Files
from agent_server.foundation.errors import AgentError, NotFound, gateway_envelope
from agent_server.foundation.tasks import stop_tasks
from agent_server.gateway.service import Gateway
from agent_server.jobs.service import Jobs

log = logging.getLogger("agentgate.batches")
CHECK_SECONDS = 0.5  # how often a slice records finished lines and looks for a cancel
JOB_TYPE = "batch"


class BatchRunner:
    def __init__(
        self,
        store: BatchStore,
        files: Files,
        gateway: Gateway,
        limiter: BatchLimiter,
        finisher: Finisher,
        *,
        slice_seconds: float,
        concurrency: int,
        max_line: int,
    ) -> None:
        self.store, self.files, self.gateway, self.limiter = store, files, gateway, limiter
        self.finisher, self.slice_seconds, self.concurrency = finisher, slice_seconds, concurrency
        self.max_line = max_line
        self.stall_seconds = 3 * slice_seconds + 30  # no beat for this long: the batch is resumed
        self.jobs: Jobs | None = None  # set by the wiring: the queue of the next slice

    async def handle(self, job_input: dict[str, Any]) -> dict[str, Any]:
        batch_id = str(job_input.get("batch_id"))
        try:
            return await self._step(batch_id)
        except NotFound:  # the input file was deleted or expired: the batch cannot go on
            batch = await self.store.find(batch_id)
            if batch is not None and batch.status == IN_PROGRESS:
                message = f"The input file {batch.input_file_id} no longer exists."
                errors = [
                    {"code": "input_file_missing", "message": message, "param": "input_file_id", "line": None}
                ]
                await self.finisher.finish(batch, (batch.status,), FAILED, errors=errors)
            return {"batch_id": batch_id}

    async def _step(self, batch_id: str) -> dict[str, Any]:
        """One job: a slice of lines, or the end of the batch (its files, its last status), never both,
        so each job stays well within the job lease."""
        batch = await self.store.find(batch_id)
        if batch is None or batch.status in FINAL:
            return {"batch_id": batch_id, "status": batch.status if batch else None}
        await self.store.beat(batch_id)
        if batch.status == VALIDATING:  # the lines were checked at upload; the endpoint at creation
            await self.store.move(batch_id, (VALIDATING,), IN_PROGRESS)
            batch = await self.store.find(batch_id)
            assert batch is not None
        if batch.status == CANCELLING:
            await self.finisher.finish(batch, (CANCELLING,), CANCELLED)
        elif batch.status == FINALIZING:
            await self.finisher.finish(batch, (FINALIZING,), COMPLETED)
        elif batch.status == IN_PROGRESS and self._expired(batch):
            await self.finisher.finish(batch, (IN_PROGRESS,), EXPIRED)
        elif batch.status == IN_PROGRESS:
            await self._run_slice(batch)
            assert self.jobs is not None
            await self.jobs.start(JOB_TYPE, {"batch_id": batch_id})  # the next slice, or the end
        return {"batch_id": batch_id}

    def _expired(self, batch: BatchRecord) -> bool:
        return self.store.now() >= batch.expires_at.replace(tzinfo=self.store.now().tzinfo)

    async def resume_stalled(self) -> int:
        """Job sweep: queue a job for every unfinished batch whose slices stopped beating (a job
        that timed out or crashed, an enqueue lost with Redis); returns how many."""
        assert self.jobs is not None
        ids = await self.store.stalled(self.stall_seconds)
        for batch_id in ids:
            await self.jobs.start(JOB_TYPE, {"batch_id": batch_id})
        return len(ids)

    async def _run_slice(self, batch: BatchRecord) -> None:
        done = await self.store.done_lines(batch.id)
        finished: list[Outcome] = []
        stop = asyncio.Event()
        deadline = time.monotonic() + self.slice_seconds
        watcher = asyncio.create_task(self._watch(batch, finished, stop, deadline))
        slots = asyncio.Semaphore(self.concurrency)
        running: set[asyncio.Task[None]] = set()
        everything = True
        try:
            principal, refusal = None, None
            try:
                principal = await self.gateway.keys.by_digest(batch.key_digest)
            except AgentError as err:  # the key was revoked or expired: each line says so
                refusal = err
            permits = self.limiter.permits(principal) if principal is not None else None
            source = await self.files.get(batch.tenant_id, batch.input_file_id)
            async for number, raw in split_lines(self.files.read(source), self.max_line):
                if number in done:
                    continue
                if stop.is_set() or time.monotonic() > deadline:
                    everything = False
                    break
                line = parse_line(number, raw, self.max_line)
                if principal is None or permits is None:
                    assert refusal is not None
                    body, request_id = (
                        gateway_envelope(refusal),
                        f"batch_req_{line_token(batch.id, number)[:24]}",
                    )
                    finished.append(Outcome(number, line.custom_id, refusal.http_status, request_id, body))
                    continue
                if not await _first(permits.take(), stop) or not await _first(slots.acquire(), stop):
                    everything = False
                    break

                async def one(line=line, principal=principal) -> None:  # type: ignore[no-untyped-def]
                    try:
                        run = run_line(self.gateway, principal, batch.id, line, batch.discount_percent)
                        finished.append(await run)
                    finally:
                        slots.release()

                task = asyncio.create_task(one())
                running.add(task)
                task.add_done_callback(running.discard)
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        finally:
            for task in running:  # only when this slice itself is cancelled (a timeout, a shutdown)
                task.cancel()
            await stop_tasks([watcher])  # it reads the key cache, on Redis: a first cancel can be lost
        await self._flush(batch.id, finished)
        # Finalizing only when every line is recorded (a line whose task died runs in the next slice).
        if everything and len(await self.store.done_lines(batch.id)) >= batch.total:
            await self.store.move(batch.id, (IN_PROGRESS,), FINALIZING)

    async def _watch(
        self, batch: BatchRecord, finished: list[Outcome], stop: asyncio.Event, deadline: float
    ) -> None:
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            if time.monotonic() > deadline:
                stop.set()  # the slice's time is up: the next slice goes on
            try:
                await self._flush(batch.id, finished)
                await self.store.beat(batch.id)
                current = await self.store.find(batch.id)
                await self.gateway.keys.by_digest(batch.key_digest)  # from the key cache, mostly
            except AgentError:  # the key was revoked or expired: the next slice fails what is left
                stop.set()
                continue
            except Exception:  # a database hiccup: the lines wait for the next check
                log.warning("batch %s: recording finished lines failed; retrying", batch.id, exc_info=True)
                continue
            if current is None or current.status != IN_PROGRESS or self._expired(current):
                stop.set()

    async def _flush(self, batch_id: str, finished: list[Outcome]) -> None:
        taken = finished[:]
        del finished[: len(taken)]
        try:
            await self.store.record_results(batch_id, taken)
        except BaseException:
            finished[:0] = taken  # kept for the next try
            raise


async def _first(step: Any, stop: asyncio.Event) -> bool:
    """Await ``step`` unless ``stop`` is set first; True when the step finished."""
    work = asyncio.ensure_future(step)
    halt = asyncio.ensure_future(stop.wait())
    await asyncio.wait({work, halt}, return_when=asyncio.FIRST_COMPLETED)
    halt.cancel()
    if work.done():
        work.result()
        return True
    work.cancel()
    return False
