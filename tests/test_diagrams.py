"""Mermaid, DOT and GraphML exports read back by real parsers: Mermaid's own (in Node),
pydot's DOT grammar and networkx's GraphML reader. Hostile names must come back as
they went in, and never break the document."""

from __future__ import annotations

import html
import io
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import networkx
import pydot
import pytest

from graphmem.core.models import Entity, Relation
from graphmem.domain.diagrams import dot_chunks, graphml_chunks, mermaid_chunks
from tests.helpers_npm import MERMAID

# pydot's grammar still calls pyparsing's old camelCase names.
pytestmark = pytest.mark.filterwarnings("ignore:.* deprecated - use:DeprecationWarning")

HOSTILE_NAMES = [
    'Alice "the \\"great\\""',
    "line one\nline two\r\nthree",
    "brackets [x] {y} (z) <b>bold</b> & more",
    "pipes | and arrows --> n0 ; end",
    "#quot; #35; already encoded",
    "Zoë 李 😀 مرحبا",
    "back\\slash\\",
    "tab\there",
    "",
    "`code` *star* _under_",
]

ENTITIES = [Entity(name, f"type {i} \"'<&>", (f'obs "{i}"\nnext', "plain")) for i, name in enumerate(HOSTILE_NAMES)]
RELATIONS = [
    Relation(HOSTILE_NAMES[0], HOSTILE_NAMES[1], 'knows "well" | [really]'),
    Relation(HOSTILE_NAMES[2], HOSTILE_NAMES[2], "self\nloop"),
    Relation(HOSTILE_NAMES[5], "Nobody <here>", "dangling -> edge"),
]


def _text(chunks: Any) -> str:
    return "".join(chunks)


# -- DOT ------------------------------------------------------------------------


def _dot_unquote(value: str) -> str:
    assert value.startswith('"') and value.endswith('"'), value
    return re.sub(r'\\(["\\n])', lambda m: {"n": "\n", '"': '"', "\\": "\\"}[m.group(1)], value[1:-1])


def test_dot_parses_and_every_label_reads_back():
    text = _text(dot_chunks(ENTITIES, RELATIONS))
    (graph,) = pydot.graph_from_dot_data(text)
    labels = {node.get_name(): _dot_unquote(node.get("label")) for node in graph.get_nodes()}
    # \r\n and \r become line breaks too.
    expected = [name.replace("\r\n", "\n").replace("\r", "\n") for name in HOSTILE_NAMES] + ["Nobody <here>"]
    assert sorted(labels.values()) == sorted(expected)
    edges = [
        (labels[e.get_source()], labels[e.get_destination()], _dot_unquote(e.get("label"))) for e in graph.get_edges()
    ]
    assert edges[0] == (HOSTILE_NAMES[0], "line one\nline two\nthree", 'knows "well" | [really]')
    assert edges[2] == (HOSTILE_NAMES[5], "Nobody <here>", "dangling -> edge")


def test_dot_of_an_empty_memory_is_an_empty_digraph():
    (graph,) = pydot.graph_from_dot_data(_text(dot_chunks([], [])))
    assert graph.get_nodes() == [] and graph.get_edges() == []


# -- GraphML ----------------------------------------------------------------------


def test_graphml_reads_back_with_names_types_observations_and_relation_types():
    text = _text(graphml_chunks(ENTITIES, RELATIONS))
    graph = networkx.read_graphml(io.BytesIO(text.encode("utf-8")))
    nodes = dict(graph.nodes(data=True))
    by_name = {data.get("name", ""): data for data in nodes.values()}
    for entity in ENTITIES:
        data = by_name[entity.name]
        assert data["entityType"] == entity.entity_type
        assert json.loads(data["observations"]) == list(entity.observations)
    assert by_name["Nobody <here>"]["missing"] is True
    relation_types = sorted(data["relationType"] for _, _, data in graph.edges(data=True))
    assert relation_types == sorted(relation.relation_type for relation in RELATIONS)


def test_graphml_replaces_characters_xml_cannot_hold():
    entities = [Entity("bell\x07 nul\x00 surrogate\ud800", "t")]
    graph = networkx.read_graphml(io.BytesIO(_text(graphml_chunks(entities, [])).encode("utf-8")))
    (data,) = [data for _, data in graph.nodes(data=True)]
    assert data["name"] == "bell\ufffd nul\ufffd surrogate\ufffd"


# -- Mermaid ----------------------------------------------------------------------

PARSER = r"""
import { JSDOM } from "jsdom";
const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const text = Buffer.concat(chunks).toString("utf8");
try {
  await mermaid.parse(text);
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
  const nodes = {};
  for (const [id, vertex] of diagram.db.getVertices()) nodes[id] = vertex.text;
  const edges = diagram.db.getEdges().map((edge) => [edge.start, edge.end, edge.text]);
  console.log(JSON.stringify({ ok: true, nodes, edges }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error.message || error) }));
}
"""


@pytest.fixture(scope="session")
def mermaid_parser() -> Path:
    """Mermaid's own parser in Node (with jsdom for the DOM it expects), installed once per machine."""
    script = MERMAID.ensure() / "parse.mjs"
    # In the cache, beside mermaid (Node resolves it from there). Parallel workers, and
    # other checkouts, may be running it: replace it whole, and only when it changed.
    if not script.exists() or script.read_text(encoding="utf-8") != PARSER:
        staged = script.with_name(f"parse.mjs.{os.getpid()}")
        staged.write_text(PARSER, encoding="utf-8")
        os.replace(staged, script)
    return script


def _mermaid_parse(script: Path, text: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(script)], input=text.encode("utf-8"), capture_output=True, timeout=120, check=True
    )
    return json.loads(done.stdout.decode("utf-8").strip().splitlines()[-1])


def _mermaid_decode(text: str) -> str:
    # Mermaid keeps `#code;` entities as placeholders until it renders; decode them as it would.
    text = re.sub(r"ﬂ°°(\d+)¶ß", lambda m: chr(int(m.group(1))), text)
    return re.sub(r"ﬂ°(\w+)¶ß", lambda m: html.unescape(f"&{m.group(1)};"), text)


@pytest.mark.slow
def test_mermaid_parses_and_every_label_reads_back(mermaid_parser: Path):
    parsed = _mermaid_parse(mermaid_parser, _text(mermaid_chunks(ENTITIES, RELATIONS)))
    assert parsed["ok"], parsed.get("error")
    # An empty name is labelled with a zero-width space: Mermaid refuses an empty label.
    labels = {node_id: _mermaid_decode(text).replace("\u200b", "") for node_id, text in parsed["nodes"].items()}
    assert sorted(labels.values()) == sorted([*HOSTILE_NAMES, "Nobody <here>"])
    edges = [(labels[start], labels[end], _mermaid_decode(text)) for start, end, text in parsed["edges"]]
    assert edges == [(r.from_, r.to, r.relation_type) for r in RELATIONS]


@pytest.mark.slow
def test_the_mermaid_parser_does_reject_a_broken_diagram(mermaid_parser: Path):
    # The check above means something only if the parser refuses what is broken.
    assert not _mermaid_parse(mermaid_parser, 'graph LR\n  n0["Al"ice"]\n')["ok"]
