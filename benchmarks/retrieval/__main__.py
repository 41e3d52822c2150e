"""The command: python -m benchmarks.retrieval [--set meaning|quality|locomo [PATH]] [--as sessions|turns|few-turns]
[--turns-per-entity N] [--half all|first|second] [--stages 0,25,50,100] [--json].

See the package docstring for what it measures."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.retrieval.evaluate import MODES, Report, Stage, evaluate
from benchmarks.retrieval.locomo import HALVES, LOADINGS, TURNS_PER_ENTITY, load_locomo
from benchmarks.retrieval.sets import EvalSet, load_meaning, load_quality
from benchmarks.retrieval.stages import FULL, parse_stages


def _stage_table(stage: Stage, staged: bool) -> list[str]:
    lines = []
    if staged:
        lines.append(
            f"stage {stage.percent}%: {stage.embedded} of {stage.waiting} texts embedded"
            f" ({stage.embed_seconds:.1f} s to get here)"
        )
    lines.append(f"{'mode':<9} {'category':<13} {'n':>5} {'R@5':>6} {'R@10':>6} {'all@5':>6} {'MRR':>6}")
    for mode, scores in stage.modes.items():
        summary = scores.summary()
        rows = [*summary["categories"].items(), ("overall", summary["overall"])]
        for category, row in rows:
            figures = f"{row['recall@5']:>6.3f} {row['recall@10']:>6.3f} {row['all@5']:>6.3f} {row['mrr']:>6.3f}"
            lines.append(f"{mode:<9} {category:<13} {row['n']:>5} {figures}")
        lines.append(f"{mode:<9} median search latency {summary['median_ms']:.2f} ms")
    return lines


def _summary_table(report: Report) -> list[str]:
    """Rows: stages; columns: recall@5 and @10 overall per mode."""
    modes = list(report.modes)
    lines = [
        "overall recall by stage",
        f"{'stage':>5} " + " ".join(f"{mode + ' R@5':>13} {'R@10':>6}" for mode in modes),
    ]
    for row in report.summary():
        figures = " ".join(f"{row[mode]['recall@5']:>13.3f} {row[mode]['recall@10']:>6.3f}" for mode in modes)
        lines.append(f"{row['stage']:>4}% {figures}")
    return lines


def _table(report: Report) -> str:
    lines = [f"set: {report.set_name}, {report.questions} questions"]
    if report.skipped:
        lines.append(f"note: {report.skipped}")
    if report.embedded:
        rate = report.embedded / report.embed_seconds if report.embed_seconds else 0.0
        lines.append(f"embedding: {report.embedded} texts in {report.embed_seconds:.1f} s ({rate:.0f}/s)")
    staged = [stage.percent for stage in report.stages] != [FULL]
    for stage in report.stages:
        lines.extend(["", *_stage_table(stage, staged)] if staged else _stage_table(stage, staged))
    if staged:
        lines.extend(["", *_summary_table(report)])
    return "\n".join(lines)


def _eval_set(name: str, path: Path | None, args: argparse.Namespace) -> EvalSet:
    if name == "meaning":
        return load_meaning(path)
    if name == "quality":
        return load_quality(path)
    if path is None:
        sys.exit("--set locomo needs the path of locomo10.json (it is not in the repository: CC BY-NC)")
    return load_locomo(
        path, args.loading, adversarial=args.adversarial, turns_per_entity=args.turns_per_entity, half=args.half
    )


def _stages(text: str) -> tuple[int, ...]:
    try:
        return parse_stages(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


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
    parser.add_argument(
        "--turns-per-entity",
        type=int,
        default=TURNS_PER_ENTITY,
        metavar="N",
        help=f"with --as few-turns, the consecutive turns each entity holds (default: {TURNS_PER_ENTITY})",
    )
    parser.add_argument(
        "--half",
        choices=HALVES,
        default="all",
        help="LoCoMo's first or second half of the conversations (the first or last five), to tune on "
        "one and report the other (default: all)",
    )
    parser.add_argument(
        "--stages",
        type=_stages,
        default=(FULL,),
        metavar="P,P,...",
        help="percentages of each memory's waiting texts embedded before the questions are asked, "
        "e.g. 0,25,50,100 (default: 100)",
    )
    parser.add_argument("--adversarial", action="store_true", help="keep LoCoMo's adversarial questions (category 5)")
    parser.add_argument("--mode", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    name = args.set[0]
    if name not in ("meaning", "quality", "locomo") or len(args.set) > 2:
        parser.error("--set takes meaning, quality or locomo, then at most one path")
    path = Path(args.set[1]) if len(args.set) == 2 else None
    if args.turns_per_entity < 1:
        parser.error("--turns-per-entity takes 1 or more")
    eval_set = _eval_set(name, path, args)
    report = evaluate(eval_set, args.mode, through_tools=name == "locomo", stages=args.stages)
    print(json.dumps(report.as_dict(), indent=2) if args.json else _table(report))


if __name__ == "__main__":
    main()
