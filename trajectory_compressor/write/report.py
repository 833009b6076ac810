"""The run's aggregate numbers: counted where rows finish, saved in checkpoints, rendered at the end.

`RunTotals` holds only counters and fixed-size histograms, so it costs the same for ten rows
or ten million and can be written into every checkpoint (a resumed run continues the counts).
"""

from __future__ import annotations

import bisect
from dataclasses import asdict, dataclass, field
from typing import Any

from trajectory_compressor.types import LLM_SUMMARIZER, RowMetrics

# Token-length histogram bin edges (upper bounds): fine enough for a report, fixed so that
# shards and resumed runs merge by adding counts.
HISTOGRAM_EDGES: tuple[int, ...] = (
    1000, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000, 20000, 24000, 28000,
    32000, 40000, 48000, 64000, 96000, 128000, 192000, 256000, 512000, 1_000_000,
)  # fmt: skip


# A summary scoring under NEAR_ZERO_FIDELITY states almost none of the tools, files and commands
# of the turns it replaces. When at least LOW_FIDELITY_SHARE of the (at least
# LOW_FIDELITY_MIN_SUMMARIES) scored LLM summaries do, the model is likely answering off-topic,
# not summarizing (a short decline is refused before: `reply_text`): the run says so at the end.
NEAR_ZERO_FIDELITY = 0.1
LOW_FIDELITY_SHARE = 0.25
LOW_FIDELITY_MIN_SUMMARIES = 20


def histogram_bin(tokens: int) -> int:
    """Index of the bin holding `tokens` (the last bin is open-ended)."""
    return bisect.bisect_left(HISTOGRAM_EDGES, tokens)


