"""Async jobs (spec 2.5, 3.1, 4.5): submit, poll, cancel. Every mutation honours Idempotency-Key."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from agent_server.jobs.store import job_view
from agent_server.policies.ratelimit import Usage
from http_facade.errors import JSON_UTF8
from http_facade.idempotency import IdempotentRoute
from http_facade.routes.site_common import SiteDep, per_ip_limit

router = APIRouter(tags=["jobs"], route_class=IdempotentRoute)


class JobSubmission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["ask", "faq_lookup", "kb_refresh"] = Field(description="The job type (docs/public-api.md).")
    input: dict[str, Any] = Field(
        default_factory=dict,
        description="ask: {query}; faq_lookup: {query, limit?}; kb_refresh: {} (no input).",
    )


@router.post("/api/jobs.php", status_code=202, summary="Start an async job", response_model=None)
@router.post("/api/jobs", status_code=202, summary="Start an async job (alias)", response_model=None)
async def submit_job(
    body: JobSubmission, site: SiteDep, usage: Annotated[Usage, Depends(per_ip_limit("jobs"))]
) -> JSONResponse:
    job = await site.jobs.submit(body.type, body.input)
    view = job_view(job)
    headers = {**usage.headers(), "Location": view["poll_url"]}
    return JSONResponse(view, status_code=202, headers=headers, media_type=JSON_UTF8)


@router.get("/api/jobs/{job_id}", summary="Job status, with result or error")
async def get_job(job_id: str, site: SiteDep) -> dict[str, Any]:
    return job_view(await site.jobs.get(job_id))


@router.get("/api/jobs", summary="Job status by ?id=")
@router.get("/api/jobs.php", summary="Job status by ?id= (alias)")
async def get_job_by_query(
    site: SiteDep, job_id: Annotated[str, Query(alias="id", min_length=1, description="A job_id.")]
) -> dict[str, Any]:
    return job_view(await site.jobs.get(job_id))


@router.post("/api/jobs/{job_id}/cancel", summary="Cancel a queued or running job")
@router.delete("/api/jobs/{job_id}", summary="Cancel a queued or running job (alias)")
async def cancel_job(job_id: str, site: SiteDep) -> dict[str, Any]:
    return job_view(await site.jobs.cancel(job_id))
