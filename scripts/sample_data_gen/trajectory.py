"""Putting a row together: its size band, its family, its quirks, and the loop of steps.

Why the plan lives here: row i is a pure function of (seed, i). The size band comes from a fixed
mix per block of 100 rows, and everything else from a `random.Random` seeded with the seed and
the index, so a small run is a prefix of a big one and the committed file can be checked.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from .coding import Coding
from .customer_service import CustomerService
from .data_analysis import DataAnalysis
from .family import Family
from .run import Run, StopRun
from .web_research import WebResearch

# --------------------------------------------------------------------------------------------
# Row sizes: a fixed mix per block of 100 rows, so that every sample of a few hundred rows has
# the intended share of long rows instead of a binomial accident.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SizeClass:
    """A band of row lengths: how many rows per hundred, target tokens, and tool steps."""

    name: str
    per_hundred: int
    tokens: tuple[int, int]
    steps: tuple[int, int]
    skew: float  # > 1 pulls targets towards the low end of the band


SIZE_CLASSES: tuple[SizeClass, ...] = (
    SizeClass("very_long", 1, (40_000, 80_000), (60, 140), 1.3),
    SizeClass("long", 38, (15_800, 18_000), (10, 45), 1.8),
    SizeClass("mid", 3, (8_500, 14_000), (8, 28), 1.0),
    SizeClass("short", 58, (2_000, 6_000), (3, 14), 2.1),
)
_SIZE_BY_NAME = {size.name: size for size in SIZE_CLASSES}

FAMILY_WEIGHTS: dict[str, dict[str, int]] = {
    "very_long": {"coding": 7, "data_analysis": 3},
    "long": {"coding": 55, "data_analysis": 30, "web_research": 10, "customer_service": 5},
    "mid": {"coding": 35, "data_analysis": 25, "web_research": 25, "customer_service": 15},
    "short": {"coding": 25, "data_analysis": 20, "web_research": 20, "customer_service": 35},
}


@lru_cache(maxsize=16)
def _block_plan(seed: int, block: int) -> tuple[str, ...]:
    plan = [size.name for size in SIZE_CLASSES for _ in range(size.per_hundred)]
    random.Random(f"sizes:{seed}:{block}").shuffle(plan)
    return tuple(plan)


def size_class_of(seed: int, index: int) -> SizeClass:
    """The size band of row `index`: fixed by (seed, block of 100), independent of n."""
    block, position = divmod(index, 100)
    return _SIZE_BY_NAME[_block_plan(seed, block)[position]]


FAMILIES: dict[str, type[Family]] = {
    "coding": Coding,
    "data_analysis": DataAnalysis,
    "web_research": WebResearch,
    "customer_service": CustomerService,
}
MODELS = ("sim-agent-coder-34b", "sim-agent-general-70b", "sim-agent-mini-8b", "sim-agent-reasoner-32b")


# --------------------------------------------------------------------------------------------
# Putting a row together.
# --------------------------------------------------------------------------------------------


def generate_trajectory(index: int, seed: int = 0) -> dict[str, Any]:
    """Row `index` of the stream for `seed`: a pure function of both, independent of other rows."""
    rng = random.Random(f"trajectory:{seed}:{index}")
    size = size_class_of(seed, index)
    weights = FAMILY_WEIGHTS[size.name]
    family_name = rng.choices(list(weights), weights=list(weights.values()))[0]

    quirks: list[str] = []
    lang = "en"
    roll = rng.random()
    if family_name in ("coding", "web_research") and roll < 0.06:
        lang = "fr"
    elif family_name in ("coding", "data_analysis") and 0.06 <= roll < 0.12:
        lang = "zh"
    if lang != "en":
        quirks.append(f"non_english_{lang}")
    no_system = rng.random() < 0.04
    tools_field = no_system or rng.random() < 0.10
    ends_on_call = rng.random() < 0.04
    bad_call = rng.random() < 0.05
    followups = rng.choice((0, 0, 0, 0, 1, 1, 2)) if family_name != "customer_service" else 0
    if no_system:
        quirks.append("no_system_turn")
    if tools_field:
        quirks.append("tools_field")

    family = FAMILIES[family_name](rng, lang)
    run = Run(
        rng,
        lang=lang,
        chars_per_token=family.chars_per_token,
        reasoning=rng.random() < 0.4,
        thinks_aloud=rng.random() < 0.3,
        id_style=rng.randrange(3),
        merge_parallel=rng.choice((0.0, 0.5, 1.0)),
    )
    if not no_system:
        run.add("system", family.system_prompt(with_schemas=not tools_field))
    family.opening(run)
    run.add("human", family.task())

    low, high = size.tokens
    target = low + (high - low) * rng.random() ** size.skew
    steps = rng.randint(*size.steps)
    per_step = max(60.0, (target - run.tokens) / steps)
    bad_at = rng.uniform(0.2, 0.7) if bad_call else 2.0
    followup_at = sorted(rng.uniform(0.15, 0.85) for _ in range(followups))
    try:
        while run.tokens < target:
            progress = run.tokens / target
            if bad_at <= progress:
                run.break_next_call, bad_at = True, 2.0
                quirks.append("invalid_tool_call_json")
            if followup_at and followup_at[0] <= progress and run.turns[-1]["from"] == "tool":
                followup_at.pop(0)
                run.add("human", family.followup())
                run.ack_pending = True
                if "human_followup" not in quirks:
                    quirks.append("human_followup")
            budget_tokens = min(per_step * rng.lognormvariate(0, 0.6), target - run.tokens + 200, 9000.0)
            family.step(run, int(max(40.0, budget_tokens) * run.chars_per_token[1]), progress)
        if ends_on_call:
            run.stop_at_next_call = True
            quirks.append("ends_on_tool_call")
            for _ in range(8):  # customer service may need a turn or two before its next call
                family.step(run, int(per_step * run.chars_per_token[1]), 1.0)
        family.final(run)
    except StopRun:
        pass

    row: dict[str, Any] = {
        "id": f"sample-{index:06d}",
        "conversations": run.turns,
        "source": "synthetic",
        "task_family": family_name,
        "model": rng.choice(MODELS),
        "language": lang,
        "outcome": "interrupted"
        if "ends_on_tool_call" in quirks
        else rng.choice(("completed", "completed", "max_steps")),
        "quirks": quirks,
        "meta": {"generator": "scripts/make_sample_data.py", "seed": seed, "size_class": size.name, **family.meta()},
    }
    if tools_field:
        row["tools"] = family.tools_json()
    return row


def generate_trajectories(n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Yield `n` synthetic trajectories; the same (n, seed) always gives the same rows."""
    for index in range(n):
        yield generate_trajectory(index, seed)


def dumps_row(row: dict[str, Any]) -> bytes:
    """One JSONL line (UTF-8, no ASCII escaping), the exact bytes of the committed file."""
    return orjson.dumps(row) + b"\n"
