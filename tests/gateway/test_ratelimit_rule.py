"""The one rule of the rate-limit headers on /v1 (docs/gateway.md): ``X-RateLimit-Reset`` is the Unix
time the key's whole allowance is back, ``Retry-After`` the seconds until the next request passes."""

from __future__ import annotations

import math
from pathlib import Path

from tests.gateway.conftest import Harness


async def test_reset_is_the_full_allowance_and_retry_after_the_next_request(harness: Harness) -> None:
    clock = harness.clock
    _, key = await harness.key(await harness.tenant("enterprise", rate_limit=3))  # 3 per 60 s: one per 20 s
    start = clock.now()
    for remaining in (2, 1, 0):
        admitted = await harness.chat(key)
        assert admitted.status_code == 200 and admitted.headers["X-RateLimit-Remaining"] == str(remaining)
    refused = await harness.chat(key)
    assert refused.status_code == 429
    reset = int(refused.headers["X-RateLimit-Reset"])
    assert reset == math.ceil(start + 60)  # all three units are back a minute after they were taken
    assert refused.headers["Retry-After"] == "20"  # but the next one is due an interval later
    assert int(refused.headers["Retry-After"]) <= reset - clock.now()

    clock.advance(19)
    early = await harness.chat(key)
    assert early.status_code == 429 and early.headers["Retry-After"] == "1"
    assert early.headers["X-RateLimit-Reset"] == str(reset)  # a refusal takes nothing
    clock.advance(1)
    due = await harness.chat(key)
    assert due.status_code == 200 and due.headers["X-RateLimit-Remaining"] == "0"

    full_again = int(due.headers["X-RateLimit-Reset"])
    assert full_again == math.ceil(clock.now() + 60)  # the bucket was empty again: 3 intervals
    clock.advance(full_again - clock.now())
    assert (await harness.chat(key)).headers["X-RateLimit-Remaining"] == "2"  # full: limit - this one


def test_the_documents_describe_the_limiter_that_runs() -> None:
    """The documents name GCRA and the header rule above; none describes the limiter as a fixed window
    (security.md compares GCRA with one, in tables and sentences that say so) or says a 429's
    Retry-After equals the reset."""
    root = Path(__file__).resolve().parents[2]
    texts = {
        path.name: path.read_text() for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    }
    for name, text in texts.items():
        flat = " ".join(text.split()).lower()
        if name != "security.md":
            assert "fixed window" not in flat.replace("not a fixed window", ""), name
        assert "retry-after equals" not in flat and "retry-after is the reset" not in flat, name
    assert (
        "GCRA" in texts["gateway.md"] and "GCRA" in texts["security.md"] and "GCRA" in texts["public-api.md"]
    )
