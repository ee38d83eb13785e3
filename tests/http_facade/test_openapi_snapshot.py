"""``/openapi.json`` is byte-identical to the stored copy: a change of layout or of an import must not
change the contract. A deliberate change of the API regenerates the copy:
``AGENTGATE_UPDATE_OPENAPI_SNAPSHOT=1 pytest tests/http_facade/test_openapi_snapshot.py``."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

SNAPSHOT = Path(__file__).parent / "openapi_snapshot.json"


async def test_openapi_json_is_byte_identical_to_the_stored_copy(client: httpx.AsyncClient) -> None:
    response = await client.get("/openapi.json")
    assert response.status_code == 200, response.text
    if os.environ.get("AGENTGATE_UPDATE_OPENAPI_SNAPSHOT") == "1":
        SNAPSHOT.write_bytes(response.content)
    stored = SNAPSHOT.read_bytes()
    assert response.content == stored, "/openapi.json differs from tests/http_facade/openapi_snapshot.json"
