"""Several graphmem servers on one PostgreSQL database: nothing acknowledged lost, nothing duplicated.

Each server is a real `python -m graphmem` process over stdio, as a laptop's client starts
it, all pointed at one database of a real PostgreSQL server. They write at once to their
own entities and to the same ones (the same facts, the same names, the same relations,
the same fact corrected), some are killed mid-write, and then a fresh server reads what
is stored: every write a client was told succeeded is there, exactly once, and the
contested ones were won by exactly one writer.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers_postgres import PostgresServer
from tests.helpers_stdio import (
    RawServer,
    add_observations,
    create_entities,
    entity,
    is_tool_success,
    raw_server,
    read_graph,
    server_log,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# The servers search by words only: these tests are about writes, and a model embedding in
# the background of each of five processes would only slow the two cores down.
WORDS_ONLY = "--no-semantic"

ROUNDS = 15
SHARED = 3


def _relation(from_: str, to: str, relation_type: str) -> tuple[str, dict[str, Any]]:
    relations = [{"from": from_, "to": to, "relationType": relation_type}]
    return "tools/call", {"name": "create_relations", "arguments": {"relations": relations}}


def _correct(name: str, old_id: str, content: str) -> tuple[str, dict[str, Any]]:
    observations = [{"entityName": name, "contents": [content], "supersedes": [old_id]}]
    return "tools/call", {"name": "add_observations", "arguments": {"observations": observations}}


def _tool(tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return "tools/call", {"name": tool, "arguments": arguments}


def _created(answer: dict[str, Any]) -> set[str]:
    """The names a create_entities answer says were new."""
    return {item["name"] for item in answer["result"]["structuredContent"]["entities"]}


class Ledger:
    """What the clients were told: acknowledged writes, contested names won, and failures."""

    def __init__(self) -> None:
        self.own: set[str] = set()
        self.shared_facts: set[str] = set()
        self.contested: dict[str, list[str]] = {}
        self.failures: list[str] = []

    def note_failure(self, answer: dict[str, Any]) -> None:
        self.failures.append(str(answer)[:400])


async def _write(server: RawServer, writer: int, ledger: Ledger) -> None:
    """A writer's rounds: its own entity, a fact on a shared one, a shared relation, a contested name."""
    for i in range(ROUNDS):
        own = f"w{writer}-{i}"
        answer = await server.call(create_entities(entity(own, f"{own} fact 1", f"{own} fact 2")))
        if is_tool_success(answer):
            ledger.own.add(own)
        else:
            ledger.note_failure(answer)
        fact = f"{own} was here"
        answer = await server.call(add_observations(f"Shared-{i % SHARED}", fact))
        if is_tool_success(answer):
            ledger.shared_facts.add(fact)
        else:
            ledger.note_failure(answer)
        answer = await server.call(_relation(f"Shared-{i % SHARED}", f"Shared-{(i + 1) % SHARED}", "knows"))
        if not is_tool_success(answer):
            ledger.note_failure(answer)
        contested = f"Contested-{i}"
        answer = await server.call(create_entities(entity(contested, f"claimed by w{writer}")))
        if is_tool_success(answer):
            if contested in _created(answer):
                ledger.contested.setdefault(contested, []).append(f"w{writer}")
        else:
            ledger.note_failure(answer)


async def _seed(log_file: Path, database: str) -> None:
    async with raw_server(log_file, WORDS_ONLY, database=database) as server:
        await server.initialize()
        answer = await server.call(
            create_entities(*(entity(f"Shared-{k}") for k in range(SHARED)), entity("Fact", "the sky is green"))
        )
        assert is_tool_success(answer), (answer, server_log(log_file))


async def _stored(log_file: Path, database: str) -> dict[str, Any]:
    """The whole graph as a fresh server reads it from the database."""
    async with raw_server(log_file, WORDS_ONLY, database=database) as server:
        await server.initialize()
        answer = await server.call(read_graph())
    assert is_tool_success(answer), answer
    structured: dict[str, Any] = answer["result"]["structuredContent"]
    return structured


def _assert_whole(graph: dict[str, Any], ledger: Ledger) -> None:
    names = Counter(item["name"] for item in graph["entities"])
    assert [name for name, count in names.items() if count > 1] == []
    observations = {item["name"]: item["observations"] for item in graph["entities"]}
    for own in ledger.own:
        assert observations[own] == [f"{own} fact 1", f"{own} fact 2"]
    shared = [fact for k in range(SHARED) for fact in observations[f"Shared-{k}"]]
    assert [fact for fact, count in Counter(shared).items() if count > 1] == []
    assert ledger.shared_facts <= set(shared)
    keys = Counter((r["from"], r["to"], r["relationType"]) for r in graph["relations"])
    assert [key for key, count in keys.items() if count > 1] == []
    for name, winners in ledger.contested.items():
        # Exactly one writer was told it created the name, and the name holds its facts only.
        assert len(winners) == 1, (name, winners)
        assert observations[name] == [f"claimed by {winners[0]}"]


@pytest.fixture(params=["direct", "pgbouncer"])
def shared_database(request: pytest.FixtureRequest) -> str:
    """The database the servers share: on the server itself, or through PgBouncer in transaction
    mode (as teams often run it: no session state may outlive a transaction)."""
    if request.param == "pgbouncer":
        pooled: PostgresServer = request.getfixturevalue("pgbouncer_server")
        url = pooled.create_memory()
        request.addfinalizer(lambda: pooled.drop_memory(url))
        return url
    direct: str = request.getfixturevalue("postgres_url")
    return direct


