"""What one row's path reads of the run's settings: taken once, in one frozen record.

`RowFinisher` builds it from the run's `RunConfig` (`RowOptions.from_config`) and hands the same
record to each part of the path (`SummaryStep`, `RowOutcome`, `WindowFinisher`, `WindowRecords`),
which read what they need of it, so a setting of the row path is added here and read where it
is used, not threaded through the constructors in between.
"""

from __future__ import annotations

from dataclasses import dataclass

from trajectory_compressor.read.convert_format import AS_READ, HF_CHAT, WriteShape
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.settings.choices import NO_SUMMARIES, FailurePolicy, OverLimitPolicy


@dataclass(frozen=True)
class RowOptions:
    """The row path's settings: the budget, what a dry run leaves out, the over-limit and failure
    policies, the row's deadline, who the primary summarizer is, how rows are written."""

    target: int  # --target-max-tokens
    dry_run: bool = False  # plans only: no summary step, no dataset line
    over_limit: OverLimitPolicy = "keep"
    row_timeout: float = 0.0  # seconds a row's summaries may take (a window's, with --windows)
    failure_policy: FailurePolicy = "extractive"  # --on-summary-failure
    primary_name: str | None = None  # the primary summarizer's name: a summary by another is a fallback's
    summaries: bool = True  # off for --summarizer none: tool outputs pruned only
    keep_rejects_in_data: bool = True  # a rejected row's line stays in the dataset (never in hf-chat)
    shape: WriteShape = AS_READ  # --write-format

    @classmethod
    def from_config(
        cls, config: RunConfig, *, primary_name: str | None = None, keep_rejects_in_data: bool = True
    ) -> RowOptions:
        """The options of a run with `config`, whose primary summarizer is `primary_name`;
        `keep_rejects_in_data` is the output format's (JSON Lines outputs keep them)."""
        return cls(
            target=config.plan.target_max_tokens,
            dry_run=config.dry_run,
            over_limit=config.output.over_limit,
            row_timeout=config.row_timeout,
            failure_policy=config.on_summary_failure,
            primary_name=primary_name,
            summaries=config.summarizer != NO_SUMMARIES,
            # An hf-chat dataset holds conversations only: a record that is none is in rejects.jsonl.
            keep_rejects_in_data=keep_rejects_in_data
            and config.output.write_format != HF_CHAT
            and config.output.on_reject == "keep"
            and not config.dry_run,  # a dry run writes no dataset
            shape=WriteShape(config.output.write_format, config.tools_key),
        )

    @property
    def writes_data(self) -> bool:
        """Off for a dry run, which writes metrics and reports but no dataset."""
        return not self.dry_run

    @property
    def truncates(self) -> bool:
        """`--over-limit truncate`, on a run that writes rows (a dry run has nothing to truncate)."""
        return self.over_limit == "truncate" and not self.dry_run

    @property
    def drops(self) -> bool:
        return self.over_limit == "drop"
