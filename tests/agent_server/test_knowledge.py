"""The FTS5 indexes: ranking on the shipped pack, odd queries, and searches during a rebuild."""

from __future__ import annotations

import threading

import pytest

from agent_server.knowledge.pack import load_pack, shipped_content_dir
from agent_server.knowledge.search import Knowledge, Passage, _Index


@pytest.fixture(scope="module")
def knowledge() -> Knowledge:
    return Knowledge(lambda: load_pack(shipped_content_dir()))


def test_each_faq_question_ranks_its_own_entry_first(knowledge: Knowledge) -> None:
    for entry in knowledge.pack.faq:
        hits = knowledge.search_faq(entry.question, 3)
        assert hits[0].passage.id == entry.id, (entry.question, [(h.passage.id, h.score) for h in hits])


def test_words_in_most_kb_sections_still_rank(knowledge: Knowledge) -> None:
    # "api" and "key" occur in more than half of the sections, where bare FTS5 weighs them zero.
    hits = knowledge.search_kb("api keys", 2)
    assert [h.passage.id for h in hits][:1] == ["kb-full#authentication-and-api-keys"]


@pytest.mark.parametrize(
    "query", ['"', "AND OR NOT", "NEAR(key plan)", "key*", "col:key", "(", "^plan", "ü ß ø", "the of a"]
)
def test_query_syntax_and_stop_words_are_plain_text(knowledge: Knowledge, query: str) -> None:
    hits = knowledge.search_faq(query, 5)
    assert all(h.score > 0 for h in hits) and len(hits) <= 5


def test_scores_are_positive_descending_and_capped_by_k(knowledge: Knowledge) -> None:
    hits = knowledge.search_faq("api key plans price limits", 4)
    scores = [h.score for h in hits]
    assert len(hits) == 4 and scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert knowledge.search_faq("zyxxy quorble", 3) == []


def test_an_empty_index_finds_nothing() -> None:
    assert _Index([]).search("anything", 3) == []


def test_a_word_in_every_passage_is_no_match() -> None:
    index = _Index([Passage(str(n), "common", f"word{n}") for n in range(8)])
    assert index.search("common", 3) == []
    assert [h.passage.id for h in index.search("common word3", 3)] == ["3"]


def test_searches_from_other_threads_during_reloads(knowledge: Knowledge) -> None:
    failures: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                assert knowledge.search_faq("rotate my api key", 1)[0].passage.id == "api-key-rotation"
                assert knowledge.search_kb("webhook signature", 1)
        except BaseException as exc:
            failures.append(exc)

    readers = [threading.Thread(target=search) for _ in range(3)]
    for reader in readers:
        reader.start()
    revision = knowledge.revision
    for _ in range(5):  # each rebuild in a thread of its own, as the kb_refresh job does
        builder = threading.Thread(target=knowledge.reload)
        builder.start()
        builder.join()
    stop.set()
    for reader in readers:
        reader.join()
    assert not failures and knowledge.revision == revision + 5
    assert knowledge.sizes["faq"] == len(knowledge.pack.faq)
