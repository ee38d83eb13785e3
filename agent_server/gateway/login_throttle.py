"""Password sign-in throttling that an attacker cannot turn against the account's owner.

A hard lockout ("10 failures lock the account for 15 minutes") lets anyone who knows an
administrator's e-mail lock them out. Instead, failures are counted per subject and, once a
subject has used its free attempts, each further attempt must wait a delay that doubles (1 s,
2 s, 4 s ... 15 min at most) and only one attempt per delay goes through, however many are sent
at once. The subjects:

- the account from this address (``pair``): what one guesser at one address can do;
- this address across all accounts (``address``): credential stuffing from one address;
- the account from addresses it never signed in from (``account``): guessing spread over many
  addresses. An address that signed in to the account before (within 30 days) skips this one,
  so a distributed attack never slows the owner at their usual address. During such an attack
  new addresses share one attempt per delay on that account (the owner on a new address waits
  with the attackers); nothing ever refuses the right password for good.

Failures are forgotten an hour after a subject's first one; a success clears its ``pair``. The
state lives in the KV (Redis when configured, shared by every process), keyed by digests (no
e-mail address in Redis). If the KV fails, sign-ins still work (passwords are still checked):
throttling fails open with a log line.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from agent_server.foundation.clock import Clock
from agent_server.foundation.errors import RateLimited
from agent_server.storage.kv import KV

log = logging.getLogger("agentgate.gateway")
T = TypeVar("T")
FREE_PER_PAIR = 10  # failures of one address on one account before delays start
FREE_PER_ADDRESS = 100  # failures of one address over all accounts (an office behind one NAT)
FREE_PER_ACCOUNT = 30  # failures on one account from addresses it never signed in from
FAILURE_WINDOW = 3600  # seconds a subject's failures are remembered, from its first one
FIRST_DELAY = 1.0
MAX_DELAY = 900.0
KNOWN_ADDRESS_SECONDS = 30 * 86_400


@dataclass(frozen=True)
class Subject:
    name: str  # "pair", "address" or "account", for the message and the log
    key: str
    free: int


@dataclass(frozen=True)
class Attempt:
    """One admitted sign-in attempt: the subjects its outcome is counted against."""

    subjects: tuple[Subject, ...]
    known_key: str


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def delay_after(failures: int, free: int) -> float:
    """Seconds the next attempt must wait after ``failures`` (0 while free attempts remain)."""
    if failures < free:
        return 0.0
    return min(MAX_DELAY, FIRST_DELAY * 2 ** min(failures - free, 20))


class LoginThrottle:
    def __init__(self, kv: KV, clock: Clock) -> None:
        self.kv, self.clock = kv, clock

    async def admit(self, email: str, address: str | None) -> Attempt:
        """Let this attempt through, or raise 429 with ``Retry-After`` while a delay runs."""
        account, where = _digest(email.strip().lower()), _digest(address or "unknown")
        known_key = f"login-known:{account}:{where}"
        subjects = [
            Subject("address", f"login:address:{where}", FREE_PER_ADDRESS),
            Subject("pair", f"login:pair:{account}:{where}", FREE_PER_PAIR),
        ]
        if await self._quietly(self.kv.get(known_key)) is None:
            subjects.append(Subject("account", f"login:account:{account}", FREE_PER_ACCOUNT))
        for subject in subjects:
            await self._pass_gate(subject)
        return Attempt(tuple(subjects), known_key)

    async def failed(self, attempt: Attempt) -> None:
        for subject in attempt.subjects:
            await self._quietly(self.kv.incr(f"{subject.key}:failures", ttl=FAILURE_WINDOW))

    async def succeeded(self, attempt: Attempt) -> None:
        for subject in attempt.subjects:
            if subject.name == "pair":
                await self._quietly(self.kv.delete(f"{subject.key}:failures"))
                await self._quietly(self.kv.delete(f"{subject.key}:gate"))
        await self._quietly(self.kv.set(attempt.known_key, b"1", ttl=KNOWN_ADDRESS_SECONDS))

    async def _pass_gate(self, subject: Subject) -> None:
        raw = await self._quietly(self.kv.get(f"{subject.key}:failures"))
        delay = delay_after(int(raw or 0), subject.free)
        if delay == 0:
            return
        # One attempt per delay: this one claims the gate, concurrent ones find it taken.
        now = self.clock.now()
        gate = f"{subject.key}:gate"
        claimed = await self._quietly(self.kv.set_if_absent(gate, repr(now + delay).encode(), ttl=delay))
        if claimed is not False:  # claimed, or the KV failed (fail open)
            return
        until = await self._quietly(self.kv.get(gate))
        wait = max(1, math.ceil(float(until) - now)) if until else 1
        raise RateLimited(
            f"Too many failed sign-ins {_WHERE[subject.name]}; retry in {wait} s.", retry_after=wait
        )

    @staticmethod
    async def _quietly(call: Awaitable[T]) -> T | None:
        try:
            return await call
        except Exception:
            log.warning("login throttle unavailable: the KV failed", exc_info=True)
            return None


_WHERE = {
    "pair": "for this account from this address (other addresses are not slowed down)",
    "address": "from this address",
    "account": "for this account from new addresses",
}
