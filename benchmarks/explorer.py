"""How soon the explorer shows a memory, in Debian's Chromium, on memories of any size side by side.

    python -m benchmarks.explorer --memory /tmp/zipf-40k.db --memory /tmp/zipf-1m.db
    python -m benchmarks.explorer --sizes 100 40000 --repeats 5     # builds the memories (cached)

For each memory it starts a real `graphmem serve --http` (the graphmem on PYTHONPATH) and
opens the page in headless Chromium through Playwright, `--repeats` times in fresh pages,
and reports the median and the worst of:

- first paint: the browser's first-contentful-paint (the page's frame, before any data);
- overview drawn: from navigation until the page says it is idle (`<body data-explorer=
  "idle">`): the overview fetched, the type clusters and the most connected entities laid
  out by fCoSE and drawn;
- overview answer: `/api/overview` asked alone by a plain HTTP client on loopback, 20 times:
  the server's share, without the page's other requests beside it.

The memories are only read. Needs chromium on PATH (`scripts/system-packages` installs it)
and the `playwright` package (in `.[test]`); never downloads a browser.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

CACHE = Path.home() / ".cache" / "graphmem-bench"
TOKEN = "benchmark-token-0123456789abcdef"


def _memory_of_size(size: int) -> Path:
    """A SQLite memory of `size` entities from `benchmarks.zipf_memory`, built once and cached."""
    CACHE.mkdir(parents=True, exist_ok=True)
    database = CACHE / f"explorer-zipf-{size}.db"
    if not database.exists():
        jsonl = CACHE / f"explorer-zipf-{size}.jsonl"
        subprocess.run(
            [sys.executable, "-m", "benchmarks.zipf_memory", "--entities", str(size), "--out", str(jsonl)], check=True
        )
        subprocess.run(
            [sys.executable, "-m", "graphmem", "import", "--no-semantic", "-f", str(database), str(jsonl)],
            check=True,
        )
        jsonl.unlink()
    return database


class _Server:
    """`graphmem serve --http` on a memory, on a free loopback port."""

    def __init__(self, memory: Path) -> None:
        env = {**os.environ, "GRAPHMEM_TOKEN": TOKEN, "GRAPHMEM_SEMANTIC": "false"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graphmem", "serve", "--http", "--port", "0", "-f", str(memory)],
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.process.stderr is not None
        said = b""
        while (match := re.search(rb"at (http://\S+)/mcp", said)) is None:
            line = self.process.stderr.readline()
            if not line:
                raise SystemExit(f"the server did not start: {said.decode(errors='replace')}")
            said += line
        self.root = match.group(1).decode("ascii")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _open_once(browser: Any, root: str) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        started = time.perf_counter()
        page.goto(f"{root}/#token={TOKEN}")
        page.wait_for_selector("body[data-explorer=idle]", timeout=60_000)
        drawn = (time.perf_counter() - started) * 1000
        timings = page.evaluate(
            """() => {
                const paint = performance.getEntriesByName('first-contentful-paint')[0];
                return {paint: paint ? paint.startTime : -1};
            }"""
        )
        return {"first paint": timings["paint"], "overview drawn": drawn}
    finally:
        page.close()


def _overview_answers(root: str, count: int) -> list[float]:
    request = urllib.request.Request(f"{root}/api/overview", headers={"authorization": f"Bearer {TOKEN}"})
    took = []
    for _ in range(count):
        started = time.perf_counter()
        with urllib.request.urlopen(request) as response:
            response.read()
        took.append((time.perf_counter() - started) * 1000)
    return took


def measure(memories: list[tuple[str, Path]], repeats: int) -> list[tuple[str, dict[str, list[float]]]]:
    """Each memory's timings, `repeats` openings each (after one to warm the server and browser)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium on PATH: run scripts/system-packages (Debian: apt-get install chromium)")
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    results = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=args)
        try:
            for label, memory in memories:
                server = _Server(memory)
                try:
                    _open_once(browser, server.root)
                    runs = [_open_once(browser, server.root) for _ in range(repeats)]
                    answers = _overview_answers(server.root, 20)
                finally:
                    server.stop()
                timings = {key: [run[key] for run in runs] for key in runs[0]}
                results.append((label, {**timings, "overview answer": answers}))
        finally:
            browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=Path, action="append", default=[], help="a memory to open (repeatable)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[], help="build memories of these sizes (cached)")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    memories = [(str(path), path) for path in options.memory]
    memories += [(f"{size:,} entities", _memory_of_size(size)) for size in options.sizes]
    if not memories:
        parser.error("give --memory PATH or --sizes N ...")
    print(f"machine: {os.cpu_count()} cores; {options.repeats} openings each; median / worst in ms")
    for label, timings in measure(memories, options.repeats):
        shown = "  ".join(f"{key} {statistics.median(v):7.1f} / {max(v):7.1f}" for key, v in timings.items())
        print(f"{label:>28}  {shown}")


if __name__ == "__main__":
    main()
