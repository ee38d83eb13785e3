"""Model grants: which model ids a plan (plans.yaml ``models``) or a key (its allow-list) permits.

An entry is an exact model id or a pattern where ``*`` stands for any run of characters and ``?``
for one (``gpt-4o*``, ``*`` for every model); nothing else is special. A grant is checked on every
request, so exact ids are a set lookup and the answer for a pattern is remembered per model id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WILDCARDS = frozenset("*?")
MAX_ENTRY = 200
_MEMO_LIMIT = 4096  # distinct model ids remembered per grant; garbage ids cannot grow it further


def is_pattern(entry: str) -> bool:
    return not WILDCARDS.isdisjoint(entry)


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` cannot be a grant entry, or None when it can."""
    if not entry or len(entry) > MAX_ENTRY:
        return f"a model or pattern has 1 to {MAX_ENTRY} characters"
    if any(ch.isspace() for ch in entry):
        return f"'{entry}' contains white space"
    return None


def _regex(entry: str) -> str:
    return "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in entry)


class ModelGrant:
    """The model ids a list of entries permits; ``allows`` costs a dict lookup once warm."""

    __slots__ = ("_exact", "_memo", "_regex", "entries")

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries = tuple(entries)
        self._exact = frozenset(e for e in self.entries if not is_pattern(e))
        wild = [_regex(e) for e in self.entries if is_pattern(e)]
        self._regex = re.compile("|".join(wild), re.DOTALL) if wild else None
        self._memo: dict[str, bool] = {}

    def allows(self, model: str) -> bool:
        if model in self._exact:
            return True
        if self._regex is None:
            return False
        hit = self._memo.get(model)
        if hit is None:
            hit = self._regex.fullmatch(model) is not None
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[model] = hit
        return hit

    def __repr__(self) -> str:
        return f"ModelGrant({list(self.entries)!r})"
