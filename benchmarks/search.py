"""Search benchmark: ranked search_nodes on a 40,000-entity memory, in process and over stdio.

    python -m benchmarks.search                      # realistic memory, 40,000 entities
    python -m benchmarks.search --graph synthetic    # benchmarks.run's graph: 50 words, each in 30% of entities
    python -m benchmarks.search --size 10000 --repeats 50

The realistic memory is what an agent writes over time: people, companies, cities and
projects with observations from ~40 sentence templates (who works where, who moved where
and when, who likes what), so most words are rare and a few ("works", "lives") are in a
tenth of the entities. The synthetic graph of `benchmarks.run` is the worst case for
BM25: every word is in about 30% of the entities.

It times the bulk import, single writes, and search_nodes for a selective query, a name,
a plain-language question and a common word, with and without `limit`, then the same
searches through a real `graphmem` process over stdio (the graphmem on PYTHONPATH), each
call in another letter case, so that none is answered from the answers graphmem keeps.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.run import PipeClient, generate
from graphmem.config import Settings
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.domain.graph import KnowledgeGraph
from graphmem.storage import open_store

_FIRST = (
    "Anna Ben Carla David Elena Farid Greta Hugo Ines Jonas Kira Lars Maya Nikos Olga Pablo Qiang Rosa "
    "Sven Tara Umar Vera Wen Ximena Yusuf Zoe Amir Bianca Chen Dmitri Emma Felix Gwen Hana Ivan Julia Kenji "
    "Leila Marco Nora Omar Priya Rafael Sofia Tomas Uma Viktor Wanda Yara"
).split()
_LAST = (
    "Adams Berg Costa Dubois Eriksen Fischer Garcia Haddad Ito Jensen Kowalski Lopez Meyer Novak Okafor "
    "Petrov Quinn Rossi Schmidt Tanaka Ueda Vargas Weber Xu Yilmaz Zimmermann Andersen Brown Castro Dietrich"
).split()
_CITIES = (
    "Berlin Lisbon Toronto Tokyo Austin Munich Oslo Nairobi Madrid Seoul Dublin Prague Vienna Lagos Lima "
    "Denver Zurich Porto Krakow Osaka Melbourne Chicago Boston Hamburg Milan Athens Cairo Delhi Bogota Quito"
).split()
_ROLES = "engineer designer manager analyst nurse teacher lawyer chef architect researcher accountant doctor".split()
_HOBBIES = "sailing chess climbing pottery jazz running painting gardening surfing baking cycling birdwatching".split()
_FOODS = "sushi tacos ramen curry pizza falafel dumplings pho paella tapas".split()
_TEMPLATES = (
    "Works at {company} as a {role}",
    "Lives in {city}",
    "Moved to {city} in {year}",
    "Left {company} in {year}",
    "Joined {company} in {year} after leaving {company2}",
    "Grew up in {city}",
    "Enjoys {hobby} on weekends",
    "Allergic to {food}",
    "Favourite food is {food}",
    "Birthday is on {day} {month}",
    "Met {person} at a conference in {city}",
    "Reports to {person}",
    "Studied at the University of {city}",
    "Speaks {language} and English",
    "Prefers email over phone calls",
    "Has two kids",
    "Working on {project}",
    "Promoted to senior {role} in {year}",
    "Plans a trip to {city} next {month}",
    "Recommended {company} to the user",
)
_LANGUAGES = "Spanish German Japanese French Portuguese Korean Italian Polish Greek Arabic".split()
_MONTHS = "January February March April May June July August September October November December".split()
_WORDS = (
    "north blue bright river stone iron cloud swift green delta apex lumen nova harbor summit pixel orbit "
    "cedar falcon quartz amber ember maple atlas vector signal canyon prairie willow cobalt"
).split()


def realistic(size: int, seed: int = 11) -> tuple[list[Entity], list[Relation]]:
    """A memory shaped like an agent's: about 70% people, 15% companies, 15% projects."""
    rng = random.Random(seed)
    companies = [f"{rng.choice(_WORDS).title()} {rng.choice(_WORDS).title()} {i}" for i in range(size * 15 // 100)]
    projects = [f"Project {rng.choice(_WORDS).title()} {i}" for i in range(size * 15 // 100)]
    people = [f"{rng.choice(_FIRST)} {rng.choice(_LAST)} {i}" for i in range(size - len(companies) - len(projects))]

    def sentence() -> str:
        return rng.choice(_TEMPLATES).format(
            company=rng.choice(companies),
            company2=rng.choice(companies),
            role=rng.choice(_ROLES),
            city=rng.choice(_CITIES),
            year=rng.randint(2010, 2025),
            hobby=rng.choice(_HOBBIES),
            food=rng.choice(_FOODS),
            day=rng.randint(1, 28),
            month=rng.choice(_MONTHS),
            person=rng.choice(people),
            language=rng.choice(_LANGUAGES),
            project=rng.choice(projects),
        )

    entities = [Entity(name, "person", tuple({sentence(): None for _ in range(3)})) for name in people]
    entities += [
        Entity(name, "company", (f"Based in {rng.choice(_CITIES)}", f"Founded in {rng.randint(1990, 2024)}"))
        for name in companies
    ]
    entities += [Entity(name, "project", (f"Run by {rng.choice(companies)}", sentence())) for name in projects]
    names = [entity.name for entity in entities]
    relation_types = ("knows", "works_at", "works_on", "lives_in", "reports_to")
    keys = {(name, rng.choice(names), relation_types[n]): None for name in names for n in range(3)}
    return entities, [Relation(*key) for key in keys]


def _time(fn: Callable[[int], Any], repeats: int) -> str:
    fn(10_000)  # warm-up
    samples = []
    for i in range(repeats):
        started = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - started) * 1000)
    ordered = sorted(samples)
    return f"{statistics.median(samples):7.2f} ms median, {ordered[int(0.95 * (len(ordered) - 1))]:7.2f} p95"


def _cased(query: str, i: int) -> str:
    """The query with the case of its letters set by the bits of `i`: the same search, but a
    call graphmem has not answered before, so it is not served from the answers it keeps."""
    letters = iter(range(len(query)))
    return "".join(
        char.upper() if char.isalpha() and (i >> next(letters)) & 1 else char.lower() if char.isalpha() else char
        for char in query
    )


def _queries(graph: str, entities: list[Entity]) -> dict[str, str]:
    if graph == "synthetic":
        return {
            "selective (#1234-1)": "#1234-1",
            "name (entity-123)": "entity-123",
            "question": "Which city did entity-5 move to after he left berlin?",
            "common word (python)": "python",
        }
    person = next(entity for entity in entities if any(o.startswith("Left ") for o in entity.observations))
    left = next(o for o in person.observations if o.startswith("Left "))
    company = left[len("Left ") : left.rindex(" in ")]
    return {
        "selective (a company)": company,
        "name (first + last)": " ".join(person.name.split()[:2]),
        "question": f"Which city did {person.name.split()[0]} move to after leaving {company}?",
        "common word (works)": "works",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", choices=["realistic", "synthetic"], default="realistic")
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    entities, relations = (realistic if args.graph == "realistic" else generate)(args.size)
    with tempfile.TemporaryDirectory(prefix="graphmem-search-") as folder:
        db = Path(folder) / "memory.db"
        started = time.perf_counter()
        store = open_store(Settings(memory_path=db))
        graph = KnowledgeGraph(store)
        graph.import_graph(entities, relations)
        print(f"{args.size:,} entities, {len(relations):,} relations ({args.graph})")
        print(f"  bulk import {time.perf_counter() - started:.2f} s; database {db.stat().st_size / 1e6:.1f} MB")
        size = len(entities)
        print("  create_entities (1)  ", _time(lambda i: graph.create_entities([Entity(f"new {i}", "t", ("x",))]), 30))
        print(
            "  add_observations (1) ",
            _time(
                lambda i: graph.add_observations([ObservationAddition(entities[i * 37 % size].name, (f"b {i}",))]), 30
            ),
        )
        queries = _queries(args.graph, entities)
        print("  in process, search_nodes:")
        for label, query in queries.items():
            print(f"    {label:<24} limit 10 {_time(lambda i, q=query: graph.search_nodes(q, limit=10), args.repeats)}")
            print(f"    {'':<24} no limit {_time(lambda i, q=query: graph.search_nodes(q), 5)}")
        store.close()

        env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH") if key in os.environ}
        client = PipeClient([sys.executable, "-m", "graphmem"], {**env, "MEMORY_FILE_PATH": str(db)})
        print("  over stdio, search_nodes with limit 10:")
        print(f"    {'ping':<24}          {_time(lambda i: client.request('ping'), args.repeats)}")
        for label, query in queries.items():
            print(
                f"    {label:<24}          "
                + _time(
                    lambda i, q=query: client.call("search_nodes", {"query": _cased(q, i), "limit": 10}), args.repeats
                )
            )
        client.close()


if __name__ == "__main__":
    main()
