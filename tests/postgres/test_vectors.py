"""Search by meaning on PostgreSQL: pgvector's vectors, the queue several servers share, and a server without pgvector.

Every test runs the real model (all-MiniLM-L6-v2 from its PyPI package) on a real PostgreSQL
server: PostgreSQL 18 with pgvector from the test fixtures, and the system's PostgreSQL 15,
which has no pgvector, for what a team without the extension gets.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

import anyio
import numpy as np
import numpy.typing as npt
import psycopg
import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.core.models import Entity, ObservationAddition, ObservationDeletion
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.maintenance import EntityUpdate, merge_entities, update_entities
from graphmem.domain.observations import records_of
from graphmem.embedding import Embedder, load_embedder
from graphmem.storage.postgres import PostgresStore
from graphmem.storage.vectors import ENTITY_TEXT, EmbeddedText
from tests.helpers_clients import TRANSPORTS
from tests.helpers_postgres import PostgresServer
from tests.test_search_by_meaning import PEOPLE, _embed_all, _names
from tests.test_search_by_meaning_served import EMBEDDED_WITHIN_SECONDS, _search
from tests.test_search_by_meaning_served import PEOPLE as SERVED_PEOPLE

TEXTS = 12  # four names and eight observations


@pytest.fixture(scope="module")
def model() -> Embedder:
    return load_embedder()


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, "test database")
    yield opened
    opened.close()


@pytest.fixture
def memory(store: PostgresStore, model: Embedder) -> KnowledgeGraph:
    return KnowledgeGraph(store, embedder=model)


class CountingEmbedder:
    """The real model, counting every text it is given: what two servers' workers together embedded."""

    def __init__(self, model: Embedder, counts: Counter[str]) -> None:
        self._model = model
        self.counts = counts
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return self._model.fingerprint

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.counts.update(texts)
        return self._model.embed(texts)

    def whole_words(self, text: str) -> list[str]:
        return self._model.whole_words(text)


