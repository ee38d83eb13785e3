"""The dashboard's batches page: a batch an API key created, its progress and files to download,
cancel from the page (audited), another tenant's file 404."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from tests.batches.conftest import chat_lines
from tests.conftest import BASE_URL
from tests.pages.dashboard import Dash, Person, dashboard_world, post_form


@pytest.fixture
async def dash(settings: Settings) -> AsyncIterator[Dash]:
    async with dashboard_world(settings) as world:
        yield world


async def api_key(dash: Dash, person: Person) -> str:
    db, now = dash.app.state.services.db, dash.clock.now()
    record, key = repo.new_key(now, person.tenant_id, "batches", ["chat", "files"], "test")
    await repo.add_key(db, record)
    return key


async def create_batch(dash: Dash, key: str, lines: int) -> dict:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(dash.app), base_url=BASE_URL) as api:
        upload = await api.post(
            "/v1/files",
            files={"file": ("in.jsonl", chat_lines(lines))},
            data={"purpose": "batch"},
            headers=headers,
        )
        assert upload.status_code == 200, upload.text
        body = {
            "input_file_id": upload.json()["id"],
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        }
        created = await api.post("/v1/batches", json=body, headers=headers)
        assert created.status_code == 200, created.text
        return created.json()


async def test_the_page_shows_a_batch_its_files_and_downloads_them(dash: Dash) -> None:
    person = await dash.person()
    batch = await create_batch(dash, await api_key(dash, person), 5)
    for _ in range(100):
        if (await dash.app.state.batches.get(person.tenant_id, batch["id"])).status == "completed":
            break
        await asyncio.sleep(0.05)
    browser = await dash.signed_in(person)
    shown = await browser.get("/app/batches")
    assert shown.status_code == 200 and f'data-batch-id="{batch["id"]}"' in shown.text
    assert "5 of 5 done" in shown.text and 'data-test="batch-output"' in shown.text
    assert 'href="/app/batches" data-test="nav-batches" aria-current="page"' in shown.text
    done = await dash.app.state.batches.get(person.tenant_id, batch["id"])
    output = await browser.get(f"/app/files/{done.output_file_id}/content")
    assert output.status_code == 200 and "attachment" in output.headers["content-disposition"]
    assert sorted(json.loads(line)["custom_id"] for line in output.text.splitlines()) == [
        f"req-{n}" for n in range(5)
    ]
    stranger = await dash.signed_in(await dash.person())
    assert (await stranger.get(f"/app/files/{done.output_file_id}/content")).status_code == 404
    assert batch["id"] not in (await stranger.get("/app/batches")).text


async def test_cancel_from_the_page(dash: Dash) -> None:
    person = await dash.person()  # Professional: 300 lines at once, then none while the clock stands
    batch = await create_batch(dash, await api_key(dash, person), 400)
    browser = await dash.signed_in(person)
    answer = await post_form(browser, "/app/batches", f"/app/batches/{batch['id']}/cancel")
    assert answer.status_code == 303 and answer.headers["location"] == f"/app/batches?cancelled={batch['id']}"
    for _ in range(100):
        if (await dash.app.state.batches.get(person.tenant_id, batch["id"])).status == "cancelled":
            break
        await asyncio.sleep(0.05)
    page = await browser.get(answer.headers["location"])
    assert "is cancelled" in page.text and 'data-test="batch-status">cancelled<' in page.text
    audit = await browser.get("/app/audit", params={"action": "batch.cancel"})
    assert batch["id"] in audit.text
