"""Ranked retrieval over the FAQ and the knowledge base (BM25 via SQLite FTS5), rebuilt on demand.

The indexes live in in-memory SQLite databases (stdlib ``sqlite3``, no numpy): a few dozen
passages, so a full rebuild takes milliseconds and costs well under a megabyte.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass

from agent_server.knowledge.pack import ContentPack

# Lucene's English stop words (the list bm25s used): dropped from passages and queries alike, so
# "what is the ..." does not match every passage and document lengths count only content words.
_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such "  # noqa: SIM905
    "that the their then there these they this to was will with".split()
)
# Words as FTS5's unicode61 tokenizer sees them (letters and digits; "_" separates), two or more long.
_WORD = re.compile(r"[^\W_]{2,}")
_FILLER = "the"  # a stop word, so in no query: see _Index


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    keywords: str = ""  # indexed but never shown, e.g. the FAQ entry's tags


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS]


class _Index:
    """One FTS5 table; built once, then only read (a rebuild makes a new index)."""

    def __init__(self, passages: list[Passage]) -> None:
        self.passages = passages
        # Built in a worker thread (the kb_refresh job), searched on the event loop thread.
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()  # one statement at a time on the shared connection
        self._db.execute("CREATE VIRTUAL TABLE passage USING fts5(body, tokenize='porter unicode61')")
        bodies = [" ".join(_terms(f"{p.title}\n{p.text}\n{p.keywords}")) for p in passages]
        self._db.executemany("INSERT INTO passage(rowid, body) VALUES (?, ?)", enumerate(bodies))
        # FTS5 gives a word found in half the rows or more no weight at all; among a few dozen passages
        # that drops words like "api" and "key". One filler row per four passages (a stop word, which
        # no query contains, at the average length, so length normalisation is unchanged) keeps words
        # in up to 5/8 of the passages weighted, and ranks close to those of the Lucene BM25 before.
        length = max(1, round(sum(len(b.split()) for b in bodies) / max(1, len(bodies))))
        fillers = [(" ".join([_FILLER] * length),)] * (len(bodies) // 4)
        self._db.executemany("INSERT INTO passage(body) VALUES (?)", fillers)
        self._db.commit()

    def search(self, query: str, k: int) -> list[Hit]:
        terms = dict.fromkeys(_terms(query))  # unique, in order
        if not terms or not self.passages:
            return []
        # Any word may match (OR); quoted, so no word is read as FTS5 query syntax.
        match = " OR ".join(f'"{t}"' for t in terms)
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, -bm25(passage) AS score FROM passage WHERE passage MATCH ? "
                "ORDER BY score DESC, rowid LIMIT ?",
                (match, max(1, k)),
            ).fetchall()
        # FTS5 floors the weight of a word found in most rows at 1e-6: such a match is no match.
        hits = [Hit(self.passages[rowid], round(score, 4)) for rowid, score in rows]
        return [h for h in hits if h.score > 0]


def kb_passages(markdown: str, prefix: str) -> list[Passage]:
    """Split a Markdown document at its ``## `` headings into retrievable passages."""
    passages: list[Passage] = []
    for number, chunk in enumerate(re.split(r"(?m)^## ", markdown)):
        title, _, body = chunk.partition("\n")
        if number == 0 or not body.strip():
            continue
        passages.append(Passage(f"{prefix}#{_slug(title)}", title.strip(), body.strip()))
    return passages


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class Knowledge:
    """The current content pack and its indexes; ``reload`` swaps all three at once."""

    def __init__(self, load: Callable[[], ContentPack]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self.revision = 0
        self.reload()

    def reload(self) -> int:
        """Re-read the content files and rebuild the indexes; returns the new revision."""
        pack = self._load()
        faq = _Index([Passage(e.id, e.question, e.answer, " ".join(e.tags)) for e in pack.faq])
        kb = _Index(kb_passages(pack.kb_full, "kb-full"))
        with self._lock:
            self.pack, self._faq, self._kb = pack, faq, kb
            self.revision += 1
            return self.revision

    def search_faq(self, query: str, k: int = 3) -> list[Hit]:
        return self._faq.search(query, k)

    def search_kb(self, query: str, k: int = 3) -> list[Hit]:
        return self._kb.search(query, k)

    @property
    def sizes(self) -> dict[str, int]:
        return {"faq": len(self._faq.passages), "kb": len(self._kb.passages)}
