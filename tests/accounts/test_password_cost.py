"""Passwords are hashed with argon2id at the OWASP minimum (m=19 MiB, t=2, p=1).

The in-process apps of the other tests hash at argon2's lowest cost (tests/conftest.py), so the
service's own cost is checked here, in a process of its own as `agentgate serve` runs it.
"""

from __future__ import annotations

import subprocess
import sys

from agent_server.gateway.passwords import HASHER_PARAMETERS

SCRIPT = """
import asyncio
from agent_server.gateway.passwords import hash_password, needs_rehash, verify_password
stored = asyncio.run(hash_password("violet-harbour-lantern-42"))
assert asyncio.run(verify_password(stored, "violet-harbour-lantern-42"))
assert not needs_rehash(stored)
print(stored)
"""


def test_the_service_hashes_with_argon2id_at_the_owasp_cost() -> None:
    assert HASHER_PARAMETERS == {"time_cost": 2, "memory_cost": 19_456, "parallelism": 1}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("$argon2id$v=19$m=19456,t=2,p=1$")


def test_a_hash_of_a_lower_cost_is_rehashed_at_the_next_sign_in() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from argon2 import PasswordHasher\n"
         "from agent_server.gateway.passwords import needs_rehash\n"
         "print(needs_rehash(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash('x' * 12)))"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
