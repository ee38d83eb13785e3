"""Jobs end to end: submit, run via the registry, poll both ways, fail with the envelope, cancel
(queued and running), 409 on finished jobs, expiry after 1800 s, and recovery after a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.knowledge.pack import shipped_content_dir
from http_facade.app import create_app
from tests.conftest import BASE_URL, running
from tests.site.conftest import assert_envelope, site_of, wait_for_job


async def submit(
    client: httpx.AsyncClient,
    job_type: str,
    job_input: dict | None = None,
    path: str = "/api/jobs.php",
    **headers: str,
) -> httpx.Response:
    return await client.post(path, json={"type": job_type, "input": job_input or {}}, headers=headers)


@pytest.mark.parametrize("backend", ["memory", "production"], indirect=True)
async def test_ask_job_runs_and_is_polled_both_ways(web: httpx.AsyncClient) -> None:
    response = await submit(web, "ask", {"query": "How do I rotate my API key?"})
    assert response.status_code == 202, response.text
    created = response.json()
    job_id = created["job_id"]
    assert job_id.startswith("job_") and created["status"] == "queued"
    assert created["poll_url"] == f"/api/jobs?id={job_id}" == response.headers["Location"]
    assert response.headers["RateLimit-Limit"] == "60;w=3600"
    done = await wait_for_job(web, job_id)
    assert done["status"] == "succeeded" and done["result"]["route"] == "faq" and "error" not in done
    assert (await web.get(created["poll_url"])).json() == done
    assert (await web.get(f"/api/jobs.php?id={job_id}")).json() == done
    assert_envelope(await web.get("/api/jobs"), 400, "VALIDATION_ERROR")


async def test_faq_lookup_job_and_the_alias_path(web: httpx.AsyncClient) -> None:
    response = await submit(web, "faq_lookup", {"query": "rate limits", "limit": 2}, path="/api/jobs")
    done = await wait_for_job(web, response.json()["job_id"])
    assert done["status"] == "succeeded" and 1 <= len(done["result"]["results"]) <= 2


async def test_invalid_jobs_are_refused_at_submission(web: httpx.AsyncClient) -> None:
    assert assert_envelope(await submit(web, "mine_bitcoin"), 400, "VALIDATION_ERROR")["param"] == "type"
    assert assert_envelope(await submit(web, "ask", {}), 400, "VALIDATION_ERROR")["param"] == "input.query"
    bad_limit = await submit(web, "faq_lookup", {"query": "x", "limit": 99})
    assert assert_envelope(bad_limit, 400, "VALIDATION_ERROR")["param"] == "input.limit"
    assert (
        assert_envelope(await submit(web, "kb_refresh", {"force": True}), 400, "VALIDATION_ERROR")["param"]
        == "input"
    )


@pytest.fixture
def content_dir(tmp_path: Path, configure: dict[str, Any]) -> Path:
    folder = tmp_path / "content"
    folder.mkdir()
    configure.update(content_dir=folder)
    return folder


def add_faq_entry(folder: Path) -> None:
    document = yaml.safe_load((shipped_content_dir() / "faq.yaml").read_text(encoding="utf-8"))
    document["faq"].append(
        {
            "id": "faq-zeppelin",
            "question": "Can I ride a zeppelin to your office?",
            "answer": "Zeppelins land on Tuesdays only.",
            "tags": ["zeppelin"],
        }
    )
    (folder / "faq.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")


async def test_kb_refresh_rebuilds_the_indexes_from_the_content_directory(
    content_dir: Path, web: httpx.AsyncClient
) -> None:
    before = await wait_for_job(
        web, (await submit(web, "faq_lookup", {"query": "zeppelin"})).json()["job_id"]
    )
    assert before["result"]["results"] == []
    add_faq_entry(content_dir)
    refreshed = await wait_for_job(web, (await submit(web, "kb_refresh")).json()["job_id"])
    assert refreshed["status"] == "succeeded" and refreshed["result"]["revision"] == 2
    shipped = yaml.safe_load((shipped_content_dir() / "faq.yaml").read_text(encoding="utf-8"))["faq"]
    assert refreshed["result"]["sizes"]["faq"] == len(shipped) + 1
    after = await wait_for_job(web, (await submit(web, "faq_lookup", {"query": "zeppelin"})).json()["job_id"])
    assert after["result"]["results"][0]["id"] == "faq-zeppelin"


async def test_kb_refresh_with_a_broken_pack_fails_with_the_envelope(
    content_dir: Path, web: httpx.AsyncClient
) -> None:
    (content_dir / "faq.yaml").write_text("faq: [{id: 1}]\n", encoding="utf-8")
    failed = await wait_for_job(web, (await submit(web, "kb_refresh")).json()["job_id"])
    assert failed["status"] == "failed" and "result" not in failed
    error = failed["error"]["error"]
    assert error["code"] == "CONTENT_INVALID" and error["type"] == "server_error"
    assert str(content_dir) not in error["message"]  # server paths stay in the log


@pytest.fixture
def unreachable_weather(configure: dict[str, Any]) -> None:
    closed = "http://127.0.0.1:9"
    configure.update(weather_provider="open_meteo", weather_base_url=closed, geocoding_base_url=closed)


@pytest.mark.usefixtures("unreachable_weather")
async def test_a_job_whose_tool_raises_fails_with_the_error_envelope(web: httpx.AsyncClient) -> None:
    response = await submit(web, "ask", {"query": "What is the weather in Berlin?"})
    failed = await wait_for_job(web, response.json()["job_id"])
    assert failed["status"] == "failed"
    error = failed["error"]["error"]
    assert error["code"] == "UPSTREAM_ERROR" and "weather provider" in error["message"]
    assert error["documentation_url"].startswith(BASE_URL)


@pytest.fixture
def no_worker(configure: dict[str, Any]) -> None:
    configure.update(job_worker="none")  # jobs wait for a separate worker, so they stay queued


@pytest.mark.usefixtures("no_worker")
async def test_cancel_queued_and_running_jobs_then_409(web: httpx.AsyncClient, site_app: FastAPI) -> None:
    queued = (await submit(web, "ask", {"query": "hello"})).json()["job_id"]
    cancelled = await web.post(f"/api/jobs/{queued}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = assert_envelope(await web.post(f"/api/jobs/{queued}/cancel"), 409, "CONFLICT")
    assert "already cancelled" in again["message"]
    running_id = (await submit(web, "faq_lookup", {"query": "keys"})).json()["job_id"]
    store = site_of(site_app).jobs.store
    assert await store.claim(running_id) is not None  # a worker elsewhere took it
    assert (await web.get(f"/api/jobs/{running_id}")).json()["status"] == "running"
    assert (await web.delete(f"/api/jobs/{running_id}")).json()["status"] == "cancelled"
    assert await store.finish(running_id, result={"late": True}) is False  # the late result is dropped
    assert "result" not in (await web.get(f"/api/jobs/{running_id}")).json()
    assert_envelope(await web.delete("/api/jobs/job_nope"), 404, "NOT_FOUND")


async def test_cancelling_a_running_job_stops_its_handler(web: httpx.AsyncClient, site_app: FastAPI) -> None:
    runner = site_of(site_app).jobs.runner
    started, stopped = asyncio.Event(), asyncio.Event()

    async def slow(_: dict[str, Any]) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return {}

    runner.handlers["kb_refresh"] = slow
    job_id = (await submit(web, "kb_refresh")).json()["job_id"]
    await asyncio.wait_for(started.wait(), 5)
    assert (await web.delete(f"/api/jobs/{job_id}")).json()["status"] == "cancelled"
    await asyncio.wait_for(stopped.wait(), 5)
    assert (await web.get(f"/api/jobs/{job_id}")).json()["status"] == "cancelled"


@pytest.mark.parametrize("backend", ["memory", "production"], indirect=True)
async def test_finished_jobs_cannot_be_cancelled_and_expire_after_1800_s(
    web: httpx.AsyncClient, clock: ManualClock
) -> None:
    job_id = (await submit(web, "faq_lookup", {"query": "billing"})).json()["job_id"]
    await wait_for_job(web, job_id)
    assert (
        "already succeeded"
        in assert_envelope(await web.post(f"/api/jobs/{job_id}/cancel"), 409, "CONFLICT")["message"]
    )
    clock.advance(1799)
    assert (await web.get(f"/api/jobs?id={job_id}")).status_code == 200
    clock.advance(1)
    assert "expired" in assert_envelope(await web.get(f"/api/jobs?id={job_id}"), 404, "NOT_FOUND")["message"]
    assert_envelope(await web.get(f"/api/jobs/{job_id}"), 404, "NOT_FOUND")
    assert_envelope(await web.delete(f"/api/jobs/{job_id}"), 404, "NOT_FOUND")


async def test_jobs_left_by_a_crashed_process_run_after_restart(tmp_path: Path, clock: ManualClock) -> None:
    settings = Settings(data_dir=tmp_path, public_base_url=BASE_URL, redis_url=None, database_url=None)
    first = create_app(settings.model_copy(update={"job_worker": "none"}), clock=clock)
    async with running(first):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(first), base_url=BASE_URL) as client:
            queued = (await submit(client, "faq_lookup", {"query": "keys"})).json()["job_id"]
            interrupted = (await submit(client, "ask", {"query": "How do I rotate my API key?"})).json()[
                "job_id"
            ]
        assert await site_of(first).jobs.store.claim(interrupted) is not None  # "running" when it died
    second = create_app(settings, clock=clock)  # the in-memory queue of the first process is gone
    transport = httpx.ASGITransport(second)
    async with running(second), httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        for job_id in (queued, interrupted):
            assert (await wait_for_job(client, job_id))["status"] == "succeeded"


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_a_separate_worker_runs_jobs_from_the_shared_queue(
    site_settings: Settings, clock: ManualClock
) -> None:
    """The server only enqueues (job_worker=none); another "process" (its own services, as
    ``agentgate worker`` builds them) takes the ids from Redis and runs the jobs."""
    from agent_server.capabilities.services import build_services, close_services
    from agent_server.site.build import build_site
    from tools import build_registry

    server = create_app(site_settings.model_copy(update={"job_worker": "none"}), clock=clock)
    transport = httpx.ASGITransport(server)
    async with running(server), httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        job_id = (await submit(client, "faq_lookup", {"query": "keys"})).json()["job_id"]
        assert (await client.get(f"/api/jobs/{job_id}")).json()["status"] == "queued"
        services = build_services(site_settings, clock)
        worker = asyncio.create_task(build_site(services, build_registry(site_settings)).serve_jobs())
        try:
            assert (await wait_for_job(client, job_id))["status"] == "succeeded"
        finally:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
            await close_services(services)
