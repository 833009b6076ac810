"""The run's aggregate numbers: counted where rows finish, saved in checkpoints, rendered at the end.

`RunTotals` holds only counters and fixed-size histograms, so it costs the same for ten rows
or ten million and can be written into every checkpoint (a resumed run continues the counts).
"""

from __future__ import annotations

import bisect
from dataclasses import asdict, dataclass, field
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.types import RowMetrics

# Token-length histogram bin edges (upper bounds): fine enough for a report, fixed so that
# shards and resumed runs merge by adding counts.
HISTOGRAM_EDGES: tuple[int, ...] = (
    1000, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000, 20000, 24000, 28000,
    32000, 40000, 48000, 64000, 96000, 128000, 192000, 256000, 512000, 1_000_000,
)  # fmt: skip


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
    rows_dropped_over_limit: int = 0
    rows_truncated: int = 0
    rows_rejected: int = 0
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
    histogram_before: list[int] = field(default_factory=lambda: [0] * (len(HISTOGRAM_EDGES) + 1))
    histogram_after: list[int] = field(default_factory=lambda: [0] * (len(HISTOGRAM_EDGES) + 1))

    def add(self, metrics: RowMetrics) -> None:
        """Count one finished row (its metrics line is the single source of truth)."""
        self.rows_selected += 1
        self.rows_written += metrics.written
        if metrics.rejected:
            self.rows_rejected += 1
            return
        self.tokens_before += metrics.original_tokens
        self.turns_before += metrics.original_turns
        self.histogram_before[histogram_bin(metrics.original_tokens)] += 1
        if metrics.dropped:
            self.rows_dropped_over_limit += 1
        else:
            self.tokens_after += metrics.compressed_tokens
            self.turns_after += metrics.compressed_turns
            self.histogram_after[histogram_bin(metrics.compressed_tokens)] += 1
        if metrics.was_compressed:
            self.rows_compressed += 1
            self.summary_tokens += metrics.summary_tokens
            if metrics.summarizer:
                self.rows_by_summarizer[metrics.summarizer] = self.rows_by_summarizer.get(metrics.summarizer, 0) + 1
        elif metrics.planned_tokens is not None:
            self.rows_planned += 1
        elif metrics.skipped_under_target:
            self.rows_skipped_under_target += 1
        else:
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
        return cls(**known)


def build_report(
    totals: RunTotals,
    *,
    status: str,
    settings: dict[str, Any],
    outputs: dict[str, str],
    timings: dict[str, float],
    summarizer_stats: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The `<stem>.report.json` document: totals, ratios, usage and where everything went.

    A dry run writes no dataset, so its path is not among the outputs listed.
    """
    if settings.get("dry_run"):
        outputs = {name: path for name, path in outputs.items() if name != "data"}
    before = totals.tokens_before
    kept_rows = max(totals.rows_selected - totals.rows_rejected, 0)
    return {
        "status": status,
        "rows": {
            "read": totals.rows_read,
            "selected": totals.rows_selected,
            "written": totals.rows_written,
            "compressed": totals.rows_compressed,
            "skipped_under_target": totals.rows_skipped_under_target,
            "unchanged_over_target": totals.rows_unchanged_over_target,
            "still_over_limit": totals.rows_still_over_limit,
            "dropped_over_limit": totals.rows_dropped_over_limit,
            "truncated": totals.rows_truncated,
            "rejected": totals.rows_rejected,
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
            **({"endpoint": summarizer_stats} if summarizer_stats else {}),
        },
        "histogram": {
            "edges": list(HISTOGRAM_EDGES),
            "before": totals.histogram_before,
            "after": totals.histogram_after,
        },
        "timings_seconds": {k: round(v, 3) for k, v in timings.items()},
        "counters": totals.to_dict(),  # raw counters, so shard reports can be merged exactly
        "settings": settings,
        "outputs": outputs,
    }


def render_text_summary(report: dict[str, Any]) -> str:
    """A short human-readable account of the report for the end of a run."""
    rows, tokens = report["rows"], report["tokens"]
    dry = bool(report.get("settings", {}).get("dry_run"))  # figures of a plan, not of a dataset
    status = report["status"] + (" (dry run: planned only, no summaries asked for, no dataset written)" if dry else "")
    done = f"{rows.get('planned', 0)} planned to compress" if dry else f"{rows['compressed']} compressed"
    lines = [
        f"status: {status}",
        f"rows: {rows['selected']} processed, {done}, "
        f"{rows['skipped_under_target']} under target, {rows['unchanged_over_target']} unchanged over target, "
        f"{rows['still_over_limit']} {'would stay' if dry else 'still'} over limit, {rows['rejected']} rejected",
        f"{'tokens (planned)' if dry else 'tokens'}: {tokens['before']:,} -> {tokens['after']:,} "
        f"({'would save' if dry else 'saved'} {tokens['saved']:,}, ratio {tokens['overall_ratio']:.3f})",
    ]
    if rows["by_summarizer"]:
        parts = ", ".join(f"{name}: {count}" for name, count in rows["by_summarizer"].items())
        lines.append(f"summaries by: {parts}; second pass: {rows['second_pass']}; failed: {rows['summary_failed']}")
    endpoint = report["summaries"].get("endpoint")
    if endpoint and endpoint.get("requests") is not None:
        lines.append(
            "endpoint: " + ", ".join(f"{k}={v}" for k, v in endpoint.items() if not isinstance(v, (dict, list)))
        )
    duration = report["timings_seconds"].get("total")
    if duration is not None:
        lines.append(f"time: {duration:.1f}s")
    for name, path in report["outputs"].items():
        lines.append(f"{name}: {quoted(path)}")
    return "\n".join(lines)
