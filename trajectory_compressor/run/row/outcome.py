"""What one row contributes to the outputs: its metrics line, dataset line, over-limit entry, reject line.

Each row ends here exactly once, as a `FinishedRow`, its metrics line built from its typed
`Outcome` (`run.row.metrics`). Nothing here writes files: the run commits finished rows in
input order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trajectory_compressor.run.prepare import RejectedRow, ValidRow
from trajectory_compressor.run.row.metrics import Outcome, rejected_metrics, row_metrics
from trajectory_compressor.run.row.options import RowOptions
from trajectory_compressor.summarize.anchor_index import split_index
from trajectory_compressor.summarize.fidelity import Fidelity, score_summary
from trajectory_compressor.summarize.fidelity.anchors import FutureFidelity
from trajectory_compressor.types import LLM_SUMMARIZER, RowMetrics, SummaryResult, Turn
from trajectory_compressor.write.records import unchanged_bytes

REJECT_RAW_CHARS = 4000  # enough to see what is wrong without copying a 10 MB line
OVER_TARGET = "over target"  # the over-limit reason of a row still over with no other reason


@dataclass
class OutputRecord:
    """One record a row puts in the dataset (or would: `data` is None when it is not written),
    with its metrics line and over-limit entry."""

    metrics: RowMetrics
    data: bytes | None = None
    over_limit: dict[str, Any] | None = None


@dataclass
class FinishedRow:
    """Everything one row contributes to the outputs: one record, or with `--windows` one per
    context window (the first in the fields here, the others in `more`, in order)."""

    position: int
    metrics: RowMetrics
    data: bytes | None = None
    over_limit: dict[str, Any] | None = None
    reject: dict[str, Any] | None = None
    more: tuple[OutputRecord, ...] = ()

    def records(self) -> list[OutputRecord]:
        """The row's records in the order they are written."""
        return [OutputRecord(self.metrics, self.data, self.over_limit), *self.more]


def rejected_row(row: RejectedRow, *, keep_in_data: bool) -> FinishedRow:
    """A bad record: a reject line naming file and line; valid JSON goes back to the dataset unchanged."""
    item = row.item
    reject = {
        "index": row.index,
        "file": item.source,
        "line": item.line,
        "error": row.error,
        "raw": item.raw[:REJECT_RAW_CHARS].decode("utf-8", "replace") if item.raw is not None else None,
    }
    # Valid JSON (even `null`, or too deep to parse) goes back unchanged; only non-JSON cannot.
    data = unchanged_bytes(item) if (item.error is None or item.raw_is_json) and keep_in_data else None
    return FinishedRow(row.position, rejected_metrics(row, written=data is not None), data=data, reject=reject)


class RowOutcome:
    """Closes a row: the dataset line (unchanged if none given), the over-limit entry, `--over-limit drop`.

    A dry run (`options.writes_data` off) writes metrics and reports but no dataset; the
    options' `shape` (`--write-format`) converts an unchanged row read in another format.
    """

    def __init__(self, options: RowOptions) -> None:
        self.options = options

    def finish(
        self, row: ValidRow, outcome: Outcome, data: bytes | None, *, kept: Sequence[int] | None = None
    ) -> FinishedRow:
        """The row's finished record and its metrics line; `kept` are the original turns it holds
        (all when None), whose gpt turns are its training targets (but those the input marks
        `"train": false`: the record keeps their mark)."""
        roles, untrained = row.roles, row.untrained
        train_turns = row.gpt_turns
        if kept is not None:
            train_turns = sum(roles[i] == "gpt" and i not in untrained for i in kept)
        if data is None and self.options.writes_data:
            data = unchanged_bytes(row.item, row.fmt, self.options.shape)
        over = None
        dropped = False
        if outcome.still_over_limit:
            if not outcome.reason:
                outcome = replace(outcome, reason=OVER_TARGET)
            over = {
                "index": row.index,
                **({"id": row.record_id} if row.record_id is not None else {}),
                "file": row.item.source,
                "line": row.item.line,
                "tokens": outcome.tokens,
                "target": self.options.target,
                "reason": outcome.reason,
            }
            if self.options.drops:
                dropped = True
                data = None
        data = data if self.options.writes_data else None
        metrics = row_metrics(row, outcome, written=data is not None, train_turns=train_turns, dropped=dropped)
        return FinishedRow(row.position, metrics, data=data, over_limit=over)


def fidelity_metrics(
    fidelity: Fidelity,
    future: FutureFidelity,
    result: SummaryResult,
    region: Sequence[Turn],
    source: Sequence[Turn],
    *,
    score: Callable[[str], Fidelity] | None = None,
) -> dict[str, Any]:
    """The metrics line's `fidelity` of a written summary: item recall and future-grounded
    fidelity of what was written, and for an LLM summary that ends with an anchor index, the
    item score of the model's own text (`without_index`: what the near-zero warning judges).
    `score(text)` scores a text against the region when its items are at hand (a row's windows
    keep them)."""
    metrics = {**fidelity.to_metrics(), "future": future.to_metrics()}
    text = split_index(result.text)[0]
    if result.summarizer == LLM_SUMMARIZER and text != result.text:
        own = (score_summary(region, text, source) if score is None else score(text)).score
        metrics["without_index"] = None if own is None else round(own, 4)
    return metrics
