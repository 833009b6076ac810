#!/usr/bin/env python3
"""One long agent run (N tool-call groups), the input of the `--windows` row-length series.

Why: `--windows` must cost in proportion to what it writes, so a row of 2N groups should cost
about twice a row of N. The bench's rows are at most ~140 steps; real long runs (OpenHands,
mini-swe-agent) reach thousands. This writes one ShareGPT row of `--groups` groups: an agent
working through one bug after another in the fictional repositories of `sample_data_gen`
(shell and editor harnesses, listings, greps, file views, pytest logs with failures, tracebacks,
diffs, edits that write files), a task cycle of ~60 groups at a time, each with its own module,
function, error and test, so new paths, ids and errors keep appearing as they would in a long run,
with a user follow-up now and then.

The stream is a pure function of the seed, and a row of N groups is the first N groups of it:
the rows of a series share their prefix, so their costs compare like for like.

    python scripts/make_long_row.py --groups 1000 --out /tmp/long-1000.jsonl
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sample_data_gen import dumps_row
from sample_data_gen.coding import Coding
from sample_data_gen.run import Run

CYCLE_GROUPS = 60  # groups per task (a bug fixed); then the next task, in another module
MEAN_STEP_CHARS = 1800  # a group's tool output, on average (lognormal around it)


def long_row(groups: int, seed: int = 0) -> dict[str, object]:
    """A row of `groups` tool-call groups: the first `groups` of the stream for `seed`."""
    rng = random.Random(f"long-row:{seed}")
    family = Coding(rng, "en")
    run = Run(rng, reasoning=True, id_style=0, merge_parallel=0.5)
    run.add("system", family.system_prompt(with_schemas=True))
    run.add("human", family.task())
    done = 0
    while done < groups:
        if done and done % CYCLE_GROUPS == 0:  # the next task: a new module, function and error
            family = Coding(rng, "en")
            family.steps_done = 1
            run.add("human", "Next issue:\n\n" + family.task())
        elif done % 17 == 16 and run.turns[-1]["from"] == "tool":
            run.add("human", family.followup())
            run.ack_pending = True
        progress = (done % CYCLE_GROUPS) / CYCLE_GROUPS
        budget = int(min(MEAN_STEP_CHARS * rng.lognormvariate(-0.18, 0.6), 12_000))
        family.step(run, max(200, budget), progress)
        done += 1
    return {
        "id": f"long-{seed}-{groups}",
        "conversations": run.turns,
        "source": "synthetic",
        "meta": {"generator": "scripts/make_long_row.py", "seed": seed, "groups": groups},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, required=True, help="tool-call groups in the row")
    parser.add_argument("--seed", type=int, default=0, help="stream seed [0]")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write (one row)")
    args = parser.parse_args(argv)
    if args.groups < 1:
        parser.error("--groups must be >= 1")
    args.out.write_bytes(dumps_row(long_row(args.groups, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
