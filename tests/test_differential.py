"""Differential test: random call sequences against graphmem and the official server.

Each sequence of seeded random calls to the 9 tools goes to graphmem (a stdio
subprocess on a SQLite file) and to the official `@modelcontextprotocol/server-memory`
(node, on a JSONL file), and every answer is compared. Names come from a small pool
(case variants, non-ASCII, a trailing space, the empty name) so collisions happen.

Everything must be equal except graphmem's deliberate deviations, which are
normalised here and nowhere else:

- `create_entities` lists skipped names (`skipped`, and a second text item);
- `create_relations` adds a second text item naming endpoints that do not exist;
- delete messages say what matched (the official message when everything did);
- `search_nodes` returns the official matches first (in any order), then at most 50
  entities sharing a word with the query (stemmed, or a longer word it starts) or close to
  it in meaning (one of their texts at the cosine hybrid search asks for), so the
  entity *sets* are compared;
- the error for `add_observations` on a missing entity adds advice after the official text.

Inputs never repeat a name, relation or observation within one call: the official
server stores such duplicates twice, graphmem once (on purpose), and the two graphs
would part ways for a reason that is already decided.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

from graphmem.domain.fusion import Fusion
from graphmem.domain.search import MAX_WORD_MATCHES, query_terms
from graphmem.embedding import Embedder, load_embedder
from graphmem.storage.words import index_words, stem
from tests.helpers_npm import OFFICIAL, OFFICIAL_PACKAGE

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SEQUENCES = 30
SEQUENCES_PER_RUN = 10
CALLS_PER_SEQUENCE = 25
CALL_TIMEOUT = 10
GRAPH_URI = "memory://knowledge-graph"
FIXTURE = Path(__file__).parent / "fixtures" / "official_tools_list.json"
MUTATING = {
    "create_entities", "create_relations", "add_observations",
    "delete_entities", "delete_observations", "delete_relations",
}  # fmt: skip

NAMES = [
    "Alice", "alice", "ALICE", "Alice ", "Bob", "Zoë", "zoë", "Straße", "STRASSE",
    "İstanbul", "istanbul", "日本", "Ωmega", "ωmega", "Zoe\u0308", "ΟΔΟΣ", "a", "",
]  # fmt: skip
TYPES = ["person", "Person", "city", "thing", "日本語", ""]
OBSERVATIONS = [
    "likes tea", "Likes Tea", "TEA TIME", "works at Acme", "café ☕", "naïve", "line\u2028sep", "tea",
    "ß", "", "  ", 'says "hi" \\ back', "emoji 🎉", "Alice is a friend", "lives in İstanbul", "ΩMEGA point",
]  # fmt: skip
RELATION_TYPES = ["knows", "Knows", "likes", "works_at"]
# Calls both servers must refuse (the wording differs on purpose), changing nothing.
INVALID_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_nodes", {"query": 7}),
    ("search_nodes", {}),
    ("create_entities", {"entities": [{"name": "Alice", "entityType": "person"}]}),
    ("create_entities", {"entities": "Alice"}),
    ("create_relations", {"relations": [{"from": "Alice", "to": "Bob"}]}),
    ("add_observations", {"observations": [{"entityName": 1, "contents": []}]}),
    ("delete_entities", {"entityNames": [None]}),
    ("delete_observations", {"deletions": [{"entityName": "Alice"}]}),
    ("delete_relations", {"relations": [{"from": "Alice", "to": "Bob", "relationType": 3}]}),
    ("open_nodes", {"names": "Alice"}),
]
QUERIES = [
    "", "a", "e", "tea", "TEA", "alice", "ALICE", "ß", "ss", "strasse", "straße", "i̇", "istanbul", "日本",
    "café", "acme", "works acme", "tea alice", "zoë", "ZOË", "ωmega", "person", "likes tea", "\u2028", "🎉",
    '"hi"', "\\", "nothing here", "friend of alice", "alice's tea", "lives in", "οδος", "σ", "e\u0308",
]  # fmt: skip


# -- the official server ---------------------------------------------------------------


@pytest.fixture(scope="session")
def official_entry() -> Path:
    """The official server's `dist/index.js`, installed once per machine outside the repo."""
    return OFFICIAL.ensure() / "node_modules" / OFFICIAL_PACKAGE / "dist" / "index.js"


