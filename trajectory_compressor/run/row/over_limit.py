"""`--over-limit truncate`: drop kept middle turns, from the end of the middle, until the row fits.

`keep` needs nothing (the row is written and listed as over), `drop` is a flag on the row's
outcome (`RowOutcome`); truncation rewrites the row, so it lives here. The protected head, the
summary and the protected tail are never cut, and a tool call never loses its results
(`plan.truncate` snaps the cut to a turn boundary that keeps them together).
"""

from __future__ import annotations

from dataclasses import dataclass

from trajectory_compressor.plan.protect import head_end, tail_start
from trajectory_compressor.plan.region import Plan
from trajectory_compressor.plan.truncate import truncate_middle
from trajectory_compressor.run.prepare import ValidRow
from trajectory_compressor.run.row.measure import RewriteRefused, RowMeasure
from trajectory_compressor.types import EditedTurn, KeptTurn, NewTurn, OutputTurn


@dataclass(frozen=True)
class Truncation:
    """The row after truncation: its layout, its exact size, how many turns were cut."""

    layout: list[OutputTurn]
    size: int
    turns_removed: int


def truncate_row(
    row: ValidRow, plan: Plan, layout: list[OutputTurn] | None, size: int, measure: RowMeasure
) -> Truncation:
    """Cut the row (its `layout` of `size` tokens: compressed, or pruned; the unchanged row when
    None) to fit. Pruned turns are cut like kept ones, at their pruned size."""
    plan_config = measure.plan_config
    roles = row.roles
    tail = tail_start(roles, plan_config)
    start = head_end(roles, plan_config)
    before = None  # the role written before `start`: by default the turn before it
    if layout is None:
        layout = [KeptTurn(i) for i in range(len(row.turns))]
        size = plan.total_tokens
    elif plan.region is not None:  # compressed: the cut starts after the summary
        start = plan.region.end
        before = next((item.turn.role for item in layout if isinstance(item, NewTurn)), None)
    start = min(start, tail)
    excess = size - plan_config.target_max_tokens
    cut = truncate_middle(roles, row.token_counts, start, tail, excess, before=before)
    removed = set(range(cut, tail))
    kept = [item for item in layout if not (isinstance(item, (KeptTurn, EditedTurn)) and item.index in removed)]
    if not measure.counter.counts_chat_template:
        return Truncation(kept, size - sum(row.token_counts[i] for i in removed), len(removed))
    try:
        return Truncation(kept, measure.size(row, kept), len(removed))
    except RewriteRefused:  # the chat template refuses the cut row: it stays as it was
        return Truncation(layout, size, 0)
