"""/v1/files with the official ``openai`` SDK: upload, list, retrieve, content, delete; the refusals."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import openai
import pytest
import yaml

from agent_server.foundation.settings import Settings
from agent_server.knowledge.pack import shipped_content_dir
from tests.batches.conftest import chat_lines, embedding_lines, new_key, sdk
from tests.conftest import LiveServer


async def test_upload_list_retrieve_read_delete(live_server: LiveServer, settings: Settings) -> None:
    content = chat_lines(20)
    async with sdk(live_server, await new_key(settings)) as client:
        created = await client.files.create(file=("requests.jsonl", content), purpose="batch")
        assert created.bytes == len(content) and created.purpose == "batch"
        assert created.filename == "requests.jsonl" and created.expires_at > created.created_at
        notes = await client.files.create(file=("notes.txt", b"anything at all"), purpose="user_data")
        assert (await client.files.retrieve(created.id)).id == created.id
        assert (await client.files.content(created.id)).content == content
        listed = [f.id async for f in client.files.list()]
        assert set(listed) == {created.id, notes.id}
        assert [f.id async for f in client.files.list(purpose="user_data")] == [notes.id]
        first = await client.files.list(limit=1)
        assert first.has_more and len(first.data) == 1
        rest = await client.files.list(limit=1, after=first.data[0].id)
        assert {first.data[0].id, rest.data[0].id} == {created.id, notes.id} and not rest.has_more
        deleted = await client.files.delete(notes.id)
        assert deleted.deleted and deleted.id == notes.id
        with pytest.raises(openai.NotFoundError):
            await client.files.retrieve(notes.id)


async def test_malformed_line_is_named(live_server: LiveServer, settings: Settings) -> None:
    content = chat_lines(3) + b'{"custom_id": "x", "url": "/v1/chat/completions"\n' + chat_lines(1)
    async with sdk(live_server, await new_key(settings)) as client:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.files.create(file=("bad.jsonl", content), purpose="batch")
        assert "Line 4" in refused.value.message and refused.value.param == "line 4"
        repeated = chat_lines(2) + chat_lines(1)
        with pytest.raises(openai.BadRequestError) as twice:
            await client.files.create(file=("twice.jsonl", repeated), purpose="batch")
        assert "Line 3" in twice.value.message and "req-0" in twice.value.message
        mixed = chat_lines(2) + embedding_lines(1)
        with pytest.raises(openai.BadRequestError) as two_urls:
            await client.files.create(file=("mixed.jsonl", mixed), purpose="batch")
        assert two_urls.value.param == "line 3" and "one endpoint" in two_urls.value.message
        assert [f async for f in client.files.list()] == []  # nothing half-written stays


async def test_other_tenants_file_is_404_and_scope_is_403(
    live_server: LiveServer, settings: Settings
) -> None:
    async with sdk(live_server, await new_key(settings)) as owner:
        created = await owner.files.create(file=("a.jsonl", chat_lines(2)), purpose="batch")
    async with sdk(live_server, await new_key(settings)) as stranger:
        with pytest.raises(openai.NotFoundError):
            await stranger.files.retrieve(created.id)
        with pytest.raises(openai.NotFoundError):
            await stranger.files.content(created.id)
        with pytest.raises(openai.NotFoundError):
            await stranger.files.delete(created.id)
    async with sdk(live_server, await new_key(settings, scopes=("chat", "models"))) as chat_only:
        with pytest.raises(openai.PermissionDeniedError) as denied:
            await chat_only.files.create(file=("a.jsonl", chat_lines(2)), purpose="batch")
        assert denied.value.code == "insufficient_scope"
    async with httpx.AsyncClient(base_url=live_server.url) as raw:
        headers = {"Authorization": f"Bearer {await new_key(settings)}"}
        bad_limit = await raw.get("/v1/files?limit=0", headers=headers)
        assert bad_limit.status_code == 400 and bad_limit.json()["error"]["param"] == "limit"
        not_multipart = await raw.post("/v1/files", json={"purpose": "batch"}, headers=headers)
        assert not_multipart.status_code == 400 and "multipart/form-data" in not_multipart.text


@pytest.fixture
def small_plan_settings(settings: Settings, tmp_path: Path) -> Settings:
    """The shipped content with the Professional plan's upload limit lowered to 4 KiB."""
    content = tmp_path / "content"
    shutil.copytree(shipped_content_dir(), content)
    plans = yaml.safe_load((content / "plans.yaml").read_text())
    for plan in plans["plans"]:
        if plan["id"] == "professional":
            plan["max_file_bytes"] = 4096
    (content / "plans.yaml").write_text(yaml.safe_dump(plans))
    return settings.model_copy(update={"content_dir": content})


async def test_upload_above_the_plan_limit_is_413(small_plan_settings: Settings) -> None:
    with LiveServer(small_plan_settings) as server:
        key = await new_key(small_plan_settings)
        async with sdk(server, key) as client:
            small = await client.files.create(file=("small.jsonl", chat_lines(2)), purpose="batch")
            assert small.bytes < 4096
            with pytest.raises(openai.APIStatusError) as refused:
                await client.files.create(file=("big.jsonl", chat_lines(200)), purpose="batch")
            assert refused.value.status_code == 413 and "4096 bytes" in refused.value.message
        # Sent in pieces without a length: counted as it streams, refused all the same.
        async with httpx.AsyncClient(base_url=server.url) as raw:

            async def pieces():  # type: ignore[no-untyped-def]
                yield b'--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
                yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.jsonl"\r\n\r\n'
                for _ in range(10):
                    yield b"x" * 1024
                yield b"\r\n--b--\r\n"

            response = await raw.post(
                "/v1/files",
                content=pieces(),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "multipart/form-data; boundary=b"},
            )
            assert response.status_code == 413, response.text
            assert response.json()["error"]["type"]


async def test_database_store_keeps_large_files_in_chunks(settings: Settings) -> None:
    """files_store=database: content in file_chunks (1 MiB rows), read back whole and in order."""
    chosen = settings.model_copy(update={"files_store": "database"})
    content = bytes(range(256)) * 12_000  # about 3 MiB: three chunks and a part
    with LiveServer(chosen) as server:
        async with sdk(server, await new_key(chosen)) as client:
            created = await client.files.create(file=("blob.bin", content), purpose="user_data")
            assert (await client.files.content(created.id)).content == content
            await client.files.delete(created.id)
            with pytest.raises(openai.NotFoundError):
                await client.files.content(created.id)
    assert not (chosen.data_dir / "files").exists()  # nothing went to the directory store