@pytest.mark.parametrize("servers", [2, 4])
async def test_servers_writing_the_same_entities_at_once_lose_nothing_and_duplicate_nothing(
    tmp_path: Path, shared_database: str, servers: int
) -> None:
    postgres_url = shared_database
    log_file = tmp_path / "servers"
    ledger = Ledger()
    with anyio.fail_after(120):
        await _seed(log_file, postgres_url)

        async def one_server(writer: int) -> None:
            async with raw_server(log_file, WORDS_ONLY, database=postgres_url) as server:
                await server.initialize()
                await _write(server, writer, ledger)

        async with anyio.create_task_group() as tasks:
            for writer in range(servers):
                tasks.start_soon(one_server, writer)
        graph = await _stored(log_file, postgres_url)

    assert ledger.failures == [], server_log(log_file)
    assert len(ledger.own) == servers * ROUNDS
    _assert_whole(graph, ledger)
    assert {f"Contested-{i}" for i in range(ROUNDS)} <= set(ledger.contested)


async def test_four_servers_correcting_the_same_fact_at_once_leave_one_line_of_versions(
    tmp_path: Path, postgres_url: str
) -> None:
    log_file = tmp_path / "servers"
    answers: dict[int, dict[str, Any]] = {}
    with anyio.fail_after(90):
        await _seed(log_file, postgres_url)
        async with raw_server(log_file, WORDS_ONLY, "--toolset", "all", database=postgres_url) as reader:
            await reader.initialize()
            before = await reader.call(_tool("get_entity", name="Fact"))
        assert is_tool_success(before), before
        (first,) = before["result"]["structuredContent"]["observationRecords"]

        async def correct(writer: int) -> None:
            async with raw_server(log_file, WORDS_ONLY, database=postgres_url) as server:
                await server.initialize()
                answers[writer] = await server.call(_correct("Fact", first["id"], f"the sky is blue (w{writer})"))

        async with anyio.create_task_group() as tasks:
            for writer in range(4):
                tasks.start_soon(correct, writer)
        async with raw_server(log_file, WORDS_ONLY, "--toolset", "all", database=postgres_url) as reader:
            await reader.initialize()
            after = await reader.call(_tool("get_entity", name="Fact"))
            history = await reader.call(_tool("get_observation_history", entityName="Fact", observationId=first["id"]))

    winners = [writer for writer, answer in answers.items() if is_tool_success(answer)]
    assert len(winners) == 1, answers
    losers = [answers[writer] for writer in answers if writer not in winners]
    assert all("not a current observation" in str(answer) for answer in losers), losers
    (current,) = after["result"]["structuredContent"]["observationRecords"]
    assert current["content"] == f"the sky is blue (w{winners[0]})"
    assert is_tool_success(history), history
    chain = history["result"]["structuredContent"]
    assert [version["content"] for version in chain["history"]] == [
        "the sky is green",
        f"the sky is blue (w{winners[0]})",
    ]
    assert chain["currentId"] == current["id"]


async def test_servers_killed_at_random_mid_write_lose_no_acknowledged_write(tmp_path: Path, postgres_url: str) -> None:
    log_file = tmp_path / "servers"
    acknowledged: set[str] = set()
    sent: set[str] = set()
    chance = random.Random(18)
    with anyio.fail_after(120):
        await _seed(log_file, postgres_url)

        async def stream_until_killed(writer: int) -> None:
            kill_after = chance.randrange(5, 40)
            async with raw_server(log_file, WORDS_ONLY, database=postgres_url) as server:
                await server.initialize()
                names: dict[int, str] = {}

                async def write() -> None:
                    for i in range(200):
                        name = f"K{writer}-{i}"
                        request_id = server.next_id()
                        names[request_id] = name
                        sent.add(name)
                        call = create_entities(entity(name, *(f"{name} fact {n}" for n in range(4))))
                        await server.send({"jsonrpc": "2.0", "id": request_id, "method": call[0], "params": call[1]})
                        shared = add_observations("Shared-0", f"{name} was here")
                        await server.send(
                            {"jsonrpc": "2.0", "id": server.next_id(), "method": shared[0], "params": shared[1]}
                        )

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(write)
                    successes = 0
                    while successes < kill_after:
                        answer = await server.receive()
                        assert is_tool_success(answer), answer
                        if answer["id"] in names:
                            acknowledged.add(names[answer["id"]])
                        successes += 1
                    server.kill()
                    tasks.cancel_scope.cancel()
                await server.process.wait()

        async with anyio.create_task_group() as tasks:
            for writer in range(4):
                tasks.start_soon(stream_until_killed, writer)
        graph = await _stored(log_file, postgres_url)

    observations = {item["name"]: item["observations"] for item in graph["entities"]}
    assert acknowledged <= observations.keys()
    for name in sent & observations.keys():
        # A write in flight when its server died is there whole or not at all.
        assert observations[name] == [f"{name} fact {n}" for n in range(4)]
    shared = observations["Shared-0"]
    assert len(shared) == len(set(shared))
    assert Counter(item["name"] for item in graph["entities"]).most_common(1)[0][1] == 1