def _table_counts(url: str) -> tuple[int, int]:
    """Rows in the vectors table and in the queue, counted."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT (SELECT count(*) FROM vectors), (SELECT count(*) FROM vector_queue)").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _as_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.hostname}:{parts.port}"))


# -- found by meaning ------------------------------------------------------------------------


def test_a_question_sharing_no_word_with_the_fact_finds_it_by_meaning_on_postgresql(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    assert _embed_all(memory) == TEXTS
    assert _names(memory, "Who moved abroad?", mode="lexical") == []
    assert _names(memory, "Who moved abroad?", mode="semantic", limit=3)[0] == "Bob"
    assert _names(memory, "Who moved abroad?", limit=3)[0] == "Bob"
    assert _names(memory, "Which colleague has a nut allergy?", limit=3)[0] == "Alice"
    # The official substring match still comes first in a hybrid search.
    assert _names(memory, "relocated")[0] == "Bob"


def test_every_text_written_waits_until_embedded_and_the_counts_shown_are_the_tables(
    memory: KnowledgeGraph, store: PostgresStore, postgres_url: str
):
    memory.create_entities(PEOPLE)
    assert store.vector_progress().waiting == TEXTS
    assert _table_counts(postgres_url) == (0, TEXTS)
    _embed_all(memory)
    progress = store.vector_progress()
    assert (progress.embedded, progress.waiting) == (TEXTS, 0)
    assert progress.model == memory.meaning.model().fingerprint
    assert _table_counts(postgres_url) == (TEXTS, 0)
    assert store.warm_vectors() == TEXTS


def test_texts_loaded_by_copy_wait_for_their_vectors_too(store: PostgresStore, model: Embedder):
    with store.write(), store.bulk_insert():
        store.insert_entities(PEOPLE)
    assert store.vector_progress().waiting == TEXTS
    graph = KnowledgeGraph(store, embedder=model)
    assert _embed_all(graph) == TEXTS
    assert _names(graph, "Who moved abroad?", mode="semantic", limit=1) == ["Bob"]


def test_the_entities_with_a_text_still_waiting_are_told_apart_from_those_embedded(memory: KnowledgeGraph):
    memory.create_entities([Entity("Bob", "person", ("relocated to Germany",)), Entity("Eve", "person", ())])
    vectors = memory.meaning.vectors
    assert vectors is not None
    assert vectors.any_waiting() and vectors.waiting_among(["Bob", "Eve", "Nobody"]) == {"Bob", "Eve"}
    while memory.embed_pending():
        pass
    memory.add_observations([ObservationAddition("Eve", ("plays the cello",))])
    assert vectors.waiting_among(["Bob", "Eve"]) == {"Eve"}  # one new fact makes the whole entity wait
    while memory.embed_pending():
        pass
    assert not vectors.any_waiting() and vectors.waiting_among(["Bob", "Eve"]) == set()


def test_an_entity_type_filter_finds_only_entities_of_that_type(memory: KnowledgeGraph):
    memory.create_entities([*PEOPLE, Entity("Munich office", "place", ("the team moved abroad to this office",))])
    _embed_all(memory)
    assert _names(memory, "Who moved abroad?", mode="semantic", entity_type="person", limit=1) == ["Bob"]
    assert _names(memory, "Who moved abroad?", mode="semantic", entity_type="place") == ["Munich office"]
    assert _names(memory, "Who moved abroad?", mode="semantic", entity_type="planet") == []


def test_a_search_without_the_hnsw_index_is_exact_and_the_next_start_makes_the_index_again(
    memory: KnowledgeGraph, postgres_url: str, model: Embedder
):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    indexed = _names(memory, "Which colleague has a nut allergy?", mode="semantic")
    with psycopg.connect(postgres_url) as conn:
        conn.execute("DROP INDEX vectors_embedding_hnsw")
    reopened = PostgresStore(postgres_url, "test database")
    try:
        # Made again at the start; a server whose index went away meanwhile searches exactly.
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("SELECT to_regclass('vectors_embedding_hnsw') IS NOT NULL").fetchone() == (True,)
            conn.execute("DROP INDEX vectors_embedding_hnsw")
        assert (
            _names(KnowledgeGraph(reopened, embedder=model), "Which colleague has a nut allergy?", mode="semantic")
            == indexed
        )
    finally:
        reopened.close()


# -- vectors follow the texts ----------------------------------------------------------------


def test_a_deleted_fact_or_entity_takes_its_vectors_with_it(memory: KnowledgeGraph, postgres_url: str):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    memory.delete_observations([ObservationDeletion("Bob", ("relocated to Germany last spring",))])
    assert "Bob" not in _names(memory, "Who moved abroad?", mode="semantic", limit=1)
    memory.delete_entities(["Alice"])
    assert "Alice" not in _names(memory, "Which colleague has a nut allergy?", mode="semantic")
    assert _table_counts(postgres_url) == (TEXTS - 1 - 3, 0)


def test_a_renamed_entity_waits_alone_and_is_found_by_its_new_name_once_embedded(
    memory: KnowledgeGraph, store: PostgresStore
):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    update_entities(memory, [EntityUpdate("Carol", new_name="Professor Caroline Whitfield")])
    assert store.vector_progress().waiting == 1  # the entity's own text; its facts are unchanged
    assert _embed_all(memory) == 1
    assert _names(memory, "the professor", mode="semantic", limit=1) == ["Professor Caroline Whitfield"]


def test_new_aliases_make_the_entity_wait_again_and_a_timestamp_change_does_not(
    memory: KnowledgeGraph, store: PostgresStore
):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    memory.add_observations([ObservationAddition("Dan", ("likes hiking",))])  # touches Dan's updatedAt
    assert store.vector_progress().waiting == 1  # the new fact only
    _embed_all(memory)
    update_entities(memory, [EntityUpdate("Dan", aliases=("Daniel the handyman",))])
    assert store.vector_progress().waiting == 1
    _embed_all(memory)
    assert _names(memory, "the handyman", mode="semantic", limit=1) == ["Dan"]


def test_after_a_merge_the_facts_of_both_find_the_entity_that_remains(memory: KnowledgeGraph, store: PostgresStore):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    merge_entities(memory, "Bob", "Dan")
    _embed_all(memory)
    assert _names(memory, "Who moved abroad?", mode="semantic", limit=1) == ["Dan"]
    assert _names(memory, "Who plays music?", mode="semantic", limit=1) == ["Dan"]
    # Three people left: their names and their facts (Dan's four now), nothing of Bob's twice.
    assert store.vector_progress().embedded == 3 + 2 + 2 + 4


def test_a_correction_is_found_by_meaning(memory: KnowledgeGraph):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    with memory.store.read():
        [dan] = memory.store.get_entities(["Dan"])
    [old] = [record for record in records_of(dan) if record.content == "bought a new phone"]
    memory.add_observations([ObservationAddition("Dan", ("switched to a tablet instead",), (old.id,))])
    _embed_all(memory)
    assert _names(memory, "Who changed to a tablet computer?", mode="semantic", limit=1) == ["Dan"]


def test_a_vector_for_a_text_renamed_since_it_was_claimed_is_not_stored(store: PostgresStore, model: Embedder):
    graph = KnowledgeGraph(store, embedder=model)
    graph.create_entities(PEOPLE)
    store.use_model(model.fingerprint)
    claimed = store.claim_texts(TEXTS, lease_seconds=60.0)
    carol = next(text for text in claimed if text.kind == ENTITY_TEXT and text.text == "Carol")
    update_entities(graph, [EntityUpdate("Carol", new_name="Caroline")])
    vectors = model.embed([text.text for text in claimed])
    stored = store.save_vectors([EmbeddedText(text, vector) for text, vector in zip(claimed, vectors, strict=True)])
    assert stored == TEXTS - 1
    # Caroline waits, unclaimed, for her new name's vector.
    [again] = store.claim_texts(TEXTS, lease_seconds=60.0)
    assert (again.kind, again.row_id, again.text) == (ENTITY_TEXT, carol.row_id, "Caroline")


def test_vectors_another_model_made_are_dropped_and_everything_is_embedded_again(
    memory: KnowledgeGraph, store: PostgresStore, postgres_url: str
):
    memory.create_entities(PEOPLE)
    _embed_all(memory)
    assert store.use_model("another-model/0000") is True
    assert store.vector_progress().waiting == TEXTS
    assert _table_counts(postgres_url) == (0, TEXTS)
    assert _names(memory, "Who moved abroad?", mode="semantic") == []  # none are this model's


# -- several servers on one database ---------------------------------------------------------


def test_two_servers_embedding_one_database_share_the_work_and_embed_no_text_twice(postgres_url: str, model: Embedder):
    stores = [PostgresStore(postgres_url, "test database") for _ in range(2)]
    try:
        people = [Entity(f"Person {n}", "person", (f"fact {n} one", f"fact {n} two")) for n in range(60)]
        KnowledgeGraph(stores[0]).create_entities(people)
        counts: Counter[str] = Counter()
        graphs = [KnowledgeGraph(store, embedder=CountingEmbedder(model, counts)) for store in stores]  # type: ignore[arg-type]
        done = [0, 0]

        def work(index: int) -> None:
            while taken := graphs[index].embed_pending(8):
                done[index] += taken

        threads = [threading.Thread(target=work, args=(index,)) for index in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sum(done) == sum(counts.values()) == 180
        assert all(done)  # both servers took part
        assert max(counts.values()) == 1  # no text embedded twice
        assert stores[1].vector_progress().waiting == 0
    finally:
        for store in stores:
            store.close()


def test_two_servers_never_claim_the_same_text_and_a_dead_servers_claim_lapses(postgres_url: str):
    stores = [PostgresStore(postgres_url, "test database") for _ in range(2)]
    try:
        KnowledgeGraph(stores[0]).create_entities(PEOPLE)
        first = stores[0].claim_texts(7, lease_seconds=60.0)
        second = stores[1].claim_texts(7, lease_seconds=60.0)
        keys = [(text.kind, text.row_id) for text in first + second]
        assert len(keys) == len(set(keys)) == TEXTS
        assert stores[0].claim_texts(7, lease_seconds=60.0) == []
        stores[0].release_texts(first)
        assert len(stores[1].claim_texts(TEXTS, lease_seconds=0.0)) == len(first)  # a claim that lapses at once
        assert len(stores[0].claim_texts(TEXTS, lease_seconds=60.0)) == len(first)
    finally:
        for store in stores:
            store.close()


def test_two_servers_starting_at_once_on_a_new_database_both_search_by_meaning(postgres_url: str):
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            opened.append(PostgresStore(postgres_url, "test database"))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert errors == []
        assert [store.why_no_vectors for store in opened] == [None, None]
    finally:
        for store in opened:
            store.close()


def test_search_by_meaning_works_through_pgbouncer_in_transaction_mode(
    pgbouncer_server: PostgresServer, model: Embedder
):
    url = pgbouncer_server.create_database()
    store = PostgresStore(url, "pooled database")
    try:
        graph = KnowledgeGraph(store, embedder=model)
        graph.create_entities(PEOPLE)
        _embed_all(graph)
        assert _names(graph, "Who moved abroad?", mode="semantic", limit=1) == ["Bob"]
    finally:
        store.close()
        pgbouncer_server.drop_database(url)


# -- without pgvector ------------------------------------------------------------------------


def test_without_pgvector_semantic_search_says_to_install_it_and_hybrid_searches_by_words(
    oldest_postgres_server: PostgresServer, model: Embedder
):
    url = oldest_postgres_server.create_database()
    store = PostgresStore(url, "old database")
    try:
        graph = KnowledgeGraph(store, embedder=model)
        graph.create_entities(PEOPLE)
        with pytest.raises(InvalidInputError, match="install pgvector") as raised:
            graph.search_nodes("Who moved abroad?", mode="semantic")
        assert '"lexical" or "hybrid"' in str(raised.value)
        assert _names(graph, "relocated") == ["Bob"]
        assert _names(graph, "Who moved abroad?") == []
        # Nothing to embed, and the model is never loaded for it.
        assert not graph.meaning.enabled
        assert graph.embed_pending() == 0
        assert not graph.meaning.loaded
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM vector_queue").fetchone() == (0,)
    finally:
        store.close()
        oldest_postgres_server.drop_database(url)


def test_a_user_who_may_not_create_pgvector_is_told_to_ask_the_owner_and_gets_it_at_the_next_start(
    postgres_server: PostgresServer, model: Embedder
):
    import os

    role = f"graphmem_team_{os.getpid()}"
    database = f"team_{os.getpid()}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'CREATE DATABASE "{database}" OWNER "{role}"')
    owner_url = postgres_server.database_url(database)
    url = _as_user(owner_url, role)
    try:
        store = PostgresStore(url, "team database")
        try:
            graph = KnowledgeGraph(store, embedder=model)
            graph.create_entities(PEOPLE)
            with pytest.raises(InvalidInputError, match="CREATE EXTENSION vector"):
                graph.search_nodes("Who moved abroad?", mode="semantic")
            assert _names(graph, "relocated") == ["Bob"]
        finally:
            store.close()
        with psycopg.connect(owner_url, autocommit=True) as conn:  # the database's owner, a superuser here
            conn.execute("CREATE EXTENSION vector")
        store = PostgresStore(url, "team database")
        try:
            assert store.why_no_vectors is None
            # What was written before waits for its vectors.
            assert store.vector_progress().waiting == TEXTS
            graph = KnowledgeGraph(store, embedder=model)
            _embed_all(graph)
            assert _names(graph, "Who moved abroad?", mode="semantic", limit=1) == ["Bob"]
        finally:
            store.close()
    finally:
        with psycopg.connect(postgres_server.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_a_text_written_while_another_server_turns_vectors_on_is_queued(postgres_url: str):
    # As a database without pgvector: no vectors table, the triggers queue nothing.
    PostgresStore(postgres_url, "test database").close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE vectors")
    with psycopg.connect(postgres_url) as writer:
        writer.execute(
            "INSERT INTO entities (name, entity_type, name_lc, type_lc) VALUES ('Eve', 'person', 'eve', 'person')"
        )
        # Another server starts meanwhile and turns vectors on; it waits for the write to end.
        opened: list[PostgresStore] = []
        starting = threading.Thread(target=lambda: opened.append(PostgresStore(postgres_url, "test database")))
        starting.start()
        with psycopg.connect(postgres_url, autocommit=True) as watcher:
            deadline = time.monotonic() + 30
            while not watcher.execute(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone():
                assert time.monotonic() < deadline, "the starting server never waited for the writer"
                time.sleep(0.01)
        writer.commit()
    starting.join(30)
    try:
        [eve] = opened[0].claim_texts(10, lease_seconds=60.0)
        assert (eve.kind, eve.text) == (ENTITY_TEXT, "Eve")
    finally:
        opened[0].close()


def test_an_entity_whose_aliases_hold_nul_can_be_changed_and_its_new_aliases_wait_for_a_vector(
    memory: KnowledgeGraph, store: PostgresStore
):
    memory.create_entities([Entity("Nul", "thing", ("a fact",), {"aliases": ["a\x00b"]})])
    _embed_all(memory)
    memory.add_observations([ObservationAddition("Nul", ("another fact",))])
    update_entities(memory, [EntityUpdate("Nul", aliases=("c\x00d",))])
    kinds = Counter(text.kind for text in store.claim_texts(10, lease_seconds=60.0))
    assert kinds[ENTITY_TEXT] == 1


# -- through a server ------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["memory", pytest.param("stdio", marks=pytest.mark.slow)])
async def test_a_server_on_a_database_url_embeds_in_the_background_and_hybrid_search_finds_by_meaning(
    postgres_url: str, transport: str
):
    async with TRANSPORTS[transport](postgres_url) as client:
        created = await client.call_tool("create_entities", {"entities": SERVED_PEOPLE})
        assert not created.is_error
        # The substring match comes first; once the worker has embedded the texts, a hybrid
        # search may add entities close in meaning after it (the race the old assertion lost).
        assert (await _search(client, "Germany"))[0] == "Bob"
        with anyio.fail_after(EMBEDDED_WITHIN_SECONDS):
            while await _search(client, "Who moved abroad?", mode="semantic", limit=1) != ["Bob"]:
                await anyio.sleep(0.1)
        assert (await _search(client, "Who moved abroad?", limit=3))[0] == "Bob"


@pytest.mark.anyio
async def test_a_server_on_a_database_without_pgvector_says_so_for_semantic_search_and_answers_hybrid_by_words(
    oldest_postgres_server: PostgresServer,
):
    url = oldest_postgres_server.create_database()
    try:
        async with TRANSPORTS["memory"](url) as client:  # type: ignore[arg-type]
            await client.call_tool("create_entities", {"entities": SERVED_PEOPLE})
            result = await client.call_tool("search_nodes", {"query": "Who moved abroad?", "mode": "semantic"})
            assert result.is_error
            text = result.content[0].text  # type: ignore[union-attr]
            assert "pgvector" in text and "install" in text and '"lexical" or "hybrid"' in text
            assert await _search(client, "Germany") == ["Bob"]
            assert await _search(client, "Who moved abroad?") == []
    finally:
        oldest_postgres_server.drop_database(url)


def test_storing_vectors_never_waits_for_a_client_writing_the_same_entity(
    store: PostgresStore, model: Embedder, postgres_url: str
):
    graph = KnowledgeGraph(store, embedder=model)
    graph.create_entities(PEOPLE)
    store.use_model(model.fingerprint)
    claimed = store.claim_texts(TEXTS, lease_seconds=60.0)
    vectors = model.embed([text.text for text in claimed])
    store.wait_for_locks(1.0)  # a wait would fail the save as busy after a second
    with psycopg.connect(postgres_url) as client:
        # A client's write in progress on Carol (a timestamp, say), not yet committed.
        client.execute("UPDATE entities SET updated_at = 'now' WHERE name = 'Carol'")
        stored = store.save_vectors([EmbeddedText(text, vector) for text, vector in zip(claimed, vectors, strict=True)])
        client.commit()
    # Carol's own text is left for the next batch, given back at once rather than left claimed.
    assert stored == TEXTS - 1
    [again] = store.claim_texts(TEXTS, lease_seconds=60.0)
    assert (again.kind, again.text) == (ENTITY_TEXT, "Carol")
