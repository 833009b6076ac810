"""RowFinisher on its own: the notice's real cost, exact sizes of rewritten rows."""

from __future__ import annotations

import asyncio

from tests.conftest import make_trajectory
from trajectory_compressor.run.prepare import notice_tokens, prepare_rows
from trajectory_compressor.run.row import RowFinisher
from trajectory_compressor.settings import PlanConfig, ReadConfig, RunConfig
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.types import SourceRecord


def _prepared(config: RunConfig, counter, record: dict, notice_tokens: int):
    item = SourceRecord(source="mem", line=1, record=record)
    return prepare_rows(
        [(0, 0, item)],
        counter,
        config.plan,
        notice_tokens=notice_tokens,
        skip_under_target=config.skip_under_target,
        reading=ReadConfig(),
    )[0]


def test_a_notice_dearer_in_place_than_alone_is_planned_at_its_real_cost(counter) -> None:
    # "Zu" + "db" tokenizes into more tokens than "Zu" and "db" apart: the planner's estimate
    # (the notice counted alone) would be one token short for this row.
    notice = "db: earlier tool output is summarized."
    config = RunConfig(plan=PlanConfig(target_max_tokens=2500, summary_target_tokens=200, summary_notice_text=notice))
    record = make_trajectory(0, steps=12, output_lines=20)
    record["conversations"][0]["value"] = "You are an agent named Zu"
    system = record["conversations"][0]["value"]
    assert counter.count(system + notice) - counter.count(system) > counter.count(notice)
    finisher = RowFinisher(config, counter, None, ExtractiveSummarizer(counter))
    row = _prepared(config, counter, record, notice_tokens(counter, config.plan))
    assert row.plan is not None and row.plan.region is not None
    assert row.plan.notice_tokens == counter.count(notice)
    exact = finisher.measure.notice_cost(row, 0)
    assert exact == counter.count(system + notice) - counter.count(system)
    replanned = finisher.measure.with_exact_notice(row, row.plan)
    assert replanned.notice_tokens == exact
    finished = asyncio.run(finisher.finish(row))
    m = finished.metrics
    assert m.was_compressed and not m.still_over_limit
    assert m.compressed_tokens <= 2500
