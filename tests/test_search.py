"""Search policy: which words of a query are looked for, and how matches rank."""

from __future__ import annotations

from graphmem.config import Settings
from graphmem.graph import KnowledgeGraph
from graphmem.models import Entity, Relation
from graphmem.search import MAX_WORD_MATCHES, query_terms
from graphmem.storage import open_store


def test_a_question_keeps_only_its_meaningful_words():
    assert query_terms("Where does Alice work?") == ["alice", "work"]


def test_word_endings_are_stripped_so_other_forms_match():
    assert query_terms("working offices") == ["work", "offic"]


def test_a_single_word_query_needs_no_extra_terms():
    assert query_terms("Alice") == []
    assert query_terms("  alice ") == []


def test_a_query_of_only_function_words_has_no_terms():
    assert query_terms("what is it") == []


def test_repeated_words_are_looked_for_once():
    assert query_terms("tea tea coffee") == ["tea", "coffee"]


def _people(graph):
    graph.create_entities(
        [
            Entity("Alice", "person", ("works at Acme Corp", "likes programming")),
            Entity("Bob", "person", ("works at TechCo",)),
            Entity("Acme Corp", "company", ("tech company",)),
            Entity("Carol", "person", ("friend of Alice",)),
        ]
    )
    graph.create_relations([Relation("Alice", "Acme Corp", "works_at")])


def test_a_natural_language_question_finds_the_entity_that_answers_it(graph):
    _people(graph)
    result = graph.search_nodes("Where does Alice work?")
    assert result.entities[0].name == "Alice"
    assert Relation("Alice", "Acme Corp", "works_at") in result.relations


def test_words_match_in_any_order(graph):
    _people(graph)
    names = [entity.name for entity in graph.search_nodes("programming Alice").entities]
    assert names[0] == "Alice"


def test_whole_query_matches_come_before_word_matches(graph):
    _people(graph)
    names = [entity.name for entity in graph.search_nodes("works at").entities]
    # "works at" is a phrase in Alice's and Bob's observations; nothing else contains it.
    assert names[:2] == ["Alice", "Bob"]


def test_a_name_match_ranks_above_a_mention_in_observations(graph):
    _people(graph)
    names = [entity.name for entity in graph.search_nodes("alice").entities]
    assert names == ["Alice", "Carol"]


def test_every_entity_the_official_substring_search_finds_is_returned(graph):
    _people(graph)
    for query in ("a", "co", "ALICE", "tech", "person", "works at Acme", "", "e c"):
        official = {
            entity.name
            for entity in graph.read_graph().entities
            if query.lower() in entity.name.lower()
            or query.lower() in entity.entity_type.lower()
            or any(query.lower() in observation.lower() for observation in entity.observations)
        }
        found = {entity.name for entity in graph.search_nodes(query).entities}
        assert official <= found, query


def test_no_match_gives_an_empty_graph(graph):
    _people(graph)
    result = graph.search_nodes("zebra")
    assert result.entities == () and result.relations == ()


def test_word_only_matches_are_capped_but_whole_query_matches_never_are(graph):
    # 120 entities contain the phrase, 200 more contain only one of its words.
    graph.create_entities([Entity(f"fan {i}", "person", ("likes green tea",)) for i in range(120)])
    graph.create_entities([Entity(f"gardener {i}", "person", ("grows green beans",)) for i in range(200)])
    names = [entity.name for entity in graph.search_nodes("green tea").entities]
    assert names[:120] == [f"fan {i}" for i in range(120)]
    assert len(names) == 120 + MAX_WORD_MATCHES
    # Equal word matches keep the order they were created in.
    assert names[120:] == [f"gardener {i}" for i in range(MAX_WORD_MATCHES)]


def test_a_name_shared_by_two_entities_of_a_jsonl_file_returns_both(tmp_path):
    path = tmp_path / "memory.jsonl"
    line = '{"type":"entity","name":"Twin","entityType":"%s","observations":["seen"]}\n'
    path.write_text(line % "first" + line % "second", encoding="utf-8")
    store = open_store(Settings.from_env({}, memory_file=str(path), cwd=tmp_path))
    try:
        found = KnowledgeGraph(store).search_nodes("twin").entities
    finally:
        store.close()
    assert [entity.entity_type for entity in found] == ["first", "second"]
