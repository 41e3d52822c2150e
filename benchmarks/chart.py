"""Latency against graph size, graphmem beside the official server, as a PNG.

Drawn from the reports `benchmarks.run` writes; needs matplotlib (`pip install -e '.[bench]'`,
which `./scripts/bench` does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The operations drawn: a point read, two searches, a write, the whole-graph read built afresh
# (not the answer kept from the call before), and what every call costs.
CHARTED = (
    "open_nodes (1)",
    "search_nodes (word)",
    "search_nodes (common word)",
    "add_observations (1)",
    "read_graph (after a write)",
    "ping",
)


def draw_chart(reports: list[dict[str, Any]], path: Path) -> str:
    """Draw median latency against size for each charted operation; returns what happened, for people."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no screen needed
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no chart (pip install -e '.[bench]')"
    sizes = [report["size"] for report in reports]
    if len(sizes) < 2:
        return "one size only: no chart"
    figure, axes = plt.subplots(1, len(CHARTED), figsize=(4 * len(CHARTED), 3.6), sharey=True)
    for axis, operation in zip(axes, CHARTED, strict=True):
        for server, style in (("graphmem", "o-"), ("graphmem-jsonl", "^:"), ("official", "s--")):
            points = [
                (report["size"], report["operations"][operation][server]["median_ms"])
                for report in reports
                if server in report["operations"].get(operation, {})
            ]
            if points:
                label = "graphmem (JSONL file)" if server == "graphmem-jsonl" else server
                axis.plot(*zip(*points, strict=True), style, label=label)
        axis.set_title(operation, fontsize=10)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("entities")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("median latency over stdio (ms)")
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return f"chart written to {path}"
