"""The speed targets graphmem holds itself to, checked against a run's figures.

Each check names its target, says what was measured, and whether it holds; a size the
run did not measure is reported as such rather than passed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["check_targets"]

SINGLE_WRITES = (
    "create_entities (1)",
    "create_relations (1)",
    "add_observations (1)",
    "delete_observations (1)",
    "delete_relations (1)",
    "delete_entities (1)",
)
POINT_OPERATIONS = ("open_nodes (1)", *SINGLE_WRITES)
SEARCHES = ("search_nodes (word)", "search_nodes (name)", "search_nodes (common word)", "search_nodes (question)")
IMPORT_MEMORY_FACTOR = 3
"""How much more memory importing 1,000,000 entities may take than importing 40,000."""


def _median(report: dict[str, Any], operation: str, server: str = "graphmem") -> float | None:
    row = report["operations"].get(operation, {})
    return row[server]["median_ms"] if server in row else None


def _ratios(report: dict[str, Any]) -> dict[str, float]:
    """official median / graphmem median for every tool both servers ran (ping is not a tool)."""
    return {
        name: row["official"]["median_ms"] / row["graphmem"]["median_ms"]
        for name, row in report["operations"].items()
        if name != "ping" and "official" in row and "graphmem" in row
    }


def _line(ok: bool, target: str, measured: str) -> str:
    return f"  {'PASS' if ok else 'MISS'}  {target}: {measured}"


def _slowest(report: dict[str, Any], operations: tuple[str, ...], limit_ms: float, target: str) -> str:
    medians = {name: value for name in operations if (value := _median(report, name)) is not None}
    name, value = max(medians.items(), key=lambda item: item[1])
    return _line(value <= limit_ms, target, f"slowest {name} {value:.2f} ms")


def _at_40k(report: dict[str, Any]) -> Iterator[str]:
    ratios = _ratios(report)
    if ratios:
        name, ratio = min(ratios.items(), key=lambda item: item[1])
        yield _line(ratio >= 100, "every official tool at least 100x faster", f"lowest {name} {ratio:.0f}x")
    else:
        yield "  ----  every official tool at least 100x faster: the official server did not run"
    yield _slowest(report, POINT_OPERATIONS, 2.0, "a point read or single write at most 2 ms median")
    yield _slowest(report, SEARCHES, 10.0, "search_nodes at most 10 ms median")
    seconds = report["graphmem_import_seconds"]
    yield _line(seconds <= 10, "importing the JSONL file at most 10 s", f"{seconds:.1f} s")
    peak = max(report["peak_memory_mb"]["graphmem"] or 0, report["graphmem_import_peak_memory_mb"])
    yield _line(peak <= 150, "peak memory at most 150 MB (server and import)", f"{peak:.0f} MB")


def _at_1m(report: dict[str, Any], import_peak_40k: float | None) -> Iterator[str]:
    yield _slowest(report, POINT_OPERATIONS, 3.0, "point operations at most 3 ms median")
    yield _slowest(report, SEARCHES, 50.0, "search at most 50 ms median")
    peak = report["graphmem_import_peak_memory_mb"]
    if import_peak_40k is None:
        yield f"  ----  import memory within {IMPORT_MEMORY_FACTOR}x of 40,000 entities': 40,000 not measured"
    else:
        factor = peak / import_peak_40k
        yield _line(
            factor <= IMPORT_MEMORY_FACTOR,
            f"import memory at most {IMPORT_MEMORY_FACTOR}x that at 40,000 entities",
            f"{peak:.0f} MB, {factor:.1f}x",
        )


def _at_100(report: dict[str, Any]) -> Iterator[str]:
    ping = report["operations"]["ping"]
    if "official" not in ping:
        yield "  ----  the protocol layer's cost: the official server did not run"
        return
    yield (
        f"        ping round trip (the protocol layer's cost): graphmem {ping['graphmem']['median_ms']:.3f} ms, "
        f"official {ping['official']['median_ms']:.3f} ms"
    )


def _never_slower(reports: list[dict[str, Any]]) -> str:
    """No size where the official server wins: the lowest ratio of any official tool at any size."""
    ratios = {(report["size"], name): ratio for report in reports for name, ratio in _ratios(report).items()}
    if not ratios:
        return "  ----  every official tool at least as fast as the official server: it did not run"
    (size, name), ratio = min(ratios.items(), key=lambda item: item[1])
    return _line(
        ratio >= 1,
        "every official tool at least as fast as the official server, at every size",
        f"lowest {name} at {size:,} entities {ratio:.3f}x",
    )


def check_targets(reports: list[dict[str, Any]], start_up: dict[str, float]) -> list[str]:
    """One line per target: PASS, MISS, or ---- when the run cannot tell."""
    by_size = {report["size"]: report for report in reports}
    lines = ["targets:"]
    sections = (
        (40_000, "40,000 entities / 120,000 relations", _at_40k),
        (
            1_000_000,
            "1,000,000 entities",
            lambda report: _at_1m(report, by_size.get(40_000, {}).get("graphmem_import_peak_memory_mb")),
        ),
        (100, "100 entities", _at_100),
    )
    for size, title, checks in sections:
        if size not in by_size:
            lines.append(f" {title}: not measured in this run")
            continue
        lines.append(f" {title}:")
        lines.extend(checks(by_size[size]))
    cold = max(report["cold_start_seconds"]["graphmem"] for report in reports)
    floor = start_up["mcp_sdk"]
    lines.append(" every size:")
    lines.append(_never_slower(reports))
    lines.append(
        _line(
            cold <= floor + 0.2,
            "cold start within 0.2 s of importing the MCP SDK",
            f"slowest {cold:.2f} s against {floor:.2f} s for the import "
            f"(graphmem's modules {start_up['graphmem_modules']:.2f} s, Python alone {start_up['python']:.2f} s)",
        )
    )
    return lines
