"""Offline password screening: zxcvbn's list of 30,000 leaked passwords and its guessability estimate.

``assess`` gives one of three findings, checked in this order, or None:

- ``breached``: read without predictable changes (case, common character substitutions such as
  ``@`` for ``a`` in what is still at least half letters, reversal, repetition, up to ``MAX_ADDED``
  digits or symbols at its ends, leaving a word or at least ``MIN_SYMBOLIC_CORE`` digits), the
  password is one on the list: ``Password2024!``, ``p@ssw0rd!!``, ``passwordpassword``,
  ``123456789012``.
- ``published``: the same reading gives a password this product publishes (the demo password of the
  README and the Makefile), which anyone can try: ``Agentgate-Demo-Password!``.
- ``account_words``: the same reading gives one of the account's own words (e-mail address, its
  parts, organisation, service name): ``acmecorp2024!`` for Acme Corp; or the password is only such
  words joined by punctuation, each read the same way: ``agentgate-acme-corp`` for Acme Corp.
- ``guessable``: zxcvbn estimates fewer than 10^``MIN_GUESSES_LOG10`` guesses (its score 3, "moderate
  protection from an offline slow-hash attack"; we store argon2id), with the account's words as its
  user inputs: ``monkeydragon12``, ``abcdefghijkl``.

zxcvbn's cost grows with the square of the length and, in its substitution matching, with the number
of distinct substitution characters (a string of all 20 took 0.4 s), so it sees only the first
``ESTIMATE_CHARS`` characters (a longer password is at least as hard to guess as its start) and a
substitution table trimmed to one character per letter when the full one would branch too much.
The list (~12 MB in memory) is loaded at the first check, not when the server starts.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import Any, Literal

from agent_server.foundation.settings import DEMO_PASSWORD

Finding = Literal["breached", "published", "account_words", "guessable"]
PUBLISHED = frozenset({DEMO_PASSWORD})

MAX_ADDED = 8  # digits or symbols around a listed password, in total (a date like 19851231 is 8)
# A listed number under 6 digits inside a longer number is chance, not a leaked password with additions:
# 1 in 10 random 12-digit strings would hold one.
MIN_SYMBOLIC_CORE = 6
MIN_GUESSES_LOG10 = 8.0
ESTIMATE_CHARS = 32
MAX_SUBSTITUTION_BRANCHES = 4  # zxcvbn matches the dictionaries once per substitution branch
MAX_ACCOUNT_WORDS = 32
MIN_ACCOUNT_WORD = 3

_SUBSTITUTED = {"4": "a", "@": "a", "8": "b", "(": "c", "{": "c", "[": "c", "<": "c", "3": "e"}
_SUBSTITUTED |= {"6": "g", "9": "g", "1": "i", "!": "i", "|": "i", "0": "o", "$": "s", "5": "s"}
_SUBSTITUTED |= {"+": "t", "7": "t", "%": "x", "2": "z"}
# Two readings of the substituted characters: 1 and | stand for i or for l.
_READ_BACK = (str.maketrans(_SUBSTITUTED), str.maketrans(_SUBSTITUTED | {"1": "l", "|": "l"}))
_WORD_SEPARATORS = re.compile(r"[\W_]+")
# What joins words in a passphrase; not the look-alike symbols (@, !, |, $, +, ...), which stand for letters.
_JOINERS = re.compile(r"[\s\-_.,:;/\\*#&~=^'\"`?]+")
_GREEDY_REPEAT, _LAZY_REPEAT = re.compile(r"(.+)\1+"), re.compile(r"(.+?)\1+")
_ZXCVBN_MATCHERS = (
    "dictionary_match",
    "reverse_dictionary_match",
    "spatial_match",
    "sequence_match",
    "regex_match",
    "date_match",
)


@functools.cache
def _zxcvbn() -> tuple[ModuleType, ModuleType]:
    # Imported on first use: the lists cost ~12 MB and ~0.13 s, which a server that never sets a
    # password should not pay.
    from zxcvbn import matching, scoring

    return matching, scoring


def breach_list() -> dict[str, int]:
    """The offline list: each leaked password (lower case) and its frequency rank (1 = most common)."""
    return _zxcvbn()[0].RANKED_DICTIONARIES["passwords"]


@functools.cache
def _longest_listed() -> int:
    return max(map(len, breach_list()))


def account_words(inputs: Iterable[str]) -> list[str]:
    """The account's own words, lower case: each input, its e-mail halves, its parts and the parts joined."""
    words: dict[str, None] = {}
    for text in inputs:
        lowered = text.strip().lower()[:200]
        parts = [part for part in _WORD_SEPARATORS.split(lowered) if part]
        for word in (lowered, *lowered.split("@"), *parts, "".join(parts)):
            if len(word) >= MIN_ACCOUNT_WORD:
                words.setdefault(word)
    return list(words)[:MAX_ACCOUNT_WORDS]


def assess(password: str, words: Sequence[str] = ()) -> Finding | None:
    """Why ``password`` is refused, or None. CPU-bound (median ~3 ms, at most ~20 ms): run it off the loop."""
    longest = max(_longest_listed(), *map(len, words), *map(len, PUBLISHED))
    cores = set(_cores(password, longest))
    if not cores.isdisjoint(breach_list()):
        return "breached"
    if not cores.isdisjoint(PUBLISHED):
        return "published"
    if not cores.isdisjoint(words) or _joined_account_words(password, frozenset(words)):
        return "account_words"
    if estimate_guesses_log10(password, words) < MIN_GUESSES_LOG10:
        return "guessable"
    return None


