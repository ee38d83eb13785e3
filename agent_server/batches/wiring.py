"""Builds ``Batches`` and registers the ``batch`` job type with the app's job machinery."""

from __future__ import annotations

from agent_server.batches.limiter import BatchLimiter
from agent_server.batches.output import Finisher
from agent_server.batches.runner import JOB_TYPE, BatchRunner
from agent_server.batches.service import Batches
from agent_server.batches.store import BatchStore
from agent_server.files.service import Files
from agent_server.gateway.service import Gateway
from agent_server.jobs.service import Jobs
from agent_server.policies.ratelimit import Limiter

LINES_AT_ONCE = 8  # lines of one slice in flight together (the limiter still paces them)


def build_batches(gateway: Gateway, files: Files, jobs: Jobs) -> tuple[Batches, BatchRunner]:
    """The service the routes call and the runner (whose ``resume_stalled`` joins the job sweep)."""
    services = gateway.services
    settings = services.settings
    store = BatchStore(services.db, services.clock)
    limiter = BatchLimiter(
        Limiter(services.kv, services.clock), settings.rate_limit_window_seconds, settings.batch_share_percent
    )
    finisher = Finisher(store, files, services.events, settings.max_request_bytes)
    runner = BatchRunner(
        store,
        files,
        gateway,
        limiter,
        finisher,
        slice_seconds=min(settings.batch_slice_seconds, settings.job_lease_seconds / 2),
        concurrency=LINES_AT_ONCE,
        max_line=settings.max_request_bytes,
    )
    runner.jobs = jobs
    jobs.runner.handlers[JOB_TYPE] = runner.handle
    return Batches(store, files, jobs), runner
