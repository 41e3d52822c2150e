"""The command: python -m benchmarks.retrieval [--set meaning|quality|locomo [PATH]] [--as sessions|turns] [--json].

See the package docstring for what it measures."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.retrieval.evaluate import MODES, Report, evaluate
from benchmarks.retrieval.locomo import LOADINGS, load_locomo
from benchmarks.retrieval.sets import EvalSet, load_meaning, load_quality


def _table(report: Report) -> str:
    data = report.as_dict()
    lines = [f"set: {data['set']}, {data['questions']} questions"]
    if report.skipped:
        lines.append(f"note: {report.skipped}")
    if report.embedded:
        rate = report.embedded / report.embed_seconds if report.embed_seconds else 0.0
        lines.append(f"embedding: {report.embedded} texts in {report.embed_seconds:.1f} s ({rate:.0f}/s)")
    lines.append(f"{'mode':<9} {'category':<13} {'n':>5} {'R@5':>6} {'R@10':>6} {'all@5':>6} {'MRR':>6}")
    for mode, summary in data["modes"].items():
        rows = [*summary["categories"].items(), ("overall", summary["overall"])]
        for category, row in rows:
            figures = f"{row['recall@5']:>6.3f} {row['recall@10']:>6.3f} {row['all@5']:>6.3f} {row['mrr']:>6.3f}"
            lines.append(f"{mode:<9} {category:<13} {row['n']:>5} {figures}")
        lines.append(f"{mode:<9} median search latency {summary['median_ms']:.2f} ms")
    return "\n".join(lines)


def _eval_set(name: str, path: Path | None, loading: str, adversarial: bool) -> EvalSet:
    if name == "meaning":
        return load_meaning(path)
    if name == "quality":
        return load_quality(path)
    if path is None:
        sys.exit("--set locomo needs the path of locomo10.json (it is not in the repository: CC BY-NC)")
    return load_locomo(path, loading, adversarial=adversarial)


def main(argv: list[str] | None = None) -> None:
    """Run the evaluation and print its table (or JSON)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval", description=__doc__)
    parser.add_argument(
        "--set",
        nargs="+",
        default=["meaning"],
        metavar=("NAME", "PATH"),
        help="meaning (default), quality or locomo, then an optional path (required for locomo)",
    )
    parser.add_argument(
        "--as",
        dest="loading",
        choices=LOADINGS,
        default="sessions",
        help="how a LoCoMo conversation becomes entities (default: sessions)",
    )
    parser.add_argument("--adversarial", action="store_true", help="keep LoCoMo's adversarial questions (category 5)")
    parser.add_argument("--mode", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    name = args.set[0]
    if name not in ("meaning", "quality", "locomo") or len(args.set) > 2:
        parser.error("--set takes meaning, quality or locomo, then at most one path")
    path = Path(args.set[1]) if len(args.set) == 2 else None
    report = evaluate(_eval_set(name, path, args.loading, args.adversarial), args.mode, through_tools=name == "locomo")
    print(json.dumps(report.as_dict(), indent=2) if args.json else _table(report))


if __name__ == "__main__":
    main()