def _joined_account_words(password: str, words: frozenset[str]) -> bool:
    """Two or more parts joined by punctuation, each either digits and symbols only or, read without
    predictable changes, one of the account's words (``Agentgate.Acme-2024``)."""
    parts = [part for part in _JOINERS.split(password.lower()) if part]
    wordy = [part for part in parts if not _symbolic(part)]
    if len(parts) < 2 or not wordy:
        return False
    return all(
        any(reading in words for core in _without_additions(part) for reading in {core, *_read_back(core)})
        for part in wordy
    )


def estimate_guesses_log10(password: str, words: Sequence[str] = ()) -> float:
    """zxcvbn's estimate of log10(guesses) for the first ``ESTIMATE_CHARS`` characters."""
    matching = _zxcvbn()[0]
    dictionaries = {**matching.RANKED_DICTIONARIES, "user_inputs": matching.build_ranked_dict(words)}
    return float(_analyse(password[:ESTIMATE_CHARS], dictionaries)["guesses_log10"])


def _analyse(text: str, dictionaries: dict[str, dict[str, int]]) -> dict[str, Any]:
    """zxcvbn's omnimatch and scoring, with its substitution and repeat matchers bounded (see above)."""
    matching, scoring = _zxcvbn()
    found: list[dict[str, Any]] = []
    for name in _ZXCVBN_MATCHERS:
        found.extend(getattr(matching, name)(text, _ranked_dictionaries=dictionaries))
    found.extend(matching.l33t_match(text, dictionaries, _l33t_table=_substitution_table(matching, text)))
    found.extend(_repeat_matches(text, dictionaries))
    found.sort(key=lambda match: (match["i"], match["j"]))
    return scoring.most_guessable_match_sequence(text, found)


def _substitution_table(matching: ModuleType, password: str) -> dict[str, list[str]]:
    table: dict[str, list[str]] = matching.relevant_l33t_subtable(password, matching.L33T_TABLE)
    if math.prod(len(chars) for chars in table.values()) <= MAX_SUBSTITUTION_BRANCHES:
        return table
    # Several letters with several look-alikes each: a random-looking password, where a substituted
    # word is not what makes it weak or strong. Keep, per letter, the look-alike seen first.
    return {letter: [min(chars, key=password.index)] for letter, chars in table.items()}


def _repeat_matches(text: str, dictionaries: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """zxcvbn's repeat matcher (``abcabc``), scoring the repeated part with ``_analyse``: zxcvbn's own
    scores it with the full substitution table, which would undo the bound."""
    matches: list[dict[str, Any]] = []
    last = 0
    while last < len(text):
        greedy, lazy = _GREEDY_REPEAT.search(text, last), _LAZY_REPEAT.search(text, last)
        if greedy is None or lazy is None:
            break
        if len(greedy.group(0)) > len(lazy.group(0)):  # "aabaab": the greedy match, by its shortest unit
            found, base = greedy, _repeated_unit(greedy.group(0))
        else:
            found, base = lazy, lazy.group(1)
        analysis = _analyse(base, dictionaries)
        matches.append(
            {
                "pattern": "repeat",
                "i": found.start(),
                "j": found.end() - 1,
                "token": found.group(0),
                "base_token": base,
                "base_guesses": analysis["guesses"],
                "base_matches": analysis["sequence"],
                "repeat_count": len(found.group(0)) / len(base),
            }
        )
        last = found.end()
    return matches


def _cores(password: str, longest: int) -> Iterator[str]:
    """The readings of ``password`` without predictable changes (see the module's docstring) that
    could be a known word of at most ``longest`` characters (a longer text costs time, finds nothing)."""
    lowered = password.lower()
    for text in (lowered, lowered[::-1]):
        for unit in {text, _repeated_unit(text)}:
            if len(unit) > longest + MAX_ADDED:
                continue
            for core in _without_additions(unit):
                for reading in {core, *_read_back(core)}:
                    for candidate in (reading, _repeated_unit(reading)):
                        if len(candidate) >= MIN_SYMBOLIC_CORE or not _symbolic(candidate):
                            yield candidate


def _read_back(core: str) -> Iterator[str]:
    """``core`` with substituted symbols read as letters, when it is at least half letters: a string
    of mostly digits and symbols would read as some listed word by chance (``|7(475`` as ``itcats``)."""
    if 2 * sum(char.isalpha() for char in core) >= len(core):
        for table in _READ_BACK:
            yield core.translate(table)


def _symbolic(text: str) -> bool:
    return not any(char.isalpha() for char in text)


def _without_additions(text: str) -> Iterator[str]:
    """``text`` with every split of up to MAX_ADDED digits or symbols taken off its two ends."""
    lead = _count_leading_non_letters(text)
    trail = _count_leading_non_letters(text[::-1])
    for start in range(lead + 1):
        for cut in range(min(trail, MAX_ADDED - start) + 1):
            if start + cut < len(text):
                yield text[start : len(text) - cut]


def _count_leading_non_letters(text: str) -> int:
    count = 0
    for char in text[:MAX_ADDED]:
        if char.isalpha():
            break
        count += 1
    return count


def _repeated_unit(text: str) -> str:
    """The shortest string whose repetition is ``text`` (``text`` itself when it is no repetition)."""
    period = (text + text).find(text, 1)
    return text[:period] if 0 < period < len(text) else text
