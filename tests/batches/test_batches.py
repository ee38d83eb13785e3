"""/v1/batches with the official ``openai`` SDK: a batch runs to completed, embeddings too, cancel
mid-run stops new lines, and the refusals (other tenant, missing scope, bad endpoint)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from openai.types import Batch

from agent_server.foundation.settings import Settings
from agent_server.gateway import provision
from tests.batches.conftest import CHAT_MODEL, chat_lines, embedding_lines, new_key, sdk
from tests.conftest import LiveServer


async def wait_for(
    client: AsyncOpenAI, batch_id: str, statuses: set[str], seconds: float = 60, every: float = 0.2
) -> Batch:
    deadline = time.monotonic() + seconds
    while True:
        batch = await client.batches.retrieve(batch_id)
        if batch.status in statuses:
            return batch
        assert time.monotonic() < deadline, f"batch still {batch.status}: {batch.request_counts}"
        await asyncio.sleep(every)


async def lines_of(client: AsyncOpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    content = (await client.files.content(file_id)).content
    return [json.loads(line) for line in content.decode().splitlines()]


async def test_chat_batch_runs_every_line_once(live_server: LiveServer, settings: Settings) -> None:
    # 1,000 lines: on a plan whose limit lets the batch's share run them in seconds
    async with sdk(live_server, await new_key(settings, "enterprise", rate_limit=100_000)) as client:
        upload = await client.files.create(file=("chat.jsonl", chat_lines(1000)), purpose="batch")
        batch = await client.batches.create(
            input_file_id=upload.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"run": "nightly"},
        )
        assert batch.status == "validating" and batch.metadata == {"run": "nightly"}
        assert batch.request_counts is not None and batch.request_counts.total == 1000
        done = await wait_for(client, batch.id, {"completed", "failed"})
        assert done.status == "completed" and done.completed_at and done.in_progress_at
        assert done.request_counts is not None and done.request_counts.completed == 1000
        assert done.request_counts.failed == 0 and done.error_file_id is None
        output = await lines_of(client, done.output_file_id)
        assert sorted(line["custom_id"] for line in output) == sorted(f"req-{n}" for n in range(1000))
        for line in output:
            assert line["response"]["status_code"] == 200 and line["error"] is None
            answer = line["response"]["body"]["choices"][0]["message"]["content"]
            assert f"Line {line['custom_id'].removeprefix('req-')}" in answer  # each line's own answer
        listed = [b.id async for b in client.batches.list()]
        assert listed == [batch.id]


async def test_embeddings_batch(live_server: LiveServer, settings: Settings) -> None:
    async with sdk(live_server, await new_key(settings)) as client:
        upload = await client.files.create(file=("emb.jsonl", embedding_lines(60)), purpose="batch")
        batch = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/embeddings", completion_window="24h"
        )
        done = await wait_for(client, batch.id, {"completed", "failed"})
        assert done.status == "completed"
        output = await lines_of(client, done.output_file_id)
        assert sorted(line["custom_id"] for line in output) == sorted(f"emb-{n}" for n in range(60))
        assert all(line["response"]["body"]["data"][0]["embedding"] for line in output)


async def test_failed_lines_go_to_the_error_file(live_server: LiveServer, settings: Settings) -> None:
    content = chat_lines(5) + chat_lines(1, model="no-such-model").replace(b"req-0", b"bad-0")
    async with sdk(live_server, await new_key(settings)) as client:
        upload = await client.files.create(file=("mixed.jsonl", content), purpose="batch")
        batch = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        done = await wait_for(client, batch.id, {"completed", "failed"})
        assert done.request_counts is not None
        assert (done.request_counts.completed, done.request_counts.failed) == (5, 1)
        errors = await lines_of(client, done.error_file_id)
        assert [line["custom_id"] for line in errors] == ["bad-0"]
        assert errors[0]["response"]["status_code"] == 400
        assert errors[0]["response"]["body"]["error"]["code"] == "model_not_found"


async def test_cancel_mid_run_stops_new_lines(live_server: LiveServer, settings: Settings) -> None:
    # 60 requests per minute for the key: its batches get 30 at once, then one every 2 s; the polls
    # below take what the batch leaves of the key's live limit.
    tenant = await provision.create_tenant(settings, f"slow-{uuid.uuid4().hex[:8]}", "professional", 60)
    key = (await provision.create_key(settings, tenant.id, "slow", ["chat", "files"]))[1]
    async with sdk(live_server, key) as client:
        upload = await client.files.create(file=("many.jsonl", chat_lines(100)), purpose="batch")
        batch = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        running = await wait_for(client, batch.id, {"in_progress"}, seconds=10, every=0.5)
        deadline = time.monotonic() + 10
        while running.request_counts is None or running.request_counts.completed < 5:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.5)
            running = await client.batches.retrieve(batch.id)
        cancelling = await client.batches.cancel(batch.id)
        assert cancelling.status in {"cancelling", "cancelled"}
        started = time.monotonic()
        cancelled = await wait_for(client, batch.id, {"cancelled"}, seconds=5, every=0.5)
        assert time.monotonic() - started < 5
        counts = cancelled.request_counts
        assert counts is not None and 5 <= counts.completed < 100
        output = await lines_of(client, cancelled.output_file_id)
        errors = await lines_of(client, cancelled.error_file_id)
        assert len(output) == counts.completed
        assert {line["error"]["code"] for line in errors} == {"batch_cancelled"}
        ids = [line["custom_id"] for line in output + errors]
        assert sorted(ids) == sorted(f"req-{n}" for n in range(100))  # every line once
        await asyncio.sleep(1.5)
        assert (await client.batches.retrieve(batch.id)).request_counts == counts  # nothing ran after
        with pytest.raises(openai.ConflictError):
            done = await client.files.create(file=("one.jsonl", chat_lines(1)), purpose="batch")
            other = await client.batches.create(
                input_file_id=done.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            await wait_for(client, other.id, {"completed"}, every=0.5)
            await client.batches.cancel(other.id)


async def test_refusals(live_server: LiveServer, settings: Settings) -> None:
    async with sdk(live_server, await new_key(settings)) as owner:
        upload = await owner.files.create(file=("a.jsonl", chat_lines(2)), purpose="batch")
        batch = await owner.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        with pytest.raises(openai.BadRequestError) as window:
            await owner.batches.create(
                input_file_id=upload.id,
                endpoint="/v1/chat/completions",
                completion_window="1h",  # type: ignore[arg-type]
            )
        assert window.value.param == "completion_window"
        notes = await owner.files.create(file=("n.txt", b"hello"), purpose="user_data")
        with pytest.raises(openai.BadRequestError):
            await owner.batches.create(
                input_file_id=notes.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
        with pytest.raises(openai.BadRequestError) as mismatch:
            await owner.batches.create(
                input_file_id=upload.id, endpoint="/v1/embeddings", completion_window="24h"
            )
        assert mismatch.value.param == "endpoint" and "/v1/chat/completions" in mismatch.value.message
    async with sdk(live_server, await new_key(settings)) as stranger:
        with pytest.raises(openai.NotFoundError):
            await stranger.batches.retrieve(batch.id)
        with pytest.raises(openai.NotFoundError):
            await stranger.batches.cancel(batch.id)
        with pytest.raises(openai.NotFoundError):
            await stranger.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
    async with sdk(live_server, await new_key(settings, scopes=("files", "models"))) as files_only:
        mine = await files_only.files.create(file=("b.jsonl", chat_lines(2)), purpose="batch")
        with pytest.raises(openai.PermissionDeniedError):
            await files_only.batches.create(
                input_file_id=mine.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
    async with sdk(live_server, await new_key(settings, scopes=("chat", "models"))) as chat_only:
        with pytest.raises(openai.PermissionDeniedError) as denied:
            await chat_only.batches.list()
        assert denied.value.code == "insufficient_scope"


async def test_responses_batch_stores_each_response(live_server: LiveServer, settings: Settings) -> None:
    lines = [
        {
            "custom_id": f"r-{n}",
            "url": "/v1/responses",
            "body": {"model": CHAT_MODEL, "input": f"Question {n}"},
        }
        for n in range(10)
    ]
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    async with sdk(live_server, await new_key(settings)) as client:
        upload = await client.files.create(file=("responses.jsonl", content), purpose="batch")
        batch = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/responses", completion_window="24h"
        )
        done = await wait_for(client, batch.id, {"completed", "failed"})
        assert done.status == "completed"
        output = await lines_of(client, done.output_file_id)
        assert sorted(line["custom_id"] for line in output) == sorted(f"r-{n}" for n in range(10))
        first = output[0]["response"]["body"]
        assert first["object"] == "response" and first["status"] == "completed"
        stored = await client.responses.retrieve(first["id"])  # stored as a live call's would be
        assert stored.id == first["id"] and stored.output_text


async def test_a_revoked_key_fails_the_lines_left(live_server: LiveServer, settings: Settings) -> None:
    tenant = await provision.create_tenant(settings, f"rev-{uuid.uuid4().hex[:8]}", "professional", 60)
    record, key = await provision.create_key(settings, tenant.id, "revoked", ["chat", "files"])
    reader = (await provision.create_key(settings, tenant.id, "reader", ["files"]))[1]
    async with sdk(live_server, key) as client:
        upload = await client.files.create(file=("many.jsonl", chat_lines(100)), purpose="batch")
        batch = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        await wait_for(client, batch.id, {"in_progress"}, seconds=10, every=0.5)
    await provision.revoke_key(settings, record.id)
    async with sdk(live_server, reader) as client:  # the organisation's other key reads the batch
        done = await wait_for(client, batch.id, {"completed"}, seconds=15, every=0.5)
        counts = done.request_counts
        assert counts is not None and counts.completed < 100 and counts.completed + counts.failed == 100
        errors = await lines_of(client, done.error_file_id)
    assert len(errors) == counts.failed and {line["response"]["status_code"] for line in errors} == {401}
    assert all(line["id"].startswith("batch_req_") for line in errors)