@dataclass
class RunTotals:
    """Counters for the report; every field adds up across checkpoints, shards and merges."""

    rows_read: int = 0
    rows_selected: int = 0
    rows_written: int = 0
    rows_compressed: int = 0
    rows_skipped_under_target: int = 0
    rows_unchanged_over_target: int = 0
    rows_still_over_limit: int = 0
    rows_dropped_over_limit: int = 0  # left out of the dataset whole (with --windows: every window dropped)
    rows_partly_dropped: int = 0  # --windows: written, but some of their windows dropped over the limit
    rows_truncated: int = 0
    rows_rejected: int = 0
    rows_rejected_in_data: int = 0  # valid JSON, written back unchanged (`--on-reject keep`)
    metrics_lines: int = 0  # one per row, one per window with --windows: a resume checks the file by it
    rows_summary_failed: int = 0
    rows_second_pass: int = 0
    rows_planned: int = 0  # a dry run's rows the plan would compress
    rows_by_summarizer: dict[str, int] = field(default_factory=dict)
    tokens_before: int = 0
    tokens_after: int = 0
    turns_before: int = 0
    turns_after: int = 0
    summary_tokens: int = 0
    summary_calls: int = 0
    summary_errors: int = 0
    llm_summaries_scored: int = 0  # LLM summaries written whose region had salient items to score
    llm_summaries_near_zero: int = 0  # ... of which scored under NEAR_ZERO_FIDELITY
    histogram_before: list[int] = field(default_factory=lambda: [0] * (len(HISTOGRAM_EDGES) + 1))
    histogram_after: list[int] = field(default_factory=lambda: [0] * (len(HISTOGRAM_EDGES) + 1))
    gpt_turns: int = 0  # gpt turns of the valid rows
    gpt_turns_trained: int = 0  # of them, held verbatim as training targets by a record (not dropped)
    rows_split: int = 0  # --windows: rows written as two or more windows
    windows: int = 0  # --windows: windows the dataset holds (or a dry run would write), one record each
    windows_dropped: int = 0  # --windows: windows left out, over the limit (`--over-limit drop`)
    windows_over_limit: int = 0  # written flagged or dropped
    windows_by_summarizer: dict[str, int] = field(default_factory=dict)
    future_anchors: int = 0  # anchors the kept turns need from summarized regions (fidelity.future)
    future_kept: int = 0  # of them, those the summaries hold
    rows_pruned: int = 0  # --prune-tool-outputs: rows written with tool results cleared
    rows_fitted_by_pruning: int = 0  # of them, those pruning alone fitted (no summary)
    turns_pruned: int = 0  # tool results shown as placeholders (in every record that shows them)
    tokens_pruned: int = 0  # what those results held, less their placeholders

    def _add_summary_scores(self, metrics: RowMetrics) -> None:
        """A written summary's fidelity: future-grounded anchors, and near-zero LLM scores."""
        fidelity = metrics.fidelity or {}
        future = fidelity.get("future")
        if future:
            self.future_anchors += future["anchors"]
            self.future_kept += future["kept"]
        score = fidelity.get("without_index", fidelity.get("score"))  # the model's own text
        if metrics.summarizer == LLM_SUMMARIZER and score is not None:
            self.llm_summaries_scored += 1
            self.llm_summaries_near_zero += score < NEAR_ZERO_FIDELITY

    def _add_pruned(self, metrics: RowMetrics) -> None:
        self.turns_pruned += metrics.pruned_turns or 0
        self.tokens_pruned += metrics.pruned_tokens or 0

    def add(self, metrics: RowMetrics) -> None:
        """Count one finished row (its metrics line is the single source of truth)."""
        self.rows_selected += 1
        self.metrics_lines += 1
        self.rows_written += metrics.written
        if metrics.rejected:
            self.rows_rejected += 1
            self.rows_rejected_in_data += metrics.written
            return
        self.gpt_turns += metrics.gpt_turns or 0
        self.gpt_turns_trained += 0 if metrics.dropped else (metrics.train_turns or 0)
        self.tokens_before += metrics.original_tokens
        self.turns_before += metrics.original_turns
        self.histogram_before[histogram_bin(metrics.original_tokens)] += 1
        if metrics.dropped:
            self.rows_dropped_over_limit += 1
        else:
            self.tokens_after += metrics.compressed_tokens
            self.turns_after += metrics.compressed_turns
            self.histogram_after[histogram_bin(metrics.compressed_tokens)] += 1
        self._add_summary_scores(metrics)  # a summary's, or a pruned row's placeholders'
        if metrics.pruned_turns:
            self.rows_pruned += 1
            self._add_pruned(metrics)
        if metrics.was_compressed:
            self.rows_compressed += 1
            self.summary_tokens += metrics.summary_tokens
            if metrics.summarizer:
                self.rows_by_summarizer[metrics.summarizer] = self.rows_by_summarizer.get(metrics.summarizer, 0) + 1
        elif metrics.planned_tokens is not None:
            self.rows_planned += 1
        elif metrics.skipped_under_target:
            self.rows_skipped_under_target += 1
        elif metrics.pruned_turns and not metrics.still_over_limit:
            self.rows_fitted_by_pruning += 1
        elif not metrics.truncated:  # a row cut by `--over-limit truncate` is counted as such
            self.rows_unchanged_over_target += 1
        if metrics.still_over_limit:
            self.rows_still_over_limit += 1
        if metrics.truncated:
            self.rows_truncated += 1
        if metrics.summary_failed:
            self.rows_summary_failed += 1
        if metrics.passes > 1:
            self.rows_second_pass += 1
        self.summary_calls += metrics.summary_calls
        self.summary_errors += metrics.summary_errors

    def add_windows(self, windows: list[RowMetrics]) -> None:
        """Count one row written as context windows (`--windows`): one metrics line per window.

        Row figures (read, over the limit, failed) count the row once; tokens and turns after
        are those of every window written, which repeat the head and the recent turns. Under
        `--over-limit drop` a row is written when any of its windows is (`rows_partly_dropped`
        counts those with some windows dropped) and dropped when all of them are, so written,
        dropped and rejected rows add up to the rows selected.
        """
        first = windows[0]
        dropped = sum(bool(m.dropped) for m in windows)
        self.rows_selected += 1
        self.metrics_lines += len(windows)
        self.rows_written += any(m.written for m in windows)
        self.windows += len(windows) - dropped
        self.windows_dropped += dropped
        self.rows_split += len(windows) > 1
        self.tokens_before += first.original_tokens
        self.turns_before += first.original_turns
        self.histogram_before[histogram_bin(first.original_tokens)] += 1
        self.gpt_turns += first.gpt_turns or 0
        for m in windows:
            if not m.dropped:
                self.tokens_after += m.compressed_tokens
                self.turns_after += m.compressed_turns
                self.histogram_after[histogram_bin(m.compressed_tokens)] += 1
            self.gpt_turns_trained += 0 if m.dropped else (m.train_turns or 0)
            self.windows_over_limit += m.still_over_limit
            self._add_summary_scores(m)
            self._add_pruned(m)
            if m.was_compressed:
                self.summary_tokens += m.summary_tokens
                if m.summarizer:
                    self.windows_by_summarizer[m.summarizer] = self.windows_by_summarizer.get(m.summarizer, 0) + 1
            self.summary_calls += m.summary_calls
            self.summary_errors += m.summary_errors
        if len(windows) > 1 and any(m.planned_tokens is not None for m in windows):
            self.rows_planned += 1  # a dry run: split as planned, no summary asked for
        elif len(windows) > 1:
            self.rows_compressed += 1
        elif first.skipped_under_target:
            self.rows_skipped_under_target += 1
        else:
            self.rows_unchanged_over_target += 1
        self.rows_still_over_limit += any(m.still_over_limit for m in windows)
        self.rows_pruned += any(m.pruned_turns for m in windows)
        self.rows_dropped_over_limit += dropped == len(windows)
        self.rows_partly_dropped += 0 < dropped < len(windows)
        for summarizer in dict.fromkeys(m.summarizer for m in windows if m.was_compressed and m.summarizer):
            self.rows_by_summarizer[summarizer] = self.rows_by_summarizer.get(summarizer, 0) + 1
        self.rows_summary_failed += any(m.summary_failed for m in windows)
        self.rows_second_pass += any(m.passes > 1 for m in windows)

    def merge(self, other: RunTotals) -> None:
        """Add another run's totals (shards, or a resumed run's earlier part)."""
        for name, value in asdict(other).items():
            mine = getattr(self, name)
            if isinstance(value, list):
                setattr(self, name, [a + b for a, b in zip(mine, value, strict=False)])
            elif isinstance(value, dict):
                merged = dict(mine)
                for key, count in value.items():
                    merged[key] = merged.get(key, 0) + count
                setattr(self, name, merged)
            else:
                setattr(self, name, mine + value)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunTotals:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known.setdefault("metrics_lines", known.get("rows_selected", 0))  # a checkpoint from before it was kept
        return cls(**known)


