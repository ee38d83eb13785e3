"""Stored responses of the Responses API, through the official openai SDK: a response is stored
(unless ``store: false``) per organisation, read, listed by its input items and deleted; a
``previous_response_id`` puts the earlier conversation before the new input (the upstream gets it
whole); streams are stored from their final event; rows read as gone after the retention and the
job housekeeping deletes them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from sqlalchemy import func, select

from agent_server.gateway.response_tables import StoredResponse
from tests.gateway.conftest import MODEL, Harness, HarnessFactory, key_headers
from tests.gateway.test_keys_settings import create, sdk
from tests.llm.conftest import config
from tests.llm.recording_upstream import RESPONSE_ANSWER, RecordingUpstream

DAY = 86_400


async def key_of(h: Harness, admin: Any = None) -> str:
    response = await create(h, admin or await h.tenant("professional"))
    assert response.status_code == 201, response.text
    return response.json()["key"]


async def rows(h: Harness) -> int:
    async with h.gateway.db.session() as session:
        return int((await session.execute(select(func.count()).select_from(StoredResponse))).scalar_one())


async def test_a_response_is_stored_read_listed_and_deleted(harness: Harness) -> None:
    async with sdk(harness, await key_of(harness)) as client:
        created = await client.responses.create(model=MODEL, input="Remember the lighthouse")
        assert created.store is True
        read = await client.responses.retrieve(created.id)
        assert read.model_dump() == created.model_dump()
        items = [item async for item in client.responses.input_items.list(created.id)]
        assert len(items) == 1 and items[0].type == "message" and items[0].role == "user"  # type: ignore[union-attr]
        assert items[0].content[0].text == "Remember the lighthouse"  # type: ignore[union-attr]
        assert items[0].id  # every stored item has an id
        assert await client.responses.delete(created.id) is None  # the SDK reads no body
        with pytest.raises(openai.NotFoundError) as gone:
            await client.responses.retrieve(created.id)
        assert gone.value.code == "response_not_found"
        with pytest.raises(openai.NotFoundError):
            await client.responses.delete(created.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.input_items.list(created.id)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve("resp_never_made")


async def test_delete_answers_in_openai_shape_and_usage_rows_name_the_routes(harness: Harness) -> None:
    key = await key_of(harness)
    created = await harness.client.post(
        "/v1/responses", json={"model": MODEL, "input": "x"}, headers=key_headers(key)
    )
    rid = created.json()["id"]
    read = await harness.client.get(f"/v1/responses/{rid}", headers=key_headers(key))
    assert read.status_code == 200 and read.json() == created.json() and "x-ratelimit-limit" in read.headers
    deleted = await harness.client.delete(f"/v1/responses/{rid}", headers=key_headers(key))
    assert deleted.status_code == 200 and deleted.json() == {"id": rid, "object": "response", "deleted": True}
    missing = await harness.client.get(f"/v1/responses/{rid}/input_items", headers=key_headers(key))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "response_not_found"
    assert (await harness.client.get(f"/v1/responses/{rid}")).status_code == 401  # the key comes first
    await harness.gateway.usage.flush()
    from agent_server.gateway.tables import UsageRecord

    async with harness.gateway.db.session() as session:
        seen = [(r.endpoint, r.status) for r in (await session.execute(select(UsageRecord))).scalars()]
    assert seen[-4:] == [
        ("responses", 200),
        ("responses.retrieve", 200),
        ("responses.delete", 200),
        ("responses.input_items", 404),
    ]


async def test_store_false_keeps_nothing(harness: Harness) -> None:
    async with sdk(harness, await key_of(harness)) as client:
        unstored = await client.responses.create(model=MODEL, input="Forget this", store=False)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(unstored.id)
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model=MODEL, input="And?", previous_response_id=unstored.id)
        assert refused.value.code == "previous_response_not_found"
        assert refused.value.param == "previous_response_id"
    assert await rows(harness) == 0


async def test_previous_response_id_continues_the_conversation(harness: Harness) -> None:
    async with sdk(harness, await key_of(harness)) as client:
        first = await client.responses.create(model=MODEL, input="My name is Ada", instructions="Be brief.")
        alone = await client.responses.create(model=MODEL, input="What is my name?")
        second = await client.responses.create(
            model=MODEL, input="What is my name?", previous_response_id=first.id
        )
        assert second.previous_response_id == first.id and second.status == "completed"
        assert second.instructions is None  # instructions are not carried over (as OpenAI does)
        # The model read the earlier turn and its answer, then the new question.
        assert second.usage and alone.usage and second.usage.input_tokens > alone.usage.input_tokens
        items = [item async for item in client.responses.input_items.list(second.id, order="asc")]
        said = [(i.role, i.content[0].text) for i in items]  # type: ignore[union-attr]
        assert said == [
            ("user", "My name is Ada"),
            ("assistant", first.output_text),
            ("user", "What is my name?"),
        ]
        assert items[1].id == first.output[0].id  # the earlier output, as it was
        newest = await client.responses.input_items.list(second.id, limit=1)
        assert [i.id for i in newest.data] == [items[2].id] and newest.has_more  # desc by default, as OpenAI
        paged = [item.id async for item in client.responses.input_items.list(second.id, limit=1)]
        assert paged == [i.id for i in reversed(items)]  # the SDK follows the cursor page by page
        page = await client.responses.input_items.list(second.id, order="asc", limit=1, after=items[0].id)
        assert [i.id for i in page.data] == [items[1].id] and page.has_more is True
        third = await client.responses.create(model=MODEL, input="Thanks", previous_response_id=second.id)
        chained = [item async for item in client.responses.input_items.list(third.id, order="asc")]
        assert len(chained) == 5  # the whole conversation, whatever its length
        with pytest.raises(openai.BadRequestError) as bad:
            await client.responses.input_items.list(second.id, limit=0)
        assert bad.value.param == "limit"


async def test_a_stream_is_stored_from_its_final_event_and_names_its_chain(harness: Harness) -> None:
    async with sdk(harness, await key_of(harness)) as client:
        first = await client.responses.create(model=MODEL, input="Tell me about tides")
        stream = await client.responses.create(
            model=MODEL, input="And the moon?", previous_response_id=first.id, stream=True
        )
        events = [event async for event in stream]
        final = events[-1]
        assert final.type == "response.completed"
        assert events[0].response.previous_response_id == first.id  # type: ignore[union-attr]
        assert final.response.previous_response_id == first.id
        stored = await client.responses.retrieve(final.response.id)
        assert stored.output_text == final.response.output_text and stored.previous_response_id == first.id
        cut = await client.responses.create(
            model=MODEL, input="Tell me more", max_output_tokens=3, stream=True
        )
        incomplete = [event async for event in cut][-1]
        assert incomplete.type == "response.incomplete"
        kept = await client.responses.retrieve(incomplete.response.id)
        assert kept.status == "incomplete" and kept.output_text == incomplete.response.output_text


async def test_an_organisation_sees_only_its_own_responses(harness: Harness) -> None:
    admin = await harness.tenant("professional")
    async with sdk(harness, await key_of(harness, admin)) as owner:
        created = await owner.responses.create(model=MODEL, input="Our secret plan")
    async with sdk(harness, await key_of(harness, admin)) as colleague:  # another key, same organisation
        assert (await colleague.responses.retrieve(created.id)).id == created.id
    async with sdk(harness, await key_of(harness)) as stranger:
        with pytest.raises(openai.NotFoundError):
            await stranger.responses.retrieve(created.id)
        with pytest.raises(openai.NotFoundError):
            await stranger.responses.input_items.list(created.id)
        with pytest.raises(openai.NotFoundError):
            await stranger.responses.delete(created.id)
        with pytest.raises(openai.BadRequestError):
            await stranger.responses.create(model=MODEL, input="Tell me", previous_response_id=created.id)
    async with sdk(harness, await key_of(harness, admin)) as owner:
        assert (await owner.responses.retrieve(created.id)).id == created.id  # the stranger deleted nothing


async def test_responses_expire_after_the_retention_and_housekeeping_deletes_them(
    make_harness: HarnessFactory,
) -> None:
    async with make_harness(responses_retention_days=2) as h, sdk(h, await key_of(h)) as client:
        old = await client.responses.create(model=MODEL, input="Old news")
        h.clock.advance(DAY)
        fresh = await client.responses.create(model=MODEL, input="Fresh news")
        h.clock.advance(DAY + 1)  # old is past its 2 days, fresh is not
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(old.id)
        with pytest.raises(openai.BadRequestError):
            await client.responses.create(model=MODEL, input="More", previous_response_id=old.id)
        assert (await client.responses.retrieve(fresh.id)).id == fresh.id
        assert await rows(h) == 2
        await h.app.state.site.worker().housekeeping()  # the job worker's periodic sweep
        assert await rows(h) == 1
        assert (await client.responses.retrieve(fresh.id)).id == fresh.id


@pytest.fixture
def recorder() -> Iterator[RecordingUpstream]:
    with RecordingUpstream() as server:
        yield server


async def test_an_upstream_gets_the_whole_conversation_without_our_id(
    make_harness: HarnessFactory, recorder: RecordingUpstream
) -> None:
    upstreams = [config(recorder.base_url, "up", models={MODEL: "upstream-model-1"})]
    async with make_harness(mode="production", upstreams=upstreams) as h:
        async with sdk(h, await key_of(h)) as client:
            first = await client.responses.create(model=MODEL, input="Hi")
            assert first.id == RESPONSE_ANSWER["id"] and first.model == MODEL
            second = await client.responses.create(model=MODEL, input="Again", previous_response_id=first.id)
            assert second.previous_response_id == first.id
        sent = recorder.last("responses")
        assert "previous_response_id" not in sent
        assert sent["input"] == [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
            RESPONSE_ANSWER["output"][0],  # the upstream's own item, id and all
            {"role": "user", "content": "Again"},
        ]


@pytest.mark.postgres
async def test_stored_responses_on_postgresql(make_harness: HarnessFactory, postgres_url: str) -> None:
    async with make_harness(database_url=postgres_url, responses_retention_days=1) as h:
        key = await key_of(h)
        async with sdk(h, key) as client:
            first = await client.responses.create(model=MODEL, input="On PostgreSQL")
            second = await client.responses.create(model=MODEL, input="Still?", previous_response_id=first.id)
            items = [item async for item in client.responses.input_items.list(second.id, order="asc")]
            assert [i.id for i in items][:2] == [
                (await client.responses.input_items.list(first.id)).data[0].id,
                first.output[0].id,
            ]
            await client.responses.delete(first.id)
            with pytest.raises(openai.NotFoundError):
                await client.responses.retrieve(first.id)
            h.clock.advance(DAY)
            await h.app.state.site.worker().housekeeping()
            assert await rows(h) == 0
