"""Ranked retrieval over the FAQ and the knowledge base (BM25 via bm25s), rebuilt on demand."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

import bm25s
import Stemmer

from agent_server.content import ContentPack

_STEMMER = Stemmer.Stemmer("english")
# bm25s sets its own logger to DEBUG when imported and would narrate every index build.
logging.getLogger("bm25s").setLevel(logging.WARNING)


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


class _Index:
    def __init__(self, passages: list[Passage]) -> None:
        self.passages = passages
        self._bm25 = bm25s.BM25()
        self._bm25.index(
            _tokens([f"{p.title}\n{p.text}\n{p.keywords}" for p in passages]), show_progress=False
        )

    def search(self, query: str, k: int) -> list[Hit]:
        k = max(1, min(k, len(self.passages)))
        ids, scores = self._bm25.retrieve(_tokens([query]), k=k, show_progress=False)
        return [
            Hit(self.passages[int(i)], round(float(s), 4))
            for i, s in zip(ids[0], scores[0], strict=True)
            if float(s) > 0
        ]


def _tokens(texts: list[str]) -> bm25s.tokenization.Tokenized:
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, show_progress=False)


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