def report_figures(totals: RunTotals, summarizer_stats: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report's figures derived from `totals`: rows, tokens, turns, summaries (with the
    endpoint's usage, `summarizer_stats`), training, windows, pruning, fidelity and histograms, in
    the order the report says them (`write/run_report.RunReport.to_dict` lays out the rest)."""
    before = totals.tokens_before
    kept_rows = max(totals.rows_selected - totals.rows_rejected, 0)
    return {
        "rows": {
            "read": totals.rows_read,
            "selected": totals.rows_selected,
            "written": totals.rows_written,
            "compressed": totals.rows_compressed,
            "skipped_under_target": totals.rows_skipped_under_target,
            "unchanged_over_target": totals.rows_unchanged_over_target,
            "still_over_limit": totals.rows_still_over_limit,
            "dropped_over_limit": totals.rows_dropped_over_limit,
            **({"partly_dropped": totals.rows_partly_dropped} if totals.rows_partly_dropped else {}),
            "truncated": totals.rows_truncated,
            "rejected": totals.rows_rejected,
            "rejected_in_data": totals.rows_rejected_in_data,
            "summary_failed": totals.rows_summary_failed,
            "second_pass": totals.rows_second_pass,
            "planned": totals.rows_planned,
            "by_summarizer": dict(sorted(totals.rows_by_summarizer.items())),
            "compression_rate": round(totals.rows_compressed / kept_rows, 4) if kept_rows else 0.0,
        },
        "tokens": {
            "before": before,
            "after": totals.tokens_after,
            "saved": before - totals.tokens_after,
            "overall_ratio": round(totals.tokens_after / before, 4) if before else 1.0,
            "summary_tokens": totals.summary_tokens,
        },
        "turns": {
            "before": totals.turns_before,
            "after": totals.turns_after,
            "removed": totals.turns_before - totals.turns_after,
        },
        "summaries": {
            "calls": totals.summary_calls,
            "errors": totals.summary_errors,
            "fidelity": {
                "llm_scored": totals.llm_summaries_scored,
                "llm_near_zero": totals.llm_summaries_near_zero,
                "near_zero_below": NEAR_ZERO_FIDELITY,
            },
            **({"endpoint": summarizer_stats} if summarizer_stats else {}),
        },
        "training": {
            "gpt_turns": totals.gpt_turns,
            "gpt_turns_trained": totals.gpt_turns_trained,
            "trainable_share": round(totals.gpt_turns_trained / totals.gpt_turns, 4) if totals.gpt_turns else None,
        },
        **({"windows": windows_report(totals)} if totals.windows or totals.windows_dropped else {}),
        **({"pruning": pruning_report(totals)} if totals.rows_pruned else {}),
        "fidelity": {
            "future_anchors": totals.future_anchors,
            "future_kept": totals.future_kept,
            "future": round(totals.future_kept / totals.future_anchors, 4) if totals.future_anchors else None,
        },
        "histogram": {
            "edges": list(HISTOGRAM_EDGES),
            "before": totals.histogram_before,
            "after": totals.histogram_after,
        },
    }


def windows_report(totals: RunTotals) -> dict[str, Any]:
    """`--windows`: how rows were split, and how much more data the windows are than the rows.

    `windows` are the records written, `dropped` the windows left out over the limit; the windows
    per row are of every window cut, dropped ones too (how the rows were split)."""
    kept_rows = max(totals.rows_selected - totals.rows_rejected, 0)
    cut = totals.windows + totals.windows_dropped
    return {
        "rows_split": totals.rows_split,
        "windows": totals.windows,
        "dropped": totals.windows_dropped,
        "windows_per_row": round(cut / kept_rows, 3) if kept_rows else 0.0,
        "windows_per_split_row": (
            round((cut - (kept_rows - totals.rows_split)) / totals.rows_split, 3) if totals.rows_split else 0.0
        ),
        "over_limit": totals.windows_over_limit,
        "by_summarizer": dict(sorted(totals.windows_by_summarizer.items())),
        "tokens_written_per_input_token": round(totals.tokens_after / totals.tokens_before, 4)
        if totals.tokens_before
        else 1.0,
    }


def low_fidelity_warning(totals: RunTotals) -> str | None:
    """One line when a large share of the LLM summaries score near zero fidelity, else None."""
    scored, low = totals.llm_summaries_scored, totals.llm_summaries_near_zero
    if scored < LOW_FIDELITY_MIN_SUMMARIES or low < LOW_FIDELITY_SHARE * scored:
        return None
    return (
        f"warning: {low:,} of {scored:,} LLM summaries ({low / scored:.0%}) have fidelity under "
        f"{NEAR_ZERO_FIDELITY:g}: they state almost none of the tools, files and commands of the turns "
        "they replace (a model that refuses or answers off-topic?); see `fidelity` in the metrics, and "
        "--min-fidelity (e.g. 0.3) asks again for such summaries, then takes --on-summary-failure"
    )


def pruning_report(totals: RunTotals) -> dict[str, Any]:
    """`--prune-tool-outputs`: the rows pruned, those pruning alone fitted, what was cleared."""
    return {
        "rows_pruned": totals.rows_pruned,
        "rows_fitted_by_pruning": totals.rows_fitted_by_pruning,
        "turns_pruned": totals.turns_pruned,
        "tokens_cleared": totals.tokens_pruned,
    }
