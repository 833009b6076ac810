"""Fidelity of the extractive summarizer on real agent runs: what the next turns need, and item recall.

    python scripts/extractive_fidelity.py [--data ../shared/real_trajectories] [--targets 8000,16000]
                                          [--budget 750] [--windows] [--no-anchor-index] [--json]

Compresses every file of the folder with the extractive summarizer at each target (summary
budget 750, bundled tokenizer), scores the outputs as `eval` does, and prints, per target and
per split, the pooled **future-grounded fidelity** (the anchors the kept turns after each summary
need that it holds, over all of them), per input file too, and the pooled recall of each kind
of salient item (tool names, paths, errors, identifiers) beside it. With `--windows` every
window is scored, its own turns being its future.

Rows are split by a hash of their file name and line (`split_of`), not by position: the `tune`
half is what the summarizer's weights were chosen on, the `held_out` half was never looked at
while choosing them. Every window of a row falls in the row's half. The data is read where it
lies and never copied. A run that measured nothing (no data at `--data`, no row compressed at a
target, or no kept turn needing any anchor) says why on stderr and exits 1, so no one takes it
for a result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trajectory_compressor.api import compress, counter_for
from trajectory_compressor.commands.eval_figures import fidelity_figures, future_figures
from trajectory_compressor.commands.eval_rows import ScoredRow
from trajectory_compressor.commands.evaluate import score_output
from trajectory_compressor.count import TokenCounter
from trajectory_compressor.exit_codes import FINISHED
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.settings import RunConfig, with_values

TARGETS = (8_000, 16_000)
SUMMARY_BUDGET = 750
SPLITS = ("tune", "held_out")
GOALS = {"future": 0.5, "tools": 0.95, "paths": 0.8, "errors": 0.7}


def split_of(source: str, line: int | str) -> str:
    """`tune` or `held_out`, by a hash of the row's file name and line: stable whatever folder
    the data is read from, and the same for every window of a row."""
    digest = hashlib.sha256(f"{Path(source).name}:{line}".encode()).digest()
    return SPLITS[digest[0] % 2]


def scored_rows(files: Sequence[Path], config: RunConfig, counter: TokenCounter) -> list[ScoredRow]:
    """Every compressed row (or window) of `files` under `config`, scored as `eval` scores it."""
    rows: list[ScoredRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        for file in files:
            output = Path(tmp) / file.name
            for result in compress([str(file)], str(output), config, counter=counter):
                if result.exit_code not in FINISHED:  # nothing to score: say why, never a figure
                    raise SystemExit(f"error: compressing {file} stopped: {result.message or result.exit_code}")
            rows.extend(score_output(output, expand_inputs([str(file)]), config).scored)
    return rows


def figures(rows: Sequence[ScoredRow]) -> dict[str, Any]:
    """Per split and for all rows: pooled future-grounded fidelity (also per input file) and item recall."""
    halves: dict[str, list[ScoredRow]] = {name: [] for name in SPLITS}
    for row in rows:
        halves[split_of(row.source, row.where.rsplit(":", 1)[1])].append(row)
    result = {}
    for name, members in [*halves.items(), ("all", list(rows))]:
        by_file: dict[str, list[ScoredRow]] = {}
        for row in members:
            by_file.setdefault(Path(row.source).name, []).append(row)
        result[name] = {
            "future": future_figures(members),
            "by_file": {file: future_figures(group) for file, group in sorted(by_file.items())},
            "items": fidelity_figures(members),
        }
    return result


def config_for(target: int, budget: int, *, windows: bool, anchor_index: bool) -> RunConfig:
    config = with_values(RunConfig(), "run", summarizer="extractive", quiet=True)
    config = with_values(config, "plan", target_max_tokens=target, summary_target_tokens=budget, windows=windows)
    return with_values(config, "llm", anchor_index=anchor_index)


def unmeasured(results: dict[int, dict[str, Any]]) -> str | None:
    """Why `results` measured nothing, or None."""
    for target, by_split in results.items():
        if not by_split["all"]["items"]["scored"]:
            return f"no row was compressed at target {target:,}"
        if not by_split["all"]["future"]["anchors"]:
            return f"no kept turn needed any anchor of a summarized region at target {target:,}"
    return None


def print_results(results: dict[int, dict[str, Any]], title: str) -> None:
    print(f"{title}; pooled future-grounded fidelity and item recall (goal)")
    for target, by_split in results.items():
        for name, data in by_split.items():
            future, items = data["future"], data["items"]
            recall = items["recall"]
            shown = ", ".join(
                f"{kind} {recall[kind]:.2f}" + (f" ({GOALS[kind]})" if kind in GOALS else "")
                for kind in recall
                if recall[kind] is not None
            )
            score = "-" if future["score"] is None else f"{future['score']:.2f}"
            print(
                f"target {target:>6,} {name:<9} rows {items['scored']:>3}: future-grounded {score} "
                f"({future['kept']}/{future['anchors']} anchors; goal {GOALS['future']}); {shown}; "
                f"unsupported rows {items['unsupported']['rows']}"
            )
            if name != "all":
                files = ", ".join(
                    f"{file} {'-' if f['score'] is None else format(f['score'], '.2f')} ({f['kept']}/{f['anchors']})"
                    for file, f in data["by_file"].items()
                )
                print(f"    by file: {files}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "real_trajectories"))
    parser.add_argument("--targets", default=",".join(str(t) for t in TARGETS), help="comma-separated")
    parser.add_argument("--budget", type=int, default=SUMMARY_BUDGET, help="summary budget (tokens)")
    parser.add_argument("--windows", action="store_true", help="--windows: score every window")
    parser.add_argument("--no-anchor-index", dest="anchor_index", action="store_false")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    files = sorted(Path(args.data).glob("*.jsonl"))
    if not files:
        print(
            f"error: no real trajectories (*.jsonl) under {args.data}; nothing measured. "
            "Pass --data FOLDER (the project's ../shared/real_trajectories)",
            file=sys.stderr,
        )
        return 1
    targets = [int(target) for target in args.targets.split(",")]
    counter = counter_for(RunConfig())
    results = {}
    for target in targets:
        config = config_for(target, args.budget, windows=args.windows, anchor_index=args.anchor_index)
        results[target] = figures(scored_rows(files, config, counter))
    why = unmeasured(results)
    if why is not None:
        print(f"error: {why} in {len(files)} file(s) under {args.data}; nothing measured there", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    mode = ", windows" if args.windows else ""
    index = "on" if args.anchor_index else "off"
    print_results(results, f"extractive summarizer, summary budget {args.budget}{mode}, anchor index {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
