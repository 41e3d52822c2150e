"""Spec 001's rules: atomic observations, sentence counts not fooled by numbers or names, type advice."""

from __future__ import annotations

import pytest

from graphmem.core.validation import advise_entity_type, count_sentences, observation_problem

# The valid example of spec 001: none of these is more than one sentence.
SPEC_VALID = [
    "Works at Google",
    "Author of MCP Memory Server",
    "Uses Windows",
    "update_portfolio.py is main script",
    "Uses python-docx 1.2.0",
    "Uses lxml 6.0.2",
    "Final file: shevchenko-viktoria-yevgenivna-v4.docx",
    "Contains 2 main tables",
    "Total 21 records",
]


@pytest.mark.parametrize("text", SPEC_VALID)
def test_the_spec_valid_observations_pass(text):
    assert observation_problem(text) is None
    assert count_sentences(text) == 1


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Costs 3.50 USD per month.", 1),
        ("Dr. Smith moved to Oslo. He likes tea.", 2),
        ("Uses e.g. pytest and mypy.", 1),
        ("J. R. R. Tolkien wrote it.", 1),
        ("Reads config.yaml on start.", 1),
        ("Is it done? Yes! Great.", 3),
        ("Moved in 2020. Left in 2022. Came back in 2024.", 3),
        ("Version 2.0 shipped (finally).", 1),
    ],
)
def test_sentences_end_at_a_stop_that_closes_a_word(text, sentences):
    assert count_sentences(text) == sentences


def test_the_spec_long_example_fails_with_its_message():
    text = (
        "This is a very long observation that contains multiple facts and exceeds the maximum allowed length "
        "of 150 characters which will cause validation to fail"
    )
    problem, suggestion = observation_problem(text) or ("", "")
    assert problem.startswith(f"Observation too long ({len(text)} chars). Max 150.")
    assert "Split" in problem and suggestion


def test_three_sentences_fail_with_the_spec_message_and_short_text_fails_too():
    assert (observation_problem("Moved in 2020. Left in 2022. Came back.") or ("",))[0] == (
        "Too many sentences (3). Max 2. One fact per observation."
    )
    assert (observation_problem("Ok") or ("",))[0].startswith("Observation too short (2 chars). Min 5.")


def test_entity_types_are_capitalised_for_you_and_spaces_get_a_suggestion():
    assert advise_entity_type("person").entity_type == "Person"
    assert advise_entity_type("person").warnings
    spaced = advise_entity_type("API Key")
    assert spaced.entity_type == "API Key"
    assert "'ApiKey'" in spaced.warnings[0]
    assert advise_entity_type("Person").warnings == ()


def test_strict_mode_holds_the_official_tools_to_the_same_rules(tmp_path):
    from graphmem.config import Settings
    from graphmem.core.errors import InvalidInputError
    from graphmem.core.models import Entity, ObservationAddition, Relation
    from graphmem.domain.graph import KnowledgeGraph
    from graphmem.storage import open_store

    store = open_store(Settings(memory_path=tmp_path / "memory.db"))
    lenient, strict = KnowledgeGraph(store), KnowledgeGraph(store, strict=True)
    lenient.create_entities([Entity("A", "t", ("One. Two. Three.",))])
    with pytest.raises(InvalidInputError, match=r"entities\[0\]\.observations\[0\]: Too many sentences \(3\)"):
        strict.create_entities([Entity("B", "t", ("One. Two. Three.",))])
    with pytest.raises(InvalidInputError, match=r"observations\[0\]\.contents\[0\]: Observation too short"):
        strict.add_observations([ObservationAddition("A", ("Hi",))])
    with pytest.raises(InvalidInputError, match="in strict mode the limit is 50"):
        strict.create_relations([Relation("A", "A", "x" * 51)])
    assert [entity.name for entity in strict.read_graph().entities] == ["A"]
    store.close()
