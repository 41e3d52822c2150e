"""The memory as a diagram: Mermaid flowcharts, Graphviz DOT and GraphML.

Each writer streams text from entities and relations (any iterables, so an export
of a huge memory never holds it whole) and escapes every name and label, so that
quotes, newlines, brackets, markup or any Unicode in the memory cannot break the
output or inject syntax into it. Relations whose endpoints are not entities (the
official server accepts them) get a node of their own, marked as missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator

from graphmem.core.models import Entity, Relation

__all__ = ["graphml_chunks", "mermaid_chunks", "dot_chunks"]

# A lone surrogate (kept from a JSON escape in a file) cannot be written as UTF-8.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text)


class _NodeIds:
    """Short, safe node ids (n0, n1, ...) for entity names, in order of first use."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def get(self, name: str) -> str | None:
        return self._ids.get(name)

    def add(self, name: str) -> str:
        node_id = f"n{len(self._ids)}"
        self._ids[name] = node_id
        return node_id


def _edges(
    relations: Iterable[Relation], ids: _NodeIds, missing_node: Callable[[str, str], str]
) -> Iterator[tuple[str, str, Relation, str]]:
    """Each relation with its endpoint ids, and the text declaring any endpoint not seen yet."""
    for relation in relations:
        declared = ""
        endpoints = []
        for name in (relation.from_, relation.to):
            node_id = ids.get(name)
            if node_id is None:
                node_id = ids.add(name)
                declared += missing_node(node_id, name)
            endpoints.append(node_id)
        yield endpoints[0], endpoints[1], relation, declared


# -- Mermaid ----------------------------------------------------------------------

# Inside a quoted Mermaid label these would end the string, start an entity code or
# markup, or (in an edge label) end the label; Mermaid's own `#code;` entities encode them.
_MERMAID_SPECIAL = re.compile(r'["#&<>|\[\]{}()`]|[\x00-\x1f\x7f]')


def _mermaid_text(text: str) -> str:
    if not text:
        # Mermaid refuses an empty label; a zero-width space shows as empty.
        return "#8203;"
    return _MERMAID_SPECIAL.sub(lambda match: f"#{ord(match.group())};", _valid_text(text))


def mermaid_chunks(entities: Iterable[Entity], relations: Iterable[Relation]) -> Iterator[str]:
    """A Mermaid flowchart: one node per entity (labelled with its name), one arrow per relation."""
    ids = _NodeIds()
    yield "graph LR\n"
    for entity in entities:
        if ids.get(entity.name) is None:
            yield f'  {ids.add(entity.name)}["{_mermaid_text(entity.name)}"]\n'

    def missing(node_id: str, name: str) -> str:
        # A dashed outline marks a name that no entity has.
        return f'  {node_id}["{_mermaid_text(name)}"]\n  style {node_id} stroke-dasharray: 5 5\n'

    for start, end, relation, declared in _edges(relations, ids, missing):
        yield f'{declared}  {start} -->|"{_mermaid_text(relation.relation_type)}"| {end}\n'


# -- Graphviz DOT -----------------------------------------------------------------


def _dot_string(text: str) -> str:
    # In a DOT quoted string only the quote and the backslash are special; a line break
    # is written as \n, which Graphviz shows as a centred line break in a label.
    escaped = _valid_text(text).replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    # Other control characters are not text a label can show.
    return '"' + re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "\ufffd", escaped) + '"'


def dot_chunks(entities: Iterable[Entity], relations: Iterable[Relation]) -> Iterator[str]:
    """A Graphviz digraph: one node per entity (label = name, with its type), one edge per relation."""
    ids = _NodeIds()
    yield "digraph G {\n"
    for entity in entities:
        if ids.get(entity.name) is None:
            node_id = ids.add(entity.name)
            yield (f"  {node_id} [label={_dot_string(entity.name)}, entityType={_dot_string(entity.entity_type)}];\n")

    def missing(node_id: str, name: str) -> str:
        return f"  {node_id} [label={_dot_string(name)}, style=dashed];\n"

    for start, end, relation, declared in _edges(relations, ids, missing):
        yield f"{declared}  {start} -> {end} [label={_dot_string(relation.relation_type)}];\n"
    yield "}\n"


# -- GraphML ----------------------------------------------------------------------

# XML 1.0 cannot hold these characters at all, escaped or not.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    cleaned = _XML_INVALID.sub("\ufffd", _valid_text(text))
    # \r would be normalised away by every XML reader; keep it as a character reference.
    return (
        cleaned.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\r", "&#13;")
    )


_GRAPHML_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"'
    ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
    ' xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns'
    ' http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n'
    '  <key id="name" for="node" attr.name="name" attr.type="string"/>\n'
    '  <key id="entityType" for="node" attr.name="entityType" attr.type="string"/>\n'
    '  <key id="observations" for="node" attr.name="observations" attr.type="string"/>\n'
    '  <key id="missing" for="node" attr.name="missing" attr.type="boolean"><default>false</default></key>\n'
    '  <key id="relationType" for="edge" attr.name="relationType" attr.type="string"/>\n'
    '  <graph id="memory" edgedefault="directed">\n'
)


def graphml_chunks(entities: Iterable[Entity], relations: Iterable[Relation]) -> Iterator[str]:
    """GraphML: nodes with name, type and observations (a JSON list), edges with their relation type."""
    ids = _NodeIds()
    yield _GRAPHML_HEAD
    for entity in entities:
        if ids.get(entity.name) is not None:
            continue
        observations = json.dumps(list(entity.observations), ensure_ascii=False)
        yield (
            f'    <node id="{ids.add(entity.name)}">'
            f'<data key="name">{_xml_text(entity.name)}</data>'
            f'<data key="entityType">{_xml_text(entity.entity_type)}</data>'
            f'<data key="observations">{_xml_text(observations)}</data></node>\n'
        )

    def missing(node_id: str, name: str) -> str:
        return (
            f'    <node id="{node_id}"><data key="name">{_xml_text(name)}</data>'
            '<data key="missing">true</data></node>\n'
        )

    for number, (start, end, relation, declared) in enumerate(_edges(relations, ids, missing)):
        yield (
            f'{declared}    <edge id="e{number}" source="{start}" target="{end}">'
            f'<data key="relationType">{_xml_text(relation.relation_type)}</data></edge>\n'
        )
    yield "  </graph>\n</graphml>\n"
