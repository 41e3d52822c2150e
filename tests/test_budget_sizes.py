"""The budget's quick sizes of entities and relations are exactly the sizes of their JSON text."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.models import Entity, Relation
from graphmem.tools.budget import _entity_size, _relation_size, _text_size

_TEXT = st.text(max_size=12)


@given(_TEXT, _TEXT, st.lists(_TEXT, max_size=5))
def test_an_entity_size_is_the_size_of_its_pretty_json(name, entity_type, observations):
    entity = Entity(name, entity_type, tuple(observations))
    assert _entity_size(entity) == _text_size(entity.to_wire())


@given(_TEXT, _TEXT, _TEXT)
def test_a_relation_size_is_the_size_of_its_pretty_json(from_, to, relation_type):
    relation = Relation(from_, to, relation_type)
    assert _relation_size(relation) == _text_size(relation.to_wire())


@given(st.dictionaries(_TEXT, st.one_of(_TEXT, st.integers(), st.booleans(), st.none()), min_size=1, max_size=5))
def test_a_flat_object_is_counted_as_its_pretty_json_would_be(wire):

    text = json.dumps(wire, indent=2, ensure_ascii=False)
    assert _text_size(wire) == len(text) + 4 * (text.count("\n") + 1) + 2
