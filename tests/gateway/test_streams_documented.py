"""Every event stream of the gateway is what ``/openapi.json`` says: its media type is declared for the
200 of the operation, and each event, read as an EventSource client reads it, matches the schema."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.gateway.conftest import MODEL, Harness, chat_body, key_headers

SSE = "text/event-stream"
STREAMS = [
    ("/v1/chat/completions", chat_body(stream=True)),
    ("/v2/chat/completions", chat_body(stream=True)),
    ("/v1/completions", {"model": MODEL, "prompt": "Hello", "stream": True}),
    ("/v1/responses", {"model": MODEL, "input": "Hello", "stream": True}),
    ("/v1/messages", {**chat_body(), "max_tokens": 64, "stream": True}),
]


def events(text: str) -> list[dict[str, Any]]:
    """The events of a stream as the WHATWG EventSource model (and schemathesis) reads them."""
    found = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, Any] = {}
        data = []
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            if not name:  # a comment such as a keep-alive ping
                continue
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name in ("event", "id"):
                fields[name] = value
            elif name == "retry":
                fields[name] = int(value)
        if data:
            found.append({"event": "message", **fields, "data": "\n".join(data)})
    return found


@pytest.mark.parametrize(("path", "body"), STREAMS)
async def test_a_streamed_answer_is_declared_and_every_event_matches(
    harness: Harness, path: str, body: dict[str, Any]
) -> None:
    _, key = await harness.key(await harness.tenant("enterprise"))
    response = await harness.client.post(path, json=body, headers=key_headers(key))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].split(";")[0] == SSE

    doc = (await harness.client.get("/openapi.json")).json()
    content = doc["paths"][path]["post"]["responses"]["200"]["content"]
    assert SSE in content, f"{path} streams but its 200 declares only {sorted(content)}"
    schema = {**content[SSE]["schema"], "components": doc["components"]}  # its $ref resolves here
    validator = jsonschema.Draft202012Validator(schema)
    streamed = events(response.text)
    assert streamed
    for event in streamed:
        validator.validate(event)
