"""The word index in Python against SQLite FTS5 itself: same words, same stems, same scores."""

from __future__ import annotations

import inspect
import itertools
import json
import random
import re
import sqlite3

import pytest

from graphmem.storage.sqlite.scoping import project_token
from graphmem.storage.words import PROJECT_WORDS, Term, WordDocument, bm25, index_words, is_common, stem, tokenize

TOKENIZER = "porter unicode61 remove_diacritics 2"
WEIGHTS = (10.0, 8.0, 4.0, 1.0)


def _fts_words(texts: list[str]) -> list[list[str]]:
    """What FTS5 indexes for each text, in order."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = '{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(texts)))
    words: list[list[str]] = [[] for _ in texts]
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        words[doc].append(term)
    return words


@pytest.mark.parametrize(
    "text",
    [
        "Café crème brûlée",
        "naïve ØRESUND Straße İstanbul",
        "Zoë Laurent",
        "e\u0301te\u0301 (combining accents)",
        "München",
        "日本語のテキスト",
        "Ελληνικά ά",
        "Привет мир й",
        "user_name e-mail x.y 12-3 #99 can't",
        "ǖ ǘ Ǖ",
        "Ⅻ ① ²",
        "x\u00adsoft hyphen",
        "",
    ],
)
def test_words_and_stems_are_those_fts5_indexes(text: str):
    assert index_words(text) == _fts_words([text])[0]


def test_stems_agree_with_fts5_porter_on_thousands_of_english_words():
    # Identifiers and comments of a few standard-library modules: thousands of real words.
    import argparse
    import email.message
    import logging
    import textwrap

    source = " ".join(inspect.getsource(module) for module in (argparse, logging, textwrap, email.message))
    words = sorted({word.lower() for word in re.findall(r"[A-Za-z]+", source)})
    assert len(words) > 1500
    assert [stem(word) for word in words] == [found[0] for found in _fts_words(words)]


def test_tokenize_folds_case_and_diacritics_and_splits_on_everything_else():
    assert tokenize("Zoë's e-mail: ZOË@Example.com") == ["zoe", "s", "e", "mail", "zoe", "example", "com"]


def test_short_and_very_long_words_are_not_stemmed():
    assert stem("is") == "is"
    assert stem("a" * 70 + "ing") == "a" * 70 + "ing"
    assert stem("moving") == "move"


def test_bm25_gives_the_same_floats_as_fts5():
    rng = random.Random(5)
    vocabulary = (
        "alpha beta gamma delta epsilon berlin berliner moved moving acme zoë zoe café straße x 42 "
        "lisbon oslo tea coffee works worked working river stone cloud iron amber cedar maple"
    ).split()
    rows = [
        (
            " ".join(rng.choices(vocabulary, k=rng.randint(1, 3))),
            [" ".join(rng.choices(vocabulary, k=2))] if rng.random() < 0.3 else [],
            rng.choice(["person", "city", "alpha"]),
            [" ".join(rng.choices(vocabulary, k=rng.randint(0, 8))) for _ in range(rng.randint(0, 3))],
        )
        for _ in range(300)
    ]
    conn = sqlite3.connect(":memory:")
    # As the store's word index: a fifth column holds the one word of the entity's project.
    conn.execute(f"CREATE VIRTUAL TABLE w USING fts5 (n, a, t, o, p, tokenize = '{TOKENIZER}')")
    for rowid, (name, aliases, entity_type, observations) in enumerate(rows):
        conn.execute(
            "INSERT INTO w (rowid, n, a, t, o, p) VALUES (?, ?, ?, ?, ?, ?)",
            (rowid, name, "\n".join(aliases), entity_type, "\n".join(observations), project_token(str(rowid % 3))),
        )
    documents = [WordDocument(*row) for row in rows]
    # Terms each in fewer than half of the rows, where FTS5 and bm25() count the same terms.
    for terms in ([Term("berlin", True)], [Term("straße", True), Term("caf", True), Term("42"), Term("lisb", True)]):
        fts = " OR ".join(json.dumps(term.word, ensure_ascii=False) + ("*" if term.prefix else "") for term in terms)
        expected = {
            row: -score
            for row, score in conn.execute(
                "SELECT rowid, bm25(w, ?, ?, ?, ?, 0) FROM w WHERE w MATCH ?", (*WEIGHTS, fts)
            )
        }
        assert expected
        assert bm25(documents, terms, WEIGHTS) == expected


def test_a_term_in_half_of_the_documents_is_left_out_when_a_rarer_one_is_there():
    documents = [WordDocument(f"thing {i}", [], "t", ["rare"] if i == 0 else []) for i in range(10)]
    assert set(bm25(documents, [Term("thing"), Term("rare")], WEIGHTS)) == {0}
    # Alone, the common term still ranks what it can.
    assert set(bm25(documents, [Term("thing")], WEIGHTS)) == set(range(10))


def test_a_term_found_nowhere_leaves_the_common_terms_ranking_what_they_can():
    documents = [WordDocument(f"thing {i}", [], "t", []) for i in range(10)]
    # Not a rarer term that would make "thing" give way: it matches nothing at all.
    assert bm25(documents, [Term("thing"), Term("xyzzy")], WEIGHTS) == bm25(documents, [Term("thing")], WEIGHTS)
    assert set(bm25(documents, [Term("xyzzy"), Term("thing", True)], WEIGHTS)) == set(range(10))
    assert bm25(documents, [Term("xyzzy")], WEIGHTS) == {}


def test_is_common_is_where_the_idf_stops_being_positive():
    assert not is_common(4, 10)
    assert is_common(5, 10)
    assert not is_common(5, 11)
    assert is_common(6, 11)


def test_a_document_counts_weighted_hits_per_column():
    document = WordDocument("Berlin Berlin", ["Berlinale"], "city", ["in Berlin", "moved to Berlin"])
    # Its words, and the one that stands for its project in the word index.
    assert document.length == 2 + 1 + 1 + 5 + PROJECT_WORDS
    assert document.frequency("berlin", False, WEIGHTS) == 2 * 10 + 2 * 1
    # "berlinale" is stemmed to "berlinal", which starts with "berlin".
    assert document.frequency("berlin", True, WEIGHTS) == 2 * 10 + 8 + 2 * 1
    assert document.frequency("paris", True, WEIGHTS) == 0


def test_the_stem_of_a_word_starts_with_the_words_first_character():
    # The SQLite store scores rows stemming only the words that start as a term does.
    letters = "aeiouyslbdgtxz"
    words = ["".join(chars) for size in (1, 2, 3, 4, 5) for chars in itertools.product(letters, repeat=size)]
    words += ["ays", "aed", "yyeds", "ies", "ationalization", "éed", "øys"]

    assert [word for word in words if stem(word)[:1] != word[:1]] == []
