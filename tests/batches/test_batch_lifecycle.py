"""Batches and files on an app with a ManualClock over ASGI: batch lines billed at the plan's batch
discount, a batch past its window ``expired`` with what finished kept, a budget reached mid-batch,
the webhook event at the end, and files deleted after their retention."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import openai
import pytest

from tests.batches.conftest import chat_lines
from tests.gateway.conftest import HarnessFactory, make_harness  # noqa: F401  (the fixture)
from tests.gateway.test_keys_settings import create, sdk
from tests.gateway.test_spend import COMPLETION, PROMPT, priced
from tests.llm.fake_upstream import FakeUpstream

ACME = PROMPT * 250_000 + COMPLETION * 1_000_000  # one acme-chat-1 answer (test_spend.priced)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


async def wait_status(client, batch_id: str, statuses: set[str], seconds: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while (batch := await client.batches.retrieve(batch_id)).status not in statuses:
        assert time.monotonic() < deadline, batch.status
        await asyncio.sleep(0.1)
    return batch


async def test_batch_usage_is_priced_at_the_plan_discount(
    make_harness: HarnessFactory,  # noqa: F811
    upstream: FakeUpstream,
    tmp_path: Path,
) -> None:
    async with make_harness(mode="production", upstreams=[priced(upstream)]) as h:
        admin = await h.tenant("enterprise")  # batch_discount: 50 in plans.yaml
        key = (await create(h, admin, scopes=["chat", "files", "models"])).json()["key"]
        async with sdk(h, key) as client:
            upload = await client.files.create(
                file=("a.jsonl", chat_lines(4, "acme-chat-1")), purpose="batch"
            )
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            done = await wait_status(client, batch.id, {"completed", "failed"})
            assert done.status == "completed" and done.model_extra == {"discount_percent": 50}
            await client.chat.completions.create(
                model="acme-chat-1", messages=[{"role": "user", "content": "hi"}]
            )
        await h.gateway.usage.flush()
        with closing(sqlite3.connect(tmp_path / "agentgate.db")) as db:
            query = "SELECT endpoint, cost_micros FROM usage_records WHERE model = 'acme-chat-1' ORDER BY id"
            rows = db.execute(query).fetchall()
        assert sorted(rows) == sorted([("batch/chat", ACME // 2)] * 4 + [("chat", ACME)])
        logs = await h.client.get("/admin/logs?endpoint=batch/chat", headers=admin.headers)
        assert logs.status_code == 200, logs.text
        entries = logs.json()["data"]
        assert len(entries) == 4 and {e["cost_micros"] for e in entries} == {ACME // 2}


async def test_a_batch_past_its_window_expires_with_what_finished(make_harness: HarnessFactory) -> None:  # noqa: F811
    async with make_harness() as h:
        admin = await h.tenant("professional", rate_limit=6)  # batches: 3 lines, then one per 20 s
        key = (await create(h, admin, scopes=["chat", "files"])).json()["key"]
        async with sdk(h, key) as client:
            upload = await client.files.create(file=("a.jsonl", chat_lines(10)), purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            # Watched in the store: the batch's lines took what the key's limit had for this minute.
            deadline, store = time.monotonic() + 10, h.app.state.batches.store
            while (running := await store.find(batch.id)).completed < 3:
                assert time.monotonic() < deadline, running.status
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.6)  # a check of the slice has passed: no fourth line started
            assert (await store.find(batch.id)).completed == 3
            h.clock.advance(24 * 3600 + 1)
            deadline = time.monotonic() + 5
            while (ending := await store.find(batch.id)).status != "expired":
                assert time.monotonic() < deadline, ending.status
                await asyncio.sleep(0.1)
            expired = await client.batches.retrieve(batch.id)
            assert expired.expired_at and expired.request_counts and expired.request_counts.completed == 3
            output = (await client.files.content(expired.output_file_id)).content.decode().splitlines()  # type: ignore[arg-type]
            errors = (await client.files.content(expired.error_file_id)).content.decode().splitlines()  # type: ignore[arg-type]
            assert len(output) == 3 and len(errors) == 7
            assert {json.loads(line)["error"]["code"] for line in errors} == {"batch_expired"}


async def test_a_budget_reached_mid_batch_fails_the_lines_left_as_a_live_call(
    make_harness: HarnessFactory,  # noqa: F811
) -> None:
    async with make_harness() as h:
        admin = await h.tenant("professional")
        budget = {"period": "total", "max_tokens": 200}  # a few lines' worth
        created = await create(h, admin, scopes=["chat", "files"], budget=budget)
        assert created.status_code == 201, created.text
        async with sdk(h, created.json()["key"]) as client:
            upload = await client.files.create(file=("a.jsonl", chat_lines(40)), purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            done = await wait_status(client, batch.id, {"completed", "failed"})
            counts = done.request_counts
            assert counts is not None and 0 < counts.completed < 40 and counts.completed + counts.failed == 40
            errors = (await client.files.content(done.error_file_id)).content.decode().splitlines()  # type: ignore[arg-type]
            codes = {json.loads(line)["response"]["body"]["error"]["code"] for line in errors}
            assert codes == {"budget_exceeded"}
            with pytest.raises(openai.APIStatusError) as live:  # a live call of the key now: the same refusal
                await client.chat.completions.create(
                    model="agentgate-mock-small", messages=[{"role": "user", "content": "hi"}]
                )
            assert live.value.status_code == 402 and live.value.code == "budget_exceeded"


async def test_the_end_of_a_batch_is_a_webhook_event(make_harness: HarnessFactory) -> None:  # noqa: F811
    async with make_harness(webhook_worker=False) as h:  # the deliveries are read, not sent
        admin = await h.tenant("professional")
        hook = await h.client.post(
            "/admin/webhooks",
            json={"url": "http://127.0.0.1:9/hook", "events": ["batch.completed", "batch.failed"]},
            headers=admin.headers,
        )
        assert hook.status_code == 201, hook.text
        key = (await create(h, admin, scopes=["chat", "files"])).json()["key"]
        async with sdk(h, key) as client:
            upload = await client.files.create(file=("a.jsonl", chat_lines(3)), purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            await wait_status(client, batch.id, {"completed"})
        await h.app.state.services.events.drain()
        listed = await h.client.get(f"/admin/webhooks/{hook.json()['id']}/deliveries", headers=admin.headers)
        assert [d["event_type"] for d in listed.json()["data"]] == ["batch.completed"]


async def test_files_expire_after_the_retention_and_the_sweep_deletes_them(
    make_harness: HarnessFactory,  # noqa: F811
    tmp_path: Path,
) -> None:
    async with make_harness(files_retention_days=1) as h:
        admin = await h.tenant("professional")
        key = (await create(h, admin, scopes=["files"])).json()["key"]
        async with sdk(h, key) as client:
            kept = await client.files.create(file=("notes.txt", b"kept a day"), purpose="user_data")
            assert kept.expires_at - kept.created_at == 86_400
            assert (tmp_path / "files" / kept.id).is_file()  # the directory store of the embedded default
            h.clock.advance(86_400)
            with pytest.raises(openai.NotFoundError):
                await client.files.retrieve(kept.id)
        assert await h.app.state.files.purge() == 1
        assert not (tmp_path / "files" / kept.id).exists()


async def test_batches_take_at_most_their_share_of_the_key_limit(make_harness: HarnessFactory) -> None:  # noqa: F811
    async with make_harness() as h:  # the clock stands: no allowance comes back during the test
        admin = await h.tenant("professional", rate_limit=20)  # batches: 50 % of it, 10 lines
        key = (await create(h, admin, scopes=["chat", "files"])).json()["key"]
        async with sdk(h, key) as client:
            upload = await client.files.create(file=("a.jsonl", chat_lines(30)), purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
        store, deadline = h.app.state.batches.store, time.monotonic() + 10
        while (running := await store.find(batch.id)).completed < 10:
            assert time.monotonic() < deadline, running.completed
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # two checks of the slice: no eleventh line
        assert (await store.find(batch.id)).completed == 10
        # The live allowance keeps the rest: 20 - 2 (upload, create) - 10 (the batch) = 8 live calls.
        answers = [(await h.chat(key)).status_code for _ in range(9)]
        assert answers == [200] * 8 + [429]
