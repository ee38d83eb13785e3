"""A finished batch's files in OpenAI's line format, and its last status change.

Output file: one line per request answered 200. Error file: one line per other answer, and, for a
batch cancelled or expired, one per line that never ran (``response`` null, ``error`` with the code
``batch_cancelled`` or ``batch_expired``). Both are ordered by input line.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agent_server.batches.events import BatchCompleted, BatchFailed
from agent_server.batches.lines import line_token
from agent_server.batches.store import BatchStore
from agent_server.batches.tables import CANCELLED, COMPLETED, EXPIRED, BatchRecord, BatchResult
from agent_server.files.jsonl import split_lines
from agent_server.files.service import OUTPUT_PURPOSE, Files
from agent_server.foundation.errors import NotFound
from agent_server.foundation.events import EventBus

UNRUN = {CANCELLED: "batch_cancelled", EXPIRED: "batch_expired"}


class Finisher:
    def __init__(self, store: BatchStore, files: Files, events: EventBus, max_line: int) -> None:
        self.store, self.files, self.events, self.max_line = store, files, events, max_line

    async def finish(self, batch: BatchRecord, sources: tuple[str, ...], final: str, **values: Any) -> bool:
        """Write the files, then sources -> final; the files are dropped when another worker won."""
        output = await self._write(batch, self._answered(batch, ok=True), "output")
        errors = await self._write(batch, self._errors(batch, final), "errors")
        ids = {
            "output_file_id": output.id if output else None,
            "error_file_id": errors.id if errors else None,
        }
        if not await self.store.move(batch.id, sources, final, **ids, **values):
            for written in (output, errors):
                if written is not None:
                    await self.files.delete(batch.tenant_id, written.id)
            return False
        done = await self.store.find(batch.id)
        assert done is not None
        event = BatchCompleted if final == COMPLETED else BatchFailed
        await self.events.publish(
            event(
                tenant_id=done.tenant_id,
                occurred_at=self.store.clock.now(),
                batch_id=done.id,
                status=done.status,
                endpoint=done.endpoint,
                total=done.total,
                completed=done.completed,
                failed=done.failed,
                output_file_id=done.output_file_id,
                error_file_id=done.error_file_id,
            )
        )
        return True

    async def _write(self, batch: BatchRecord, lines: AsyncIterator[bytes], kind: str) -> Any:
        first = await anext(lines, None)
        if first is None:
            return None

        async def content() -> AsyncIterator[bytes]:
            yield first
            async for line in lines:
                yield line

        return await self.files.put(batch.tenant_id, OUTPUT_PURPOSE, f"{batch.id}_{kind}.jsonl", content())

    async def _answered(self, batch: BatchRecord, *, ok: bool) -> AsyncIterator[bytes]:
        async for result in self.store.results(batch.id):
            if (result.status_code == 200) == ok:
                yield _answer_line(result)

    async def _errors(self, batch: BatchRecord, final: str) -> AsyncIterator[bytes]:
        if final not in UNRUN:
            async for line in self._answered(batch, ok=False):
                yield line
            return
        # Merge by line number: the answered lines and the input lines that never ran.
        try:
            source = await self.files.get(batch.tenant_id, batch.input_file_id)
        except NotFound:  # deleted meanwhile: the lines that never ran cannot be named
            async for line in self._answered(batch, ok=False):
                yield line
            return
        results = self.store.results(batch.id)
        result = await anext(results, None)
        async for number, raw in split_lines(self.files.read(source), self.max_line):
            while result is not None and result.line < number:
                result = await anext(results, None)
            if result is not None and result.line == number:
                if result.status_code != 200:
                    yield _answer_line(result)
                continue
            custom_id = json.loads(raw).get("custom_id")
            token = line_token(batch.id, number)
            error = {"code": UNRUN[final], "message": f"The batch was {final} before this request ran."}
            yield _dump(
                {"id": f"batch_req_{token[:24]}", "custom_id": custom_id, "response": None, "error": error}
            )


def _answer_line(result: BatchResult) -> bytes:
    response = {"status_code": result.status_code, "request_id": result.request_id, "body": result.body}
    return _dump(
        {"id": result.request_id, "custom_id": result.custom_id, "response": response, "error": None}
    )


def _dump(item: dict[str, Any]) -> bytes:
    return json.dumps(item, separators=(",", ":")).encode() + b"\n"
