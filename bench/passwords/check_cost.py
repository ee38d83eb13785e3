"""What one offline password check costs (``agent_server.accounts.breach.assess``), and the list's size.

    .venv/bin/python bench/passwords/check_cost.py [passwords_per_kind]

Builds a fixed corpus (seeded) of five kinds: listed passwords with predictable changes, random
strings of 12-32 characters, passphrases of 3-5 words, long passwords (100-1024 bytes) and
substitution-heavy strings (zxcvbn's slowest input), times ``assess`` on each (wall time of this
process, one thread) and prints median, p99 and max per kind and overall, what was refused, the
whole ``PasswordPolicy.check`` (offline) over the same corpus, and zxcvbn without our bounds. Not a test: timing is not asserted anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from agent_server.accounts import breach
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.settings import Settings

T = TypeVar("T")
SUBSTITUTIONS = "4@8({[<3691!|70$5+%2"
PRINTABLE = "".join(chr(c) for c in range(33, 127))
WORDS = ["admin@acme.example", "Acme", "agentgate"]


def corpus(rng: random.Random, per_kind: int) -> dict[str, list[str]]:
    listed = [word for word in breach.breach_list() if word.isalpha() and len(word) >= 6]
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    english = FREQUENCY_LISTS["english_wikipedia"][:20_000]

    def changed() -> str:
        word = rng.choice(listed)
        word = rng.choice([word, word.capitalize(), word.upper(), word.replace("a", "@").replace("o", "0")])
        tail = rng.choice(["1234", "2024!!", "!", "123456", "19851231", "#1", word])
        return (word + tail).ljust(12, "!")

    def random_string() -> str:
        return "".join(rng.choice(PRINTABLE) for _ in range(rng.randint(12, 32)))

    def passphrase() -> str:
        return rng.choice(" -_.").join(rng.choice(english) for _ in range(rng.randint(3, 5)))

    def long_one() -> str:
        return "".join(rng.choice(PRINTABLE) for _ in range(rng.randint(100, 1024)))

    def substitution_heavy() -> str:
        unit = "".join(rng.choice(SUBSTITUTIONS) for _ in range(rng.randint(8, 16)))
        return (unit * 8)[: rng.randint(16, 64)]

    makers: dict[str, Callable[[], str]] = {
        "listed+changes": changed,
        "random 12-32": random_string,
        "passphrase 3-5 words": passphrase,
        "long 100-1024": long_one,
        "substitution-heavy": substitution_heavy,
    }
    return {kind: [make() for _ in range(per_kind)] for kind, make in makers.items()}


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """(milliseconds, result) of one call."""
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000, result


def line(label: str, times: list[float], refused: Counter[str | None]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    verdicts = ", ".join(f"{reason or 'accepted'} {count}" for reason, count in refused.most_common())
    return (
        f"{label:22} n={len(times):5}  median {statistics.median(times):6.2f} ms  p99 {p99:6.2f} ms  "
        f"max {ordered[-1]:6.2f} ms  | {verdicts}"
    )


def main(per_kind: int) -> None:
    tracemalloc.start()
    loaded = timed(breach.breach_list)[0]
    memory = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    listed = breach.breach_list()
    from zxcvbn import frequency_lists, zxcvbn

    module_bytes = Path(frequency_lists.__file__).stat().st_size
    list_bytes = sum(len(word.encode()) + 1 for word in listed)
    print(f"breach list: {len(listed):,} entries, {list_bytes:,} bytes as text (one a line); zxcvbn's")
    print(f"  frequency_lists.py (all six lists) is {module_bytes:,} bytes on disk")
    print(f"first load: {loaded:.0f} ms, {memory:.1f} MB traced (zxcvbn's dictionaries)")

    words = breach.account_words(WORDS)
    kinds = corpus(random.Random(20261123), per_kind)
    everything: list[float] = []
    everything_refused: Counter[str | None] = Counter()
    for kind, passwords in kinds.items():
        times, refused = [], Counter[str | None]()
        for password in passwords:
            elapsed, verdict = timed(lambda p=password: breach.assess(p, words))
            times.append(elapsed)
            refused[verdict] += 1
        everything += times
        everything_refused += refused
        print(line(kind, times, refused))
    print(line("all", everything, everything_refused))
    every_password = [password for passwords in kinds.values() for password in passwords]
    print(line("PasswordPolicy.check", asyncio.run(policy_times(every_password)), Counter()))

    print("zxcvbn() itself, uncapped, on random printable strings (median of 5; 256 characters took 21 s):")
    rng = random.Random(7)
    for length in (16, 32, 64, 128):
        samples = ["".join(rng.choice(PRINTABLE) for _ in range(length)) for _ in range(5)]
        cost = statistics.median(timed(lambda s=s, n=length: zxcvbn(s, max_length=n))[0] for s in samples)
        capped = statistics.median(timed(lambda s=s: breach.assess(s, words))[0] for s in samples)
        print(f"  {length:4} chars: zxcvbn {cost:8.2f} ms, assess (capped) {capped:6.2f} ms")
    for length in (20, 32, 64):
        text = (SUBSTITUTIONS * 4)[:length]
        print(
            f"  {length} chars of the 20 substitution symbols: zxcvbn "
            f"{timed(lambda t=text: zxcvbn(t, max_length=99))[0]:8.2f} ms, "
            f"assess {timed(lambda t=text: breach.assess(t, words))[0]:6.2f} ms"
        )


async def policy_times(passwords: list[str]) -> list[float]:
    """Wall time of the whole offline check as callers see it (length, words, the worker thread)."""
    policy = PasswordPolicy(Settings(password_breach_api_url=None))
    times = []
    for password in passwords:
        start = time.perf_counter()
        with contextlib.suppress(ValidationFailed):
            await policy.check(password, user_inputs=WORDS)
        times.append((time.perf_counter() - start) * 1000)
    return times


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
