"""A stream running on a key whose rotation overlap ends is cut like a revoked key's: the in-band
401 event and ``[DONE]`` within a second of the end (real uvicorn, real time: the overlap is 2 s of a
stream of more than five)."""

from __future__ import annotations

import json
import time

import httpx

from agent_server.foundation.settings import Settings
from agent_server.gateway.relay import KEY_CHECK_SECONDS
from tests.conftest import LiveServer
from tests.gateway.test_stream_revocation import BODY, admin_and_key, settings, slow_upstream
from tests.llm.recording_upstream import RecordingUpstream

__all__ = ["settings", "slow_upstream"]  # the fixtures of the stream revocation tests
OVERLAP = 2


async def test_a_stream_on_the_old_key_is_cut_when_the_overlap_ends(
    live_server: LiveServer, settings: Settings, slow_upstream: RecordingUpstream
) -> None:
    admin, key_id, key = await admin_and_key(settings, live_server)
    lines: list[str] = []
    async with httpx.AsyncClient(base_url=live_server.url, timeout=10) as client:
        headers = {"Authorization": f"Bearer {key}"}
        async with client.stream("POST", "/v1/chat/completions", json=BODY, headers=headers) as response:
            assert response.status_code == 200
            events = response.aiter_lines()
            async for line in events:
                lines.append(line)
                if '"content":"Hi"' in line:
                    break  # the stream runs: rotate its key with an overlap now
            rotated = await client.post(
                "/admin/keys/rotate", json={"key_id": key_id, "overlap_seconds": OVERLAP}, headers=admin
            )
            assert rotated.status_code == 201, rotated.text
            ends = time.monotonic() + OVERLAP
            lines += [line async for line in events]
            cut = time.monotonic()
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    assert json.loads(data[-2])["error"]["code"] == "invalid_api_key"
    assert ends - 0.5 <= cut < ends + KEY_CHECK_SECONDS + 1.0  # served through the overlap, then cut
    assert slow_upstream.stream_ended.wait(2) and not slow_upstream.stream_finished
