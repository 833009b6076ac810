"""Single-row compression against `--windows` on real agent runs: what each keeps for training.

    python scripts/windows_figures.py [--data ../shared/real_trajectories] [--targets 8000 16000] [--json]

For each target, compresses every file of the folder twice with the extractive summarizer
(summary budget 750, bundled tokenizer): once a row per row, once as context windows. Prints,
side by side, the rows compressed or split, windows per split row, the share of gpt turns kept
as training targets, the tokens written against the input's, the summaries written, windows
over the limit, and (from `analyze --windows`) the LLM summary requests and tokens each mode
would cost. The data is read where it lies and never copied; without it the script exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from trajectory_compressor.api import compress, counter_for
from trajectory_compressor.commands.analyze import analyze_sources
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.settings import RunConfig, with_values

SUMMARY_BUDGET = 750


def measure(files: list[Path], target: int, tmp: Path) -> dict[str, Any]:
    """Both modes on every file at `target`: the reports' figures and the analysis' request counts."""
    figures: dict[str, Any] = {}
    for windows in (False, True):
        config = with_values(RunConfig(), "run", summarizer="extractive", quiet=True)
        config = with_values(
            config, "plan", target_max_tokens=target, summary_target_tokens=SUMMARY_BUDGET, windows=windows
        )
        counter = counter_for(config)
        output = tmp / f"{target}-{windows}" / "x.jsonl"
        [result] = compress([str(f) for f in files], str(output), config, counter=counter)
        report = result.report
        analysis = analyze_sources(expand_inputs([str(f) for f in files]), config, counter).to_dict()
        mode = "windows" if windows else "single"
        window_figures = report.get("windows") or {}
        figures[mode] = {
            "rows": report["rows"]["selected"],
            "rows_compressed_or_split": report["rows"]["compressed"],
            "records": window_figures.get("windows", report["rows"]["written"]),
            "windows_per_split_row": window_figures.get("windows_per_split_row"),
            "gpt_turns": report["training"]["gpt_turns"],
            "gpt_turns_trained": report["training"]["gpt_turns_trained"],
            "trainable_share": report["training"]["trainable_share"],
            "tokens_in": report["tokens"]["before"],
            "tokens_written": report["tokens"]["after"],
            "summaries": sum((window_figures.get("by_summarizer") or report["rows"]["by_summarizer"]).values()),
            "over_limit": window_figures.get("over_limit", report["rows"]["still_over_limit"]),
            "llm_requests": (analysis.get("windows") or analysis)["summary_requests"],
            "llm_prompt_tokens": (analysis.get("windows") or analysis)["summary_prompt_tokens"],
            "llm_completion_tokens": (analysis.get("windows") or analysis)["summary_completion_tokens"],
        }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "real_trajectories"))
    parser.add_argument("--targets", type=int, nargs="+", default=[8_000, 16_000])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    files = sorted(Path(args.data).glob("*.jsonl"))
    if not files:
        print(f"error: no real trajectories under {args.data}; nothing was measured (pass --data)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        results = {target: measure(files, target, Path(tmp)) for target in args.targets}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{len(files)} files; extractive summaries, summary budget {SUMMARY_BUDGET}")
    print(
        "| target | mode | records | rows compressed / split | windows per split row | gpt turns trained "
        "| tokens written / input | summaries | over the limit | LLM requests | LLM prompt + completion tokens |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for target, modes in results.items():
        for mode, f in modes.items():
            share = f"{f['gpt_turns_trained']:,} of {f['gpt_turns']:,} ({f['trainable_share']:.0%})"
            ratio = f["tokens_written"] / f["tokens_in"] if f["tokens_in"] else 1.0
            tokens = f"{f['llm_prompt_tokens']:,} + {f['llm_completion_tokens']:,}"
            print(
                f"| {target:,} | {mode} | {f['records']:,} | {f['rows_compressed_or_split']} "
                f"| {f['windows_per_split_row'] or '-'} | {share} | {ratio:.2f} | {f['summaries']:,} "
                f"| {f['over_limit']} | {f['llm_requests']:,} | {tokens} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
