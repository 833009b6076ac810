#!/usr/bin/env python3
"""Counting in pieces against counting whole: the same counts, time and peak memory side by side.

1. ordinary rows: every turn value of `--input`, in the pipeline's chunks (64 rows), counted by
   `TokenCounter.count_many` (texts over 64K characters cut in pieces, at most 1M characters a
   tokenizer call) and by one `encode_batch_fast` call per chunk (how it counted before), in
   rounds that alternate the two; the median of `--repeat` rounds, and the ratio.
2. one long value: a log of `--megabytes` million characters, counted in pieces and whole, each
   in a fresh process that reports its own peak resident memory (the text itself included);
   the counts must be equal, and the ratios of time and memory are printed.

Both sides use the bundled tokenizer and the same texts; nothing else runs between them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_CHILD = """
import json, resource, sys, time
from trajectory_compressor.count import build_counter
from scripts.bench_huge_lines import long_value
counter = build_counter()
text = long_value(int(sys.argv[1]))
started = time.perf_counter()
if sys.argv[2] == "pieces":
    tokens = counter.count(text)
else:
    tokens = len(counter._backend.encode(text, add_special_tokens=False))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB, this process's own peak
print(json.dumps({"tokens": tokens, "seconds": time.perf_counter() - started, "peak": peak}))
"""


def long_value(megabytes: int) -> str:
    """A log as a tool result holds it: lines with timestamps, paths, numbers and words."""
    lines = [
        f"2024-05-01T12:{i % 60:02d}:{i * 7 % 60:02d}Z INFO [worker-{i % 8}] GET /api/v1/items/{i * 7919 % 10**6} "
        f"status={(200, 404, 500)[i % 3]} bytes={i * 31 % 10**5} in {i % 500}ms"
        for i in range(4_096)
    ]
    block = "\n".join(lines) + "\n"
    size = megabytes * 1_000_000
    return (block * (size // len(block) + 1))[:size]


def chunks_of(path: Path, rows: int = 64) -> list[list[str]]:
    """Every turn value of every row, grouped as the pipeline groups rows."""
    values: list[list[str]] = []
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    for start in range(0, len(records), rows):
        chunk = records[start : start + rows]
        values.append([turn.get("value", turn.get("content")) or "" for r in chunk for turn in r["conversations"]])
    return values


def ordinary_rows(path: Path, repeat: int) -> None:
    from trajectory_compressor.count import build_counter

    counter = build_counter()
    chunks = chunks_of(path)
    if not any(chunks):
        raise SystemExit(f"error: no rows in {path}: nothing measured")
    seconds: dict[str, list[float]] = {"pieces": [], "whole": []}
    counts: dict[str, list[int]] = {}
    for _ in range(repeat):
        for name in seconds:
            started = time.perf_counter()
            if name == "pieces":
                found = [n for texts in chunks for n in counter.count_many(texts)]
            else:
                found = [len(e) for texts in chunks for e in counter._encode_batch(texts, add_special_tokens=False)]
            seconds[name].append(time.perf_counter() - started)
            counts[name] = found
    assert counts["pieces"] == counts["whole"], "the counts differ"
    chars = sum(len(text) for texts in chunks for text in texts)
    pieces, whole = statistics.median(seconds["pieces"]), statistics.median(seconds["whole"])
    print(f"ordinary rows ({path.name}, {chars / 1e6:.1f} M characters, {len(counts['whole']):,} values):")
    print(f"  in pieces {pieces:.2f} s, whole {whole:.2f} s: {pieces / whole:.2f}x the time, same counts")


def one_long_value(megabytes: int) -> None:
    figures = {}
    for how in ("pieces", "whole"):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(megabytes), how], capture_output=True, text=True, check=True, cwd=REPO
        )
        figures[how] = json.loads(done.stdout)
    assert figures["pieces"]["tokens"] == figures["whole"]["tokens"], "the counts differ"
    pieces, whole = figures["pieces"], figures["whole"]
    print(f"one value of {megabytes} M characters ({whole['tokens']:,} tokens, equal counts):")
    print(f"  in pieces {pieces['seconds']:.1f} s, peak {pieces['peak'] / 1024:,.0f} MB (the process)")
    print(f"  whole     {whole['seconds']:.1f} s, peak {whole['peak'] / 1024:,.0f} MB")
    time_ratio, memory_ratio = pieces["seconds"] / whole["seconds"], pieces["peak"] / whole["peak"]
    print(f"  pieces/whole: {time_ratio:.2f}x the time, {memory_ratio:.2f}x the memory")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=REPO / "sample_data" / "agent_runs.jsonl")
    parser.add_argument("--megabytes", type=int, default=8, help="the long value's size [8]")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    ordinary_rows(args.input, args.repeat)
    one_long_value(args.megabytes)


if __name__ == "__main__":
    main()
