"""The approximate index of search by meaning: its recall against exact search, its speed, its build.

    # Recall and first-pass latency on a memory whose vectors the real model made:
    python -m benchmarks.vector_index recall --memory /tmp/m40k.db
    python -m benchmarks.vector_index recall --memory /tmp/m40k.db --others   # usearch, faiss if installed

    # A million entities for the LATENCY figure only (see below), then its index:
    python -m benchmarks.vector_index derive --memory /tmp/zipf-1m.db --out /tmp/ann-1m.db
    python -m benchmarks.vector_index build --memory /tmp/ann-1m.db
    python -m benchmarks.vector_index search --memory /tmp/ann-1m.db     # the vector half, in process
    python -m benchmarks.meaning --memory /tmp/ann-1m.db --repeats 30

`recall` scores every stored vector against 300 queries (the evaluation set's plain
questions and questions drawn from the memory's facts) for the true ten nearest texts, then
asks the exact first pass (every sign code, as below 300,000 vectors) and the approximate
index (`graphmem.storage.ivf`, built in a temporary folder) for theirs, each followed by the
same exact rescoring of its candidates as the store's. `--others` adds HNSW (usearch, int8
and binary) and faiss's binary IVF, when they are importable (they are not dependencies).

`derive` makes vectors for a memory too large to embed here (6.5 million texts at 35 to 75
a second on these 2 cores is days): it COPIES the memory, embeds a real sample of its texts
with the real model (`--sample`, 10,000 by default), and gives every text of the copy the
vector of a sample text drawn at random plus Gaussian noise (`--noise` per dimension),
made unit length again. These vectors have the real model's distribution near the sample
but not its meaning: a search over them is a LATENCY figure, never a quality figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from benchmarks.search_scale import draw_queries
from graphmem.embedding import load_embedder
from graphmem.storage.ivf import IvfIndex, IvfWriter, list_count, sample_size, train_centroids
from graphmem.storage.sqlite import SQLiteStore
from graphmem.storage.vectors import BitIndex, dequantize, quantize

_PLAIN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "search" / "meaning.json"
_DIMENSIONS = 384
_RESCORED = 400

Vectors = npt.NDArray[np.float32]


def _median_p95(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{statistics.median(samples):6.2f} ms median {ordered[round(0.95 * (len(ordered) - 1))]:6.2f} ms p95"


def _queries(memory: Path, count: int) -> list[str]:
    plain = [item["question"] for item in json.loads(_PLAIN.read_text(encoding="utf-8"))["questions"]]
    drawn = draw_queries(memory, count // 2)
    return plain[: count - count // 2] + drawn["question"][: count // 2]


def _load(memory: Path) -> tuple[npt.NDArray[np.int64], bytes, Vectors]:
    conn = sqlite3.connect(f"file:{memory}?mode=ro", uri=True)
    rows = conn.execute("SELECT id, code, vector FROM vectors ORDER BY id").fetchall()
    conn.close()
    ids = np.array([row[0] for row in rows], dtype=np.int64)
    return ids, b"".join(row[1] for row in rows), dequantize([row[2] for row in rows], _DIMENSIONS)


def _measure(
    label: str,
    first_pass: Callable[[Vectors], npt.NDArray[np.int64]],
    base: Vectors,
    queries: Vectors,
    true: list[set[int]],
) -> None:
    """Recall@10 of the texts and the latency of the first pass plus the rescoring of its candidates."""
    found, samples = [], []
    for query in queries:
        started = time.perf_counter()
        positions = first_pass(query)
        best = positions[np.argsort(-(base[positions] @ query))[:10]]
        samples.append((time.perf_counter() - started) * 1000)
        found.append(len(set(best.tolist()) & true[len(found)]) / 10)
    print(f"  {label:<44} recall@10 {statistics.mean(found):.3f}   {_median_p95(samples)}", flush=True)


def recall(args: argparse.Namespace) -> None:
    ids, codes, base = _load(args.memory)
    base /= np.maximum(np.linalg.norm(base, axis=1, keepdims=True), 1e-12)
    positions = np.arange(len(ids))
    queries = load_embedder().embed(_queries(args.memory, args.queries))
    true = [set(np.argsort(-(base @ query))[:10].tolist()) for query in queries]
    print(f"{args.memory}: {len(ids):,} vectors, {len(queries)} queries; candidates rescored exactly: {_RESCORED}")
    exact = BitIndex()
    exact.append(positions.tolist(), [codes[at * 48 : at * 48 + 48] for at in range(len(ids))])
    _measure("exact sign-bit pass (every code)", lambda query: exact.candidates(query, _RESCORED), base, queries, true)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        rng = np.random.default_rng(0)
        sample = base[rng.choice(len(base), min(len(base), sample_size(len(base))), replace=False)]
        writer = IvfWriter(Path(folder), train_centroids(sample, list_count(len(base))), _DIMENSIONS // 64)
        words = np.frombuffer(codes, dtype=np.uint64).reshape(len(ids), -1)
        for start in range(0, len(ids), 50_000):
            part = slice(start, start + 50_000)
            writer.add(positions[part], words[part], base[part])
        writer.finish(Path(folder) / "index", "bench", int(positions[-1]), lambda: True)
        index = IvfIndex(Path(folder) / "index")
        print(f"  IVF: {list_count(len(base))} lists; built in {time.perf_counter() - started:.1f} s")
        default = index.probed
        for probed in (default / 2, default, default * 2):
            index.probed = probed
            share = f"{probed / len(index):.0%} of the vectors probed"
            label = f"IVF, {share}{' (the default)' if probed == default else ''}"
            _measure(label, lambda q: index.candidates(q, _RESCORED), base, queries, true)
    if args.others:
        _others(base, queries, true)


def _others(base: Vectors, queries: Vectors, true: list[set[int]]) -> None:
    try:
        from usearch.index import Index  # type: ignore[import-not-found]
    except ImportError:
        print("  usearch is not installed: skipped")
    else:
        for dtype, metric in (("i8", "cos"), ("b1", "hamming")):
            index = Index(ndim=_DIMENSIONS, metric=metric, dtype=dtype, connectivity=16)
            data = base if dtype == "i8" else np.packbits(base > 0, axis=1)
            started = time.perf_counter()
            index.add(np.arange(len(base)), data, threads=2)
            print(
                f"  usearch HNSW {dtype}: built in {time.perf_counter() - started:.0f} s,"
                f" {index.memory_usage / 1e6:.0f} MB"
            )
            for expansion in (64, 256):
                index.expansion_search = expansion

                def search(query: Vectors, index: Index = index, dtype: str = dtype) -> npt.NDArray[np.int64]:
                    found = index.search(query if dtype == "i8" else np.packbits(query > 0), _RESCORED)
                    return np.asarray(found.keys, dtype=np.int64)

                _measure(f"usearch HNSW {dtype}, ef {expansion}", search, base, queries, true)
    try:
        import faiss  # type: ignore[import-not-found]
    except ImportError:
        print("  faiss is not installed: skipped")
    else:
        faiss.omp_set_num_threads(1)
        codes = np.packbits(base > 0, axis=1)
        lists = list_count(len(base))
        ivf = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(_DIMENSIONS), _DIMENSIONS, lists)
        ivf.train(codes)
        ivf.add(codes)
        ivf.nprobe = max(8, round(0.08 * lists))

        def binary_ivf(query: Vectors) -> npt.NDArray[np.int64]:
            _, found = ivf.search(np.packbits(query > 0)[None], _RESCORED)
            return np.asarray(found[0][found[0] >= 0], dtype=np.int64)

        _measure(f"faiss binary IVF, {ivf.nprobe} of {lists} lists", binary_ivf, base, queries, true)


def derive(args: argparse.Namespace) -> None:
    if args.out.exists():
        sys.exit(f"{args.out} exists: derive writes a new copy")
    print(f"copying {args.memory} to {args.out}", flush=True)
    source = sqlite3.connect(f"file:{args.memory}?mode=ro", uri=True)
    target = sqlite3.connect(args.out)
    source.backup(target)  # a consistent copy, whatever the source's write-ahead log holds
    source.close()
    target.close()
    SQLiteStore(args.out).close()  # brought to this graphmem's schema
    target = sqlite3.connect(args.out)
    rng = random.Random(args.seed)
    (observations,) = target.execute("SELECT max(id) FROM observations").fetchone()
    chosen = sorted(rng.sample(range(1, observations + 1), args.sample))
    texts = [
        row[0]
        for start in range(0, len(chosen), 900)
        for row in target.execute(
            f"SELECT content FROM observations WHERE id IN ({', '.join('?' * len(chosen[start : start + 900]))})",
            chosen[start : start + 900],
        )
    ]
    embedder = load_embedder(workers=os.cpu_count() or 1)
    started = time.perf_counter()
    sample = np.concatenate([embedder.embed(texts[at : at + 256]) for at in range(0, len(texts), 256)])
    print(f"embedded {len(texts):,} real texts in {time.perf_counter() - started:.0f} s", flush=True)
    noise = np.random.default_rng(args.seed)
    target.execute("DELETE FROM vectors")
    target.execute("DELETE FROM vectors_stale")
    target.execute("DELETE FROM vector_index")
    target.execute("INSERT OR REPLACE INTO vector_model (id, fingerprint) VALUES (1, ?)", (embedder.fingerprint,))
    written = 0
    for kind, query in ((0, "SELECT id, id FROM entities"), (1, "SELECT id, entity_id FROM observations")):
        cursor = target.execute(query)
        while rows := cursor.fetchmany(100_000):
            made = sample[noise.integers(0, len(sample), len(rows))] + noise.normal(
                0, args.noise, (len(rows), _DIMENSIONS)
            ).astype(np.float32)
            made /= np.linalg.norm(made, axis=1, keepdims=True)
            codes, blobs = quantize(made.astype(np.float32))
            target.executemany(
                "INSERT INTO vectors (kind, row_id, entity_id, code, vector) VALUES (?, ?, ?, ?, ?)",
                [(kind, row[0], row[1], code, blob) for row, code, blob in zip(rows, codes, blobs, strict=True)],
            )
            written += len(rows)
            print(f"\r{written:,} vectors written", end="", flush=True)
    target.commit()
    target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    target.close()
    print(f"\n{args.out}: {written:,} derived vectors (latency figures only)")


def build(args: argparse.Namespace) -> None:
    store = SQLiteStore(args.memory)
    started = time.perf_counter()
    built = store.rebuild_vector_index()
    took = time.perf_counter() - started
    files = sorted(args.memory.parent.glob(f"{args.memory.name}-ivf-*"))
    size = sum(file.stat().st_size for file in files) / 1e6
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"built: {built}, in {took:.0f} s; index file {size:,.0f} MB; peak memory of this process {peak:,.0f} MB")
    store.close()
    if not files:
        return
    index = IvfIndex(files[0])
    queries = load_embedder().embed(_queries(args.memory, 60))
    default = index.probed
    for probed in (default / 2, default, default * 2):
        index.probed = probed
        samples = []
        for query in queries:
            started = time.perf_counter()
            index.candidates(query, _RESCORED)
            samples.append((time.perf_counter() - started) * 1000)
        print(
            f"first pass over {len(index):,} vectors in {len(index.centroids)} lists, {probed / len(index):.0%}"
            f" of them probed (+2% outliers): {_median_p95(samples)}"
        )


def search(args: argparse.Namespace) -> None:
    """The vector half of a search, in process: SQLiteStore.nearest_entities (first pass, exact
    rescoring of its candidates read from the file, names), by itself."""
    store = SQLiteStore(args.memory)
    embedder = load_embedder()
    queries = embedder.embed(_queries(args.memory, args.queries + 1))
    started = time.perf_counter()
    store.nearest_entities(queries[-1], embedder.fingerprint, 10)
    print(f"first search (index loaded, tail read): {(time.perf_counter() - started) * 1000:.0f} ms")
    samples = []
    for query in queries[:-1]:
        started = time.perf_counter()
        store.nearest_entities(query, embedder.fingerprint, 10)
        samples.append((time.perf_counter() - started) * 1000)
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    sizes = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("Rss")}
    print(f"nearest_entities, limit 10, {len(samples)} queries: {_median_p95(samples)}")
    print("process memory: " + ", ".join(f"{key} {value:.0f} MB" for key, value in sizes.items()))
    store.close()


def copy_index(memory: Path, copy: Path) -> None:
    """Give a copy of a memory the index files of the original (named after the copy)."""
    for file in memory.parent.glob(f"{memory.name}-ivf-*"):
        shutil.copyfile(file, copy.parent / file.name.replace(memory.name, copy.name, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    measured = commands.add_parser("recall", help="recall and latency against exact search, on real vectors")
    measured.add_argument("--memory", type=Path, required=True)
    measured.add_argument("--queries", type=int, default=300)
    measured.add_argument("--others", action="store_true", help="also usearch and faiss, if importable")
    derived = commands.add_parser("derive", help="a copy with vectors derived from a real sample (latency only)")
    derived.add_argument("--memory", type=Path, required=True)
    derived.add_argument("--out", type=Path, required=True)
    derived.add_argument("--sample", type=int, default=10_000)
    derived.add_argument("--noise", type=float, default=0.03)
    derived.add_argument("--seed", type=int, default=5)
    built = commands.add_parser("build", help="build the approximate index now and time its first pass")
    built.add_argument("--memory", type=Path, required=True)
    searched = commands.add_parser("search", help="time the vector half of a search in process")
    searched.add_argument("--memory", type=Path, required=True)
    searched.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    {"recall": recall, "derive": derive, "build": build, "search": search}[args.command](args)


if __name__ == "__main__":
    main()
