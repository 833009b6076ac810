#!/usr/bin/env python3
"""How fast is `--count-mode chat-template` beside the default per-value counts?

Validates, counts and plans every row of the input in chunks, exactly as a run prepares them
(`run.prepare.prepare_rows`, the pipeline's chunk size), once with per-value counts and once per
chat template given, and prints rows/s and the ratio to per-value counts. Rounds interleave the
modes (so background load hits them alike) and the median of `--repeat` rounds is reported.

    python scripts/bench_chat_template.py                              # sample_data, shipped templates
    python scripts/bench_chat_template.py --input runs.jsonl --template my.jinja --repeat 5

A template is a file or a shipped name (qwen2.5, qwen3, deepseek-v3.1); with the bundled
tokenizer, deepseek-v3.1 is the matched pair (its markers are the tokenizer's special tokens) and
qwen2.5 the unmatched one (its markers are plain text to it: rows are counted twice, whole and in
pieces, see count/chat_pieces.py). Runs on any version of the package whose `prepare_rows` and
`build_counter` take these arguments, so a checkout of an older commit can be timed the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent


def load_rows(path: Path) -> list[tuple[int, int, object]]:
    from trajectory_compressor.types import SourceRecord

    rows = []
    with open(path, "rb") as handle:
        for index, line in enumerate(handle):
            rows.append((index, index + 1, SourceRecord(str(path), index + 1, orjson.loads(line))))
    return rows


def prepare_all(rows: list, counter: object, chunk: int) -> float:
    from trajectory_compressor.run.prepare import prepare_rows
    from trajectory_compressor.settings import PlanConfig, ReadConfig

    started = time.perf_counter()
    for start in range(0, len(rows), chunk):
        prepared = prepare_rows(
            rows[start : start + chunk],
            counter,
            PlanConfig(),
            notice_tokens=0,
            skip_under_target=True,
            reading=ReadConfig(),
        )
        errors = [error for row in prepared if (error := getattr(row, "error", None))]  # any version's rows
        assert not errors, errors[:1]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=REPO / "sample_data" / "agent_runs.jsonl")
    parser.add_argument("--template", action="append", help="file or shipped name [deepseek-v3.1, qwen2.5]")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=64, help="rows per prepare_rows call [64, the pipeline's]")
    args = parser.parse_args()
    from trajectory_compressor.count import build_counter

    templates = args.template or ["deepseek-v3.1", "qwen2.5"]
    rows = load_rows(args.input)
    counters = {"values": build_counter()}
    for template in templates:
        counters[template] = build_counter(count_mode="chat-template", chat_template=template)
    seconds: dict[str, list[float]] = {name: [] for name in counters}
    for counter in counters.values():  # warm-up: first-use costs (compiling, probes) left out
        prepare_all(rows[: args.chunk], counter, args.chunk)
    for _ in range(args.repeat):
        for name, counter in counters.items():
            seconds[name].append(prepare_all(rows, counter, args.chunk))
    print(f"{len(rows)} rows of {args.input.name}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    values = statistics.median(seconds["values"])
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"{name:>16}: {len(rows) / median:7.1f} rows/s  ({median:.2f} s, {median / values:.2f}x values)")


if __name__ == "__main__":
    main()
