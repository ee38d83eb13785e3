"""Prometheus metrics with ``agentgate serve --workers 2``: every scrape, whichever worker answers
it, reports the totals of both; the exposition is refused without the metrics token."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.operability.served import chat_body, serving, workers_started

pytestmark = pytest.mark.redis
TOKEN = "metrics-token-" + uuid.uuid4().hex
CHAT = "/v1/chat/completions"


def families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def chat_requests(samples: list) -> float:
    return sum(
        s.value
        for s in samples
        if s.labels["route"] == CHAT and s.labels["status"] == "200" and s.name.endswith("_total")
    )


async def test_every_scrape_reports_the_totals_of_both_workers(tmp_path: Path, redis_url: str) -> None:
    env = {
        "AGENTGATE_REDIS_URL": redis_url,
        "AGENTGATE_KV_PREFIX": f"ops-prom-{uuid.uuid4().hex[:8]}:",
        "AGENTGATE_METRICS_TOKEN": TOKEN,
        "AGENTGATE_METRICS_FLUSH_SECONDS": "0.2",
        "AGENTGATE_LOG_FORMAT": "json",
        "AGENTGATE_ACCESS_LOG": "true",
    }
    with serving(tmp_path, workers=2, **env) as server:
        key = await server.key()
        limits = httpx.Limits(max_keepalive_connections=0, max_connections=50)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=30) as client:
            await workers_started(client, 2, auth)
            answers = await asyncio.gather(
                *(
                    client.post(CHAT, json=chat_body(), headers={"Authorization": f"Bearer {key}"})
                    for _ in range(50)
                )
            )
            assert [a.status_code for a in answers] == [200] * 50
            # Each worker shares its counts every 0.2 s: wait for the first scrape that sees them all.
            deadline = time.monotonic() + 10
            while True:
                first = await client.get("/metrics/prometheus", headers=auth)
                if chat_requests(families(first.text)["agentgate_http_requests"]) == 50:
                    break
                assert time.monotonic() < deadline, first.text
                await asyncio.sleep(0.1)
            scrapes = [await client.get("/metrics/prometheus", headers=auth) for _ in range(12)]
            per_process = [(await client.get("/metrics/")).json() for _ in range(12)]
            refusals = [
                await client.get("/metrics/prometheus"),
                await client.get("/metrics/prometheus", headers={"Authorization": "Bearer wrong"}),
                await client.get("/metrics/prometheus", headers={"Authorization": f"Basic {TOKEN}"}),
            ]
        served_by = {line for line in server.log_lines() if '"path": "/v1/chat/completions"' in line}

    for scrape in scrapes:
        assert scrape.status_code == 200
        assert scrape.headers["content-type"].startswith("text/plain; version=0.0.4")
        metrics = families(scrape.text)
        assert chat_requests(metrics["agentgate_http_requests"]) == 50
        assert [s.value for s in metrics["agentgate_metrics_processes"]] == [2]
        durations = {
            s.name: s.value
            for s in metrics["agentgate_http_request_duration_seconds"]
            if s.labels["route"] == CHAT
        }
        assert durations["agentgate_http_request_duration_seconds_count"] == 50
        tokens = {
            s.labels["kind"]: s.value for s in metrics["agentgate_llm_tokens"] if s.name.endswith("_total")
        }
        assert tokens["input"] > 0 and tokens["output"] > 0
    # Both workers served chat requests (each access line names its pid), so the totals above add
    # up two processes: the per-process JSON document never sees all 50 at once.
    assert len({line.split('"pid": ')[1].split(",")[0] for line in served_by}) == 2
    for doc in per_process:
        chat = sum(r["requests"] for r in doc["routes"] if r["route"] == CHAT)
        assert 0 < chat < 50
    for refusal in refusals:
        assert refusal.status_code == 401
        assert refusal.headers["WWW-Authenticate"].startswith("Bearer")
        assert refusal.json()["error"]["code"] == "INVALID_METRICS_TOKEN"  # the public-site envelope


def counter_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the counters and histograms of one scrape, by name and labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        if f.type in ("counter", "histogram")
        for s in f.samples
        if not s.name.endswith("_created")
    }


async def test_no_counter_ever_decreases_whichever_worker_answers(tmp_path: Path, redis_url: str) -> None:
    """Scrapes during and after traffic, answered by either worker (a connection each), between the
    workers' flushes: a counter that went down would read as a reset to Prometheus."""
    env = {
        "AGENTGATE_REDIS_URL": redis_url,
        "AGENTGATE_KV_PREFIX": f"ops-mono-{uuid.uuid4().hex[:8]}:",
        "AGENTGATE_METRICS_TOKEN": TOKEN,
        "AGENTGATE_METRICS_FLUSH_SECONDS": "5",  # long: scrapes fall between the periodic flushes
    }
    with serving(tmp_path, workers=2, **env) as server:
        key = await server.key()
        limits = httpx.Limits(max_keepalive_connections=0, max_connections=50)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=30) as client:
            await workers_started(client, 2, auth)

            async def traffic() -> None:
                for _ in range(8):
                    batch = [client.post(CHAT, json=chat_body(), headers=headers) for _ in range(10)]
                    assert {a.status_code for a in await asyncio.gather(*batch)} == {200}

            async def scrape() -> str:
                answer = await client.get("/metrics/prometheus", headers=auth)
                assert answer.status_code == 200
                return answer.text

            running = asyncio.create_task(traffic())
            scrapes = []
            while not running.done() or len(scrapes) < 12:
                scrapes.append(await scrape())
            await running
            # After the traffic: at least 8 more, until one sees all 80 (within one flush interval).
            deadline = time.monotonic() + 20
            for n in itertools.count():
                scrapes.append(await scrape())
                seen = chat_requests(families(scrapes[-1])["agentgate_http_requests"])
                if n >= 7 and seen == 80:
                    break
                assert time.monotonic() < deadline, seen

    assert len(scrapes) >= 20
    previous = counter_samples(scrapes[0])
    for n, text in enumerate(scrapes[1:], 1):
        current = counter_samples(text)
        went_down = {k: (v, current.get(k, 0.0)) for k, v in previous.items() if current.get(k, 0.0) < v}
        assert not went_down, f"scrape {n}: {went_down}"
        previous = current
