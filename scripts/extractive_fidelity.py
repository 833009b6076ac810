"""Fidelity of the extractive summarizer on real agent runs, at the budgets of issue 12.

    python scripts/extractive_fidelity.py [--data ../shared/real_trajectories] [--json]

Compresses every file of the folder with the extractive summarizer at targets of 8k and 16k
tokens (summary budget 750, bundled tokenizer), scores the output with `eval`, and prints the
pooled recall of each kind. Rows are split by their position in each file: even rows are the
development half (what the summarizer was tuned on), odd rows the held-out half. The data is
read where it lies and never copied. A run that measured nothing (no data at `--data`, or no
row compressed at a target) says why on stderr and exits 1, so no one takes it for a result.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from trajectory_compressor.api import compress, counter_for
from trajectory_compressor.commands.evaluate import ScoredRow, fidelity_figures, score_output
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.settings import RunConfig, with_values

TARGETS = (8_000, 16_000)
SUMMARY_BUDGET = 750
GOALS = {"tools": 0.95, "paths": 0.8, "errors": 0.7}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "real_trajectories"))
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
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for target in TARGETS:
            config = with_values(RunConfig(), "run", summarizer="extractive", quiet=True)
            config = with_values(config, "plan", target_max_tokens=target, summary_target_tokens=SUMMARY_BUDGET)
            counter = counter_for(config)
            halves: dict[str, list[ScoredRow]] = {"development": [], "held_out": []}
            for file in files:
                output = Path(tmp) / f"{target}-{file.name}"
                compress([str(file)], str(output), config, counter=counter)
                scores = score_output(output, expand_inputs([str(file)]), config)
                for row in scores.scored:
                    halves["held_out" if row.index % 2 else "development"].append(row)
            results[target] = {name: fidelity_figures(rows) for name, rows in halves.items()}
            results[target]["all"] = fidelity_figures(halves["development"] + halves["held_out"])
    unmeasured = [f"{target:,}" for target, figures in results.items() if not figures["all"]["scored"]]
    if unmeasured:
        print(
            f"error: no row was compressed at target(s) {', '.join(unmeasured)} in {len(files)} file(s) under "
            f"{args.data}; nothing measured there",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"extractive summarizer, summary budget {SUMMARY_BUDGET}; pooled recall (goal)")
    for target, halves in results.items():
        for name, figures in halves.items():
            recall = figures["recall"]
            shown = ", ".join(
                f"{kind} {recall[kind]:.2f}" + (f" ({GOALS[kind]})" if kind in GOALS else "")
                for kind in recall
                if recall[kind] is not None
            )
            unsupported = figures["unsupported"]["rows"]
            print(
                f"target {target:>6,} {name:<11} rows {figures['scored']:>3}: {shown}; unsupported rows {unsupported}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
