"""Password hashing: argon2id at the OWASP minimum (m=19 MiB, t=2, p=1), off the event loop.

A verify costs ~40 ms of CPU, so it runs in a worker thread behind a semaphore sized to the CPU
count: a login storm queues instead of starving other requests. Unknown e-mails still pay one
verify against a dummy hash, so timing does not tell which accounts exist.
"""

from __future__ import annotations

import asyncio
import os
import weakref

import anyio.to_thread
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_LENGTH = 12  # the password rule's bounds (PasswordPolicy); verify_password also refuses longer input
MAX_BYTES = 1024  # argon2 would hash megabytes happily; refuse before spending CPU on it

HASHER_PARAMETERS = {"time_cost": 2, "memory_cost": 19_456, "parallelism": 1}
_hasher = PasswordHasher(**HASHER_PARAMETERS)
_dummy_hash: str | None = None
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _slots() -> asyncio.Semaphore:
    # One semaphore per event loop: an asyncio primitive must not be shared between loops.
    loop = asyncio.get_running_loop()
    slots = _semaphores.get(loop)
    if slots is None:
        slots = _semaphores[loop] = asyncio.Semaphore(max(1, os.cpu_count() or 1))
    return slots


async def hash_password(password: str) -> str:
    """Only hashes: what a new password must be is ``accounts.password_policy.PasswordPolicy``'s rule."""
    async with _slots():
        return await anyio.to_thread.run_sync(_hasher.hash, password)


def _verify(stored: str | None, password: str) -> bool:
    global _dummy_hash
    if stored is None:
        _dummy_hash = _dummy_hash or _hasher.hash("not a real password, only spends the time")
        stored = _dummy_hash
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


async def verify_password(stored: str | None, password: str) -> bool:
    """True when ``password`` matches ``stored``; ``stored=None`` (no such user) costs the same and is False."""
    if len(password.encode()) > MAX_BYTES:
        return False
    async with _slots():
        ok = await anyio.to_thread.run_sync(_verify, stored, password)
    return ok and stored is not None


def needs_rehash(stored: str) -> bool:
    return _hasher.check_needs_rehash(stored)