class Updates:
    """Counts `notifications/resources/updated` for the graph; they are handled on spawned tasks."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = anyio.Event()

    async def on_message(self, message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == GRAPH_URI:
            self.count += 1
            self._changed.set()
            self._changed = anyio.Event()

    async def reach(self, count: int) -> None:
        with anyio.fail_after(CALL_TIMEOUT):
            while self.count < count:
                await self._changed.wait()


@asynccontextmanager
async def stdio_session(params: StdioServerParameters, errlog: TextIO, updates: Updates) -> AsyncIterator[Client]:
    transport = stdio_client(params, errlog=errlog)
    async with Client(transport, mode="legacy", message_handler=updates.on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(GRAPH_URI)
        yield client


# -- calling both ----------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    is_error: bool
    texts: list[str]
    structured: Any


async def ask(client: Client, tool: str, arguments: dict[str, Any]) -> Answer:
    with anyio.fail_after(CALL_TIMEOUT):
        result = await client.call_tool(tool, arguments)
    texts = [item.text for item in result.content if item.type == "text"]
    assert len(texts) == len(result.content), result.content
    return Answer(bool(result.is_error), texts, result.structured_content)


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def unique(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def key(relation: dict[str, str]) -> tuple[str, str, str]:
    return (relation["from"], relation["to"], relation["relationType"])


# -- random calls ----------------------------------------------------------------------


class CallMaker:
    """Draws random tool calls, leaning on what is in memory so that calls hit something."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def variant(self, text: str) -> str:
        """The text in another case, or with a trailing space: close to it, but not it."""
        return self.rng.choice([text.upper(), text.lower(), text.swapcase(), text.title(), text + " "])

    def name(self, graph: dict[str, Any]) -> str:
        existing = [entity["name"] for entity in graph["entities"]]
        roll = self.rng.random()
        if existing and roll < 0.5:
            return self.rng.choice(existing)
        if existing and roll < 0.65:
            return self.variant(self.rng.choice(existing))
        return self.rng.choice(NAMES)

    def contents_for(self, graph: dict[str, Any], name: str, high: int) -> list[str]:
        """Observations for one entity: new ones, ones it has, and near misses of those."""
        current = next((e["observations"] for e in graph["entities"] if e["name"] == name), [])
        pool = unique(current + [self.variant(o) for o in current] + self.observations(0, 3))
        return self.rng.sample(pool, min(len(pool), self.rng.randint(0, high)))

    def observations(self, low: int, high: int) -> list[str]:
        return self.rng.sample(OBSERVATIONS, self.rng.randint(low, high))

    def relation(self, graph: dict[str, Any]) -> dict[str, str]:
        if graph["relations"] and self.rng.random() < 0.4:
            return dict(self.rng.choice(graph["relations"]))
        return {"from": self.name(graph), "to": self.name(graph), "relationType": self.rng.choice(RELATION_TYPES)}

    def relations(self, graph: dict[str, Any], low: int, high: int) -> list[dict[str, str]]:
        by_key = {}
        for _ in range(self.rng.randint(low, high)):
            relation = self.relation(graph)
            by_key.setdefault(key(relation), relation)
        return list(by_key.values())

    def query(self, graph: dict[str, Any]) -> str:
        texts = [e["name"] for e in graph["entities"]] + [o for e in graph["entities"] for o in e["observations"]]
        texts = [text for text in texts if text]
        if texts and self.rng.random() < 0.35:
            # A slice of something in memory, in a random case (it may cut a character
            # sequence such as "i̇" in half, which is fine: both sides see the same bytes).
            text = self.rng.choice(texts)
            start = self.rng.randrange(len(text))
            piece = text[start : start + self.rng.randint(1, 6)]
            return self.rng.choice([piece, piece.upper(), piece.lower()])
        return self.rng.choice(QUERIES)

    def make(self, graph: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self.rng.random() < 0.04:
            tool, arguments = self.rng.choice(INVALID_CALLS)
            return tool, copy.deepcopy(arguments)
        tool, arguments = self._make_valid(graph)
        if self.rng.random() < 0.1:
            # Unknown keys are dropped silently by both servers, at any level.
            items = next((value for value in arguments.values() if isinstance(value, list)), [])
            target = self.rng.choice([arguments, *(item for item in items if isinstance(item, dict))])
            target["comment"] = "not a field"
        return tool, arguments

    def _make_valid(self, graph: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        tool = rng.choices(
            [
                "create_entities",
                "create_relations",
                "add_observations",
                "delete_entities",
                "delete_observations",
                "delete_relations",
                "read_graph",
                "search_nodes",
                "open_nodes",
            ],
            weights=[5, 4, 4, 2, 2, 2, 1, 4, 2],
        )[0]
        if tool == "create_entities":
            names = unique(
                [rng.choice(NAMES) if rng.random() < 0.7 else self.name(graph) for _ in range(rng.randint(0, 3))]
            )
            entities = [
                {"name": name, "entityType": rng.choice(TYPES), "observations": self.observations(0, 3)}
                for name in names
            ]
            return tool, {"entities": entities}
        if tool == "create_relations":
            return tool, {"relations": self.relations(graph, 0, 3)}
        if tool == "add_observations":
            # One entity may come twice in a batch: later items see what earlier ones added, on both servers.
            items = []
            for _ in range(rng.randint(1, 2)):
                name = self.name(graph)
                items.append({"entityName": name, "contents": self.contents_for(graph, name, 3)})
            if rng.random() < 0.85:
                existing = {entity["name"] for entity in graph["entities"]}
                items = [item for item in items if item["entityName"] in existing]
            return tool, {"observations": items}
        if tool == "delete_entities":
            # Repeated names are harmless to both servers, so they are allowed here.
            return tool, {"entityNames": [self.name(graph) for _ in range(rng.randint(0, 4))]}
        if tool == "delete_observations":
            deletions = []
            # One entity may come twice, as in add_observations.
            for name in [self.name(graph) for _ in range(rng.randint(1, 2))]:
                deletions.append({"entityName": name, "observations": self.contents_for(graph, name, 3)})
            return tool, {"deletions": deletions}
        if tool == "delete_relations":
            return tool, {"relations": self.relations(graph, 0, 2)}
        if tool == "read_graph":
            return tool, {}
        if tool == "search_nodes":
            return tool, {"query": self.query(graph)}
        return tool, {"names": [self.name(graph) for _ in range(rng.randint(0, 5))]}


# -- what graphmem must answer, given the official answer --------------------------------


def expected_delete_message(tool: str, arguments: dict[str, Any], graph: dict[str, Any]) -> str:
    """graphmem's delete message: the official one when everything matched, else upstream #4738's."""
    names = {entity["name"] for entity in graph["entities"]}
    if tool == "delete_entities":
        requested = unique(arguments["entityNames"])
        missing = [name for name in requested if name not in names]
        if not missing:
            return "Entities deleted successfully"
        return f"Deleted {len(requested) - len(missing)} of {len(requested)} entities. Not found: {', '.join(missing)}"
    if tool == "delete_observations":
        observations = {entity["name"]: list(entity["observations"]) for entity in graph["entities"]}
        requested = deleted = 0
        missing: list[str] = []
        for deletion in arguments["deletions"]:
            contents = unique(deletion["observations"])
            requested += len(contents)
            if deletion["entityName"] not in names:
                missing.append(deletion["entityName"])
                continue
            current = observations[deletion["entityName"]]
            deleted += sum(1 for content in contents if content in current)
            observations[deletion["entityName"]] = [o for o in current if o not in contents]
        missing = unique(missing)
        if deleted == requested and not missing:
            return "Observations deleted successfully"
        message = f"Deleted {deleted} of {requested} observations."
        if missing:
            message += f" Entities not found: {', '.join(missing)}"
        return message
    keys = unique([key(relation) for relation in arguments["relations"]])
    existing = {key(relation) for relation in graph["relations"]}
    deleted = sum(1 for k in keys if k in existing)
    if deleted == len(keys):
        return "Relations deleted successfully"
    return f"Deleted {deleted} of {len(keys)} relations. The rest matched nothing."


def matches_a_term(entity: dict[str, Any], query: str) -> bool:
    """Whether the entity has a word of the query, as the word index matches words."""
    words = {
        word for text in [entity["name"], entity["entityType"], *entity["observations"]] for word in index_words(text)
    }
    terms = [(stem(term), len(term) >= 3) for term in query_terms(query)]
    return any(word == term or (prefix and word.startswith(term)) for term, prefix in terms for word in words)


@functools.cache
def _model() -> Embedder:
    return load_embedder()


def close_in_meaning(entity: dict[str, Any], query: str) -> bool:
    """Whether one of the entity's texts is as close to the query as hybrid search asks of an entity it
    brings in by meaning alone."""
    texts = [entity["name"], *entity["observations"]]
    vectors = _model().embed([query, *texts])
    return bool((vectors[1:] @ vectors[0]).max() >= Fusion().min_similarity - 0.01)


def compare(tool: str, arguments: dict[str, Any], graph: dict[str, Any], official: Answer, ours: Answer) -> None:
    """Assert that our answer is the official one, up to the deliberate deviations."""
    assert ours.is_error == official.is_error, (official, ours)
    if official.is_error:
        assert len(ours.texts) == 1 and ours.structured is None, ours
        if official.texts[0].startswith("MCP error -32602: Input validation error"):
            assert ours.texts[0].startswith(f"Input validation error: Invalid arguments for tool {tool}: "), ours
        else:
            assert tool == "add_observations", (official, ours)
            assert ours.texts[0].startswith(official.texts[0]), (official, ours)
        return
    names = {entity["name"] for entity in graph["entities"]}

    if tool == "create_entities":
        skipped = [entity["name"] for entity in arguments["entities"] if entity["name"] in names]
        structured = dict(ours.structured)
        assert structured.pop("skipped", []) == skipped
        assert structured == official.structured
        assert ours.texts[0] == official.texts[0]
        # A note on entities that may duplicate ones already there (docs/clean-memory.md) may follow.
        notes = [text for text in ours.texts[1:] if not text.startswith("Created, but may already be here: ")]
        assert len(notes) == (1 if skipped else 0)
        if skipped:
            assert notes[0].startswith(f"Skipped {len(skipped)} ")
            assert f": {', '.join(skipped)}. " in notes[0]
        return

    if tool == "create_relations":
        assert ours.structured == official.structured
        assert ours.texts[0] == official.texts[0]
        created = official.structured["relations"]
        missing = unique([n for r in created for n in (r["from"], r["to"]) if n not in names])
        assert len(ours.texts) == (2 if missing else 1)
        if missing:
            assert f": {', '.join(missing)}. " in ours.texts[1]
        return

    if tool.startswith("delete_"):
        assert official.structured["success"] is True
        message = expected_delete_message(tool, arguments, graph)
        assert ours.structured == {"success": True, "message": message}
        assert ours.texts == [message]
        return

    if tool == "search_nodes":
        query = arguments["query"]
        wanted = [entity["name"] for entity in official.structured["entities"]]
        found = [entity["name"] for entity in ours.structured["entities"]]
        assert len(found) == len(set(found))
        # Every official match, ahead of the matches on the query's words.
        assert set(found[: len(wanted)]) == set(wanted), (query, wanted, found)
        by_name = {entity["name"]: entity for entity in graph["entities"]}
        for entity in ours.structured["entities"]:
            assert entity == by_name[entity["name"]]
        assert len(found) <= len(wanted) + MAX_WORD_MATCHES
        for extra in found[len(wanted) :]:
            assert matches_a_term(by_name[extra], query) or close_in_meaning(by_name[extra], query), (query, extra)
        if not query_terms(query):
            assert len(found) == len(wanted)
        touching = set(found)
        assert ours.structured["relations"] == [
            r for r in graph["relations"] if r["from"] in touching or r["to"] in touching
        ]
        # The text is the official answer: `partlyEmbedded` (a search made while texts still wait
        # for their vectors) is said in the structured answer only.
        official_shape = {key: value for key, value in ours.structured.items() if key != "partlyEmbedded"}
        assert ours.texts == [dump(official_shape)]
        return

    # read_graph, open_nodes, add_observations: identical (add_observations may add a note on a
    # fact that probably contradicts one the entity holds: docs/clean-memory.md).
    assert ours.structured == official.structured
    if tool == "add_observations" and ours.texts[1:2] and ours.texts[1].startswith("Both facts were kept. "):
        assert ours.texts[:1] + ours.texts[2:] == official.texts
        return
    assert ours.texts == official.texts


def dumped(models: Any) -> list[dict[str, Any]]:
    return [model.model_dump(by_alias=True, exclude_none=True, mode="json") for model in models]


async def compare_listings(official: Client, ours: Client) -> None:
    """The same resources, and the official templates plus graphmem's one for an entity;
    the official tools are still the recorded ones."""
    official_tools = dumped((await official.list_tools()).tools)
    assert official_tools == json.loads(FIXTURE.read_text(encoding="utf-8"))["result"]["tools"]
    assert dumped((await ours.list_resources()).resources) == dumped((await official.list_resources()).resources)
    templates = dumped((await ours.list_resource_templates()).resource_templates)
    official_templates = dumped((await official.list_resource_templates()).resource_templates)
    assert [t for t in templates if t["uriTemplate"] != "memory://entity/{name}"] == official_templates


async def compare_resources(official: Client, ours: Client) -> None:
    """The graph resource reads the same, byte for byte."""
    with anyio.fail_after(CALL_TIMEOUT):
        official_read = await official.read_resource(GRAPH_URI)
        our_read = await ours.read_resource(GRAPH_URI)
    assert dumped(our_read.contents) == dumped(official_read.contents)


# -- the test --------------------------------------------------------------------------


async def _reset(official: Client, ours: Client, graph: dict[str, Any]) -> None:
    """Empty both memories: delete every entity and every relation endpoint."""
    names = unique(
        [e["name"] for e in graph["entities"]] + [n for r in graph["relations"] for n in (r["from"], r["to"])]
    )
    for client in (official, ours):
        assert not (await ask(client, "delete_entities", {"entityNames": names})).is_error
        assert (await ask(client, "read_graph", {})).structured == {"entities": [], "relations": []}


@pytest.fixture(params=["sqlite", "postgres"])
def our_memory(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """graphmem's memory: a SQLite file, and a PostgreSQL database (the team backend answers alike)."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(tmp_path / "graphmem.db")


# The 30 seeded sequences in 3 runs of fresh servers, so parallel workers can share them out.
@pytest.mark.parametrize("first_seed", range(0, SEQUENCES, SEQUENCES_PER_RUN))
async def test_random_call_sequences_answer_like_the_official_server(
    official_entry: Path, tmp_path: Path, first_seed: int, our_memory: str
):
    official_updates, our_updates = Updates(), Updates()
    with (
        (tmp_path / "official.log").open("w", encoding="utf-8") as official_log,
        (tmp_path / "graphmem.log").open("w", encoding="utf-8") as our_log,
    ):
        async with AsyncExitStack() as stack:
            official = await stack.enter_async_context(
                stdio_session(
                    StdioServerParameters(
                        command="node",
                        args=[str(official_entry)],
                        env={"MEMORY_FILE_PATH": str(tmp_path / "official.jsonl")},
                    ),
                    official_log,
                    official_updates,
                )
            )
            ours = await stack.enter_async_context(
                stdio_session(
                    StdioServerParameters(
                        command=sys.executable,
                        args=["-m", "graphmem"],
                        env={"MEMORY_FILE_PATH": our_memory},
                    ),
                    our_log,
                    our_updates,
                )
            )
            assert official.server_info is not None and official.server_info.version == "0.6.3"
            await compare_listings(official, ours)

            writes = 0
            for seed in range(first_seed, first_seed + SEQUENCES_PER_RUN):
                maker = CallMaker(random.Random(seed))
                history: list[tuple[str, dict[str, Any]]] = []
                graph = (await ask(official, "read_graph", {})).structured
                for _ in range(CALLS_PER_SEQUENCE):
                    tool, arguments = maker.make(graph)
                    history.append((tool, arguments))
                    official_answer = await ask(official, tool, arguments)
                    our_answer = await ask(ours, tool, arguments)
                    try:
                        compare(tool, arguments, graph, official_answer, our_answer)
                        official_graph = await ask(official, "read_graph", {})
                        our_graph = await ask(ours, "read_graph", {})
                        assert our_graph == official_graph
                    except AssertionError as failure:
                        replay = "\n".join(f"  {t} {json.dumps(a, ensure_ascii=False)}" for t, a in history)
                        raise AssertionError(
                            f"sequence {seed}, call {len(history)} ({tool}) differs; the calls so far:\n{replay}\n"
                            f"memory before the call: {json.dumps(graph, ensure_ascii=False)}\n"
                            f"official: {official_answer}\ngraphmem: {our_answer}"
                        ) from failure
                    graph = official_graph.structured
                    writes += tool in MUTATING and not official_answer.is_error
                await compare_resources(official, ours)
                await _reset(official, ours, graph)
                writes += 1

            # Every successful write told the subscribers, on both servers, and nothing else did.
            await official_updates.reach(writes)
            await our_updates.reach(writes)
            await ask(official, "read_graph", {})
            await ask(ours, "read_graph", {})
            assert (official_updates.count, our_updates.count) == (writes, writes)
