"""Pruning reads candidates only as far as its plan can use them, and plans exactly as if it had
read them all: the same turns cleared, the same placeholders, the same counts.

A single row's candidates are the results no gpt turn answers (`plan.prune`): the rows here are
runs cut off by a step limit, the tool results after the last assistant turn, with no protected
tail (`protect_last_n_turns` 0), so that there are many."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import make_trajectory
from trajectory_compressor.count import TokenCounter
from trajectory_compressor.plan.prune import plan_prune, prunable_turns
from trajectory_compressor.read import hermes
from trajectory_compressor.run import pruning
from trajectory_compressor.run.prepare import CountedRow, ValidRow, prepare_rows
from trajectory_compressor.run.pruning import Pruning, candidate_edits, placeholder_tokens, pruned_views
from trajectory_compressor.settings import PlanConfig, ReadConfig
from trajectory_compressor.types import SourceRecord, Turn


def _rows(counter: TokenCounter, records: list[dict[str, Any]], config: PlanConfig) -> list[CountedRow]:
    items = [
        (index, index + 1, SourceRecord("mem.jsonl", index + 1, record, json.dumps(record).encode()))
        for index, record in enumerate(records)
    ]
    rows = prepare_rows(items, counter, config, notice_tokens=0, skip_under_target=False, reading=ReadConfig())
    assert all(isinstance(row, ValidRow) for row in rows)
    return [row for row in rows if isinstance(row, ValidRow)]


def _every_candidate_read(row: CountedRow, counter: TokenCounter, config: PlanConfig) -> Pruning | None:
    """The plan as it was made before reading was lazy: every candidate read, counted, offered."""
    if sum(row.token_counts) <= config.target_max_tokens:
        return None
    edits = candidate_edits(row, prunable_turns, config)
    costs = placeholder_tokens(row, edits, counter)
    plan = plan_prune(row.roles, row.token_counts, costs, config)
    if not plan.turns:
        return None
    kept = {index: edits[index] for index in plan.turns}
    turns = [Turn(turn.role, kept[i].value) if i in kept else turn for i, turn in enumerate(row.turns)]
    counts = [costs[i] if i in kept else count for i, count in enumerate(row.token_counts)]
    return Pruning(kept, turns, counts, list(row.turns), list(row.token_counts))


def cut_off(record: dict[str, Any]) -> dict[str, Any]:
    """`record` as a run stopped after its second call: the results that came back after it were
    answered by no assistant turn (every gpt turn after the second is gone). The first call and
    its result are the protected head."""
    turns = record["conversations"]
    second_gpt = [i for i, turn in enumerate(turns) if turn["from"] == "gpt"][1]
    kept = turns[: second_gpt + 1] + [turn for turn in turns[second_gpt + 1 :] if turn["from"] == "tool"]
    return {**record, "conversations": kept}


def _config(**settings: Any) -> PlanConfig:
    return PlanConfig(summary_target_tokens=100, protect_last_n_turns=0, **settings)


def _records() -> list[dict[str, Any]]:
    records = [make_trajectory(index, steps=4 + index % 9, output_lines=3 + (index * 7) % 40) for index in range(24)]
    for index, record in enumerate(records[::3]):  # tool outputs of very different sizes in one row
        for position, turn in enumerate(record["conversations"]):
            if turn["from"] == "tool" and (position + index) % 4 == 0:
                turn["value"] = "<tool_response>\n" + "x " * (40 + 900 * (position % 3)) + "\n</tool_response>"
    # Many small tool outputs: rows a little over the target read a few of them first, and a
    # first round that guesses too low leaves them over it (a second round must follow).
    records += [make_trajectory(index, steps=22 + index % 11, output_lines=4 + index % 5) for index in range(24, 48)]
    return [cut_off(record) for record in records]


@pytest.mark.parametrize("target", [400, 900, 1500, 2600, 5000])
@pytest.mark.parametrize("guess", [pruning.PLACEHOLDER_TOKENS_GUESS, 0, 10_000])
def test_reading_as_far_as_the_plan_needs_plans_as_reading_everything_does(
    counter: TokenCounter, monkeypatch: pytest.MonkeyPatch, target: int, guess: int
) -> None:
    """Whatever the first round's guess (0: it reads too little and a second round must follow;
    10,000: it reads everything at once), each row's pruning is the eager plan's, exactly."""
    monkeypatch.setattr(pruning, "PLACEHOLDER_TOKENS_GUESS", guess)
    config = _config(target_max_tokens=target, prune_min_chars=120)
    rows = _rows(counter, _records(), config)
    expected = [_every_candidate_read(row, counter, config) for row in rows]
    assert pruned_views(rows, counter, config) == expected
    assert any(view is not None for view in expected) and any(view is None for view in expected)


def test_a_row_just_over_its_target_reads_only_its_oldest_candidates(
    counter: TokenCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    real_split = hermes.split_tool
    monkeypatch.setattr(pruning, "split_tool", lambda value: parsed.append(value) or real_split(value))
    record = cut_off(make_trajectory(0, steps=30, output_lines=20))
    [probe] = _rows(counter, [record], _config(target_max_tokens=100_000))
    config = _config(target_max_tokens=sum(probe.token_counts) - 50)
    [row] = _rows(counter, [record], config)
    [view] = pruned_views([row], counter, config)
    assert view is not None and sum(view.counts) <= config.target_max_tokens
    assert len(view.edits) == 1, "one cleared tool output fits the row"
    tool_turns = row.roles.count("tool")
    assert 1 <= len(parsed) < tool_turns // 4, f"read {len(parsed)} of {tool_turns} tool turns"
