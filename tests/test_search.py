"""Search policy and `KnowledgeGraph.search_nodes`: what is looked for, and in which order."""

from __future__ import annotations

import pytest

from graphmem.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.limits import Limits
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.search import MAX_WORD_MATCHES, WEIGHTS, query_terms, word_search
from graphmem.storage import open_store
from graphmem.storage.words import Term
from graphmem.tools import ALL_TOOLS, ToolContext


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    """The graph behaves alike on every backend: each test runs on SQLite, JSONL and PostgreSQL."""
    return any_backend_settings


def test_a_question_keeps_only_its_meaningful_words():
    assert query_terms("Where does Alice work?") == ["alice", "work"]


def test_words_are_folded_to_lower_case_without_diacritics_and_kept_once():
    assert query_terms("Zoë ZOE tea, Tea") == ["zoe", "tea"]


def test_a_query_of_only_function_words_keeps_them_all():
    assert query_terms("The Who") == ["the", "who"]
    assert query_terms("?!") == []


def test_a_search_looks_for_each_whole_query_and_each_word_or_word_start():
    plan = word_search(["Moved to Berlin", "moved to berlin", "Bo"], entity_type="person", limit=5, offset=2)
    assert plan.needles == ("moved to berlin", "bo")
    assert plan.terms == (Term("moved", True), Term("berlin", True), Term("bo"))
    assert (plan.weights, plan.entity_type, plan.limit, plan.offset) == (WEIGHTS, "person", 5, 2)
    assert plan.max_word_matches == MAX_WORD_MATCHES


def test_a_number_is_looked_for_as_a_whole_word_never_as_the_start_of_longer_ones():
    plan = word_search(["ticket #111-2 of 2024, v3"])
    assert plan.terms == (Term("ticket", True), Term("111"), Term("2"), Term("2024"), Term("v3"))


def test_names_weigh_more_than_aliases_than_types_than_observations():
    name, alias, entity_type, observation = WEIGHTS
    assert name > alias > entity_type > observation > 0


def _people(graph: KnowledgeGraph) -> None:
    graph.create_entities(
        [
            Entity("Alice", "person", ("works at Acme Corp", "likes programming")),
            Entity("Bob", "person", ("works at TechCo",)),
            Entity("Acme Corp", "company", ("tech company",)),
            Entity("Carol", "person", ("friend of Alice",)),
            *(Entity(f"note {i}", "note", (f"nothing much {i}",)) for i in range(6)),
        ]
    )
    graph.create_relations([Relation("Alice", "Acme Corp", "works_at")])


def _names(graph: KnowledgeGraph, query: str | list[str], **options: object) -> list[str]:
    return [entity.name for entity in graph.search_nodes(query, **options).entities]  # type: ignore[arg-type]


def test_a_natural_language_question_finds_the_entity_that_answers_it(graph):
    _people(graph)
    result = graph.search_nodes("Where does Alice work?")
    assert result.entities[0].name == "Alice"
    assert Relation("Alice", "Acme Corp", "works_at") in result.relations


def test_words_match_in_any_order_and_in_other_forms(graph):
    _people(graph)
    assert _names(graph, "programmer Alice")[0] == "Alice"
    assert _names(graph, "who is working at techco")[0] == "Bob"


def test_whole_query_matches_come_before_word_matches(graph):
    _people(graph)
    names = _names(graph, "works at")
    # "works at" is a phrase in Alice's and Bob's observations; nothing else contains it.
    assert set(names[:2]) == {"Alice", "Bob"}


def test_a_name_match_ranks_above_a_mention_in_observations(graph):
    _people(graph)
    assert _names(graph, "alice") == ["Alice", "Carol"]


def test_a_numbered_thing_is_found_without_the_others_its_number_starts(graph):
    graph.create_entities(
        [Entity(f"ticket {number}", "ticket", (f"opened as #{number}-1",)) for number in (111, 1110, 1115, 11100)]
    )
    assert _names(graph, "#111-1") == ["ticket 111"]
    assert _names(graph, "ticket 111") == ["ticket 111", "ticket 1110", "ticket 1115", "ticket 11100"]
    # A word still finds the longer words it starts.
    graph.create_entities([Entity("Berlin", "city")])
    assert _names(graph, "berl") == ["Berlin"]


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
        found = _names(graph, query)
        assert official <= set(found), query
        assert set(found[: len(official)]) == official, query


def test_no_match_gives_an_empty_graph(graph):
    _people(graph)
    result = graph.search_nodes("zebra")
    assert result.entities == () and result.relations == ()


def test_word_only_matches_are_capped_but_whole_query_matches_never_are(graph):
    # 120 entities contain the phrase, 200 more contain only one of its words.
    graph.create_entities([Entity(f"fan {i}", "person", ("likes green tea",)) for i in range(120)])
    graph.create_entities([Entity(f"gardener {i}", "person", ("grows green beans",)) for i in range(200)])
    graph.create_entities([Entity(f"other {i}", "person", ("plays chess",)) for i in range(400)])
    names = _names(graph, "green tea")
    assert set(names[:120]) == {f"fan {i}" for i in range(120)}
    assert len(names) == 120 + MAX_WORD_MATCHES
    # Equal word matches keep the order they were created in.
    assert names[120:] == [f"gardener {i}" for i in range(MAX_WORD_MATCHES)]
    # With a limit the caller decides how far to go.
    assert _names(graph, "green tea", limit=100, offset=150) == [f"gardener {i}" for i in range(30, 130)]


