#!/usr/bin/env python3
"""Synthetic agent trajectories in ShareGPT form: the committed sample data and benchmark input.

Why synthetic: the project's tests and `sample_data/` must stand on their own, without real runs
whose licences and sizes we do not control, and the benchmark needs any number of rows on demand.
The rows imitate what tool-calling agents produce: a system prompt with tool schemas inside
`<tools>`, a task, gpt turns that think and call tools in `<tool_call>` blocks, tool turns with
`<tool_response>` blocks holding long outputs (listings, source files, test logs with tracebacks,
tables, web pages, booking records), follow-up messages and a final answer. A small share carries
the quirks a compressor must survive: a run that ends on a call with no response, arguments that
are not valid JSON, no system turn, a French or Chinese task, a top-level `tools` field.

Output is a pure function of (n, seed): every choice comes from `random.Random` instances seeded
from the seed and the row index (never global state or the clock), so the committed file can be
checked against this script, and row i does not depend on n (a small run is a prefix of a big one).

Speed matters (the benchmark makes ~20k rows): text is assembled from fragment pools built once
per process, so a row costs some dozens of joins and slices, never per-character work.

The generator itself is the package `sample_data_gen/` next to this file (a module per kind of
text and per task family); this file is its command line, and keeps `from make_sample_data import
generate_trajectories, generate_trajectory, dumps_row` working for bench.py and the tests.

    python scripts/make_sample_data.py                          # rewrites sample_data/agent_runs.jsonl
    python scripts/make_sample_data.py --rows 20000 --seed 1 --out - | head -c 2000
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sample_data_gen import (
    FAMILIES,
    SIZE_CLASSES,
    SizeClass,
    dumps_row,
    generate_trajectories,
    generate_trajectory,
    size_class_of,
)

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_ROWS",
    "DEFAULT_SEED",
    "FAMILIES",
    "SIZE_CLASSES",
    "SizeClass",
    "dumps_row",
    "generate_trajectories",
    "generate_trajectory",
    "main",
    "size_class_of",
]

DEFAULT_ROWS = 250
DEFAULT_SEED = 7
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "sample_data" / "agent_runs.jsonl"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write `--rows` rows for `--seed` to `--out` (a path, or - for stdout)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help=f"number of rows (default {DEFAULT_ROWS})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        help="output JSONL path, or - for stdout (default sample_data/agent_runs.jsonl)",
    )
    args = parser.parse_args(argv)
    if args.rows < 0:
        parser.error("--rows must be >= 0")
    if args.out == "-":
        try:
            write = sys.stdout.buffer.write
            for row in generate_trajectories(args.rows, args.seed):
                write(dumps_row(row))
            sys.stdout.buffer.flush()
        except BrokenPipeError:  # `| head`: the reader has seen enough, which is not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        for row in generate_trajectories(args.rows, args.seed):
            handle.write(dumps_row(row))
    print(f"wrote {args.rows} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