def test_limit_returns_the_best_and_offset_pages_on_with_their_relations(graph):
    _people(graph)
    everything = _names(graph, "alice acme works", limit=100)
    assert _names(graph, "alice acme works", limit=2) == everything[:2]
    page = graph.search_nodes("alice acme works", limit=2, offset=2)
    assert [entity.name for entity in page.entities] == everything[2:4]
    on_page = {entity.name for entity in page.entities}
    assert all(relation.from_ in on_page or relation.to in on_page for relation in page.relations)


def test_a_list_of_queries_finds_entities_matching_any_of_them(graph):
    _people(graph)
    assert set(_names(graph, ["Carol", "techco"])) == {"Carol", "Bob"}
    assert _names(graph, ["Carol"]) == _names(graph, "Carol")


def test_entity_type_keeps_only_entities_of_that_exact_type(graph):
    _people(graph)
    assert _names(graph, "acme", entity_type="company") == ["Acme Corp"]
    assert _names(graph, "acme", entity_type="Company") == []


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"offset": -1}, "offset"),
        ({"entity_type": "t" * 1001}, "entityType"),
    ],
)
def test_an_option_out_of_range_is_refused_naming_it(graph, options, field):
    with pytest.raises(InvalidInputError) as caught:
        graph.search_nodes("x", **options)
    assert caught.value.field == field


def test_a_list_of_queries_must_hold_one_to_the_limit_of_valid_queries(graph):
    with pytest.raises(InvalidInputError, match="empty list") as caught:
        graph.search_nodes([])
    assert caught.value.field == "query"
    with pytest.raises(InvalidInputError) as caught:
        graph.search_nodes(["ok", "q" * 2049])
    assert caught.value.field == "query[1]"
    small = KnowledgeGraph(graph.store, limits=Limits(max_search_queries=2, max_page_size=5))
    with pytest.raises(InvalidInputError) as caught:
        small.search_nodes(["a", "b", "c"])
    assert caught.value.field == "query"
    with pytest.raises(InvalidInputError, match="from 1 to 5"):
        small.search_nodes("a", limit=6)


def test_a_name_shared_by_two_entities_of_a_jsonl_file_returns_both(tmp_path):
    path = tmp_path / "memory.jsonl"
    line = '{"type":"entity","name":"Twin","entityType":"%s","observations":["seen"]}\n'
    path.write_text(line % "first" + line % "second", encoding="utf-8")
    store = open_store(Settings.from_env({}, memory_file=str(path), cwd=tmp_path))
    try:
        found = KnowledgeGraph(store).search_nodes("twin").entities
        limited = KnowledgeGraph(store).search_nodes("seen twins", limit=1).entities
    finally:
        store.close()
    assert [entity.entity_type for entity in found] == ["first", "second"]
    assert [entity.entity_type for entity in limited] == ["first", "second"]


@pytest.mark.parametrize("file_name", ["memory.db", "memory.jsonl"])
def test_a_small_memory_answers_a_search_as_the_entities_loaded_one_by_one_would(tmp_path, file_name):
    # search_nodes picks a small memory's answer from the whole graph's wire form; it must
    # be exactly the answer built from the ranked entities and their relations.
    path = tmp_path / file_name
    if file_name.endswith(".jsonl"):
        twin = '{"type":"entity","name":"Twin","entityType":"%s","observations":["likes tea"]}\n'
        path.write_text(twin % "first" + twin % "second", encoding="utf-8")
    store = open_store(Settings.from_env({}, memory_file=str(path), cwd=tmp_path))
    try:
        graph = KnowledgeGraph(store)
        graph.create_entities(
            [
                Entity("Alice", "person", ("works at Acme", "likes tea")),
                Entity("Bob", "person", ("works at TechCo",)),
                Entity("Acme", "company", ("makes tea machines",)),
            ]
        )
        graph.create_relations(
            [
                Relation("Alice", "Acme", "works_at"),
                Relation("Bob", "Alice", "knows"),
                Relation("Acme", "Acme", "owns"),
                Relation("Bob", "Nobody", "knows"),
            ]
        )
        ctx = ToolContext(graph, response_budget=25_000)
        spec = next(spec for spec in ALL_TOOLS if spec.name == "search_nodes")
        for query in ("tea", "works", "alice", "a", "", "Who makes tea?", "nothing at all", ["bob", "twin"]):
            ranked = graph.rank_search(query)
            assert ranked.names or query in ("nothing at all",)
            answer = spec.run(ctx, spec.arguments.model_validate({"query": query}))
            assert answer.structured == graph.load_ranked(ranked.names).to_wire(), query

        def answers_as_loaded(query: str) -> bool:
            ranked = graph.rank_search(query)
            answer = spec.run(ctx, spec.arguments.model_validate({"query": query}))
            return answer.structured == graph.load_ranked(ranked.names).to_wire()

        # The whole graph (and its index by name) is read again after any write: by this
        # graph, or by another process on the same file.
        graph.add_observations([ObservationAddition("Bob", ("drinks tea",))])
        graph.create_relations([Relation("Acme", "Bob", "employs")])
        assert answers_as_loaded("tea")
        assert "Bob" in [entity.name for entity in graph.search_nodes("tea").entities]
        other = open_store(Settings.from_env({}, memory_file=str(path), cwd=tmp_path))
        try:
            KnowledgeGraph(other).create_entities([Entity("Tea House", "place", ("serves tea",))])
        finally:
            other.close()
        assert answers_as_loaded("tea")
        answer = spec.run(ctx, spec.arguments.model_validate({"query": "tea"}))
        assert "Tea House" in [entity["name"] for entity in answer.structured["entities"]]
    finally:
        store.close()
