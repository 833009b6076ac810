"""`analyze`: what a dataset looks like and what compressing it would cost, without any LLM call.

It streams the inputs through the same validate → count → plan steps as `compress`, keeps one
8-byte token count per row (for exact percentiles), and estimates the summary requests a
compress run would make: one per row the planner would compress, with the region's tokens
(plus the prompt's instructions) in and about the summary budget out.
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.messages import quoted
from trajectory_compressor.plan.apply import carries_notice
from trajectory_compressor.plan.windows import WindowReplay
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.prepare import notice_tokens, planned_rows
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.write.collisions import NamedFile, input_files, refuse_overwrites
from trajectory_compressor.write.html_report import (
    percentiles,
    render_html_report,
    render_terminal_histogram,
    token_histogram,
)
from trajectory_compressor.write.run_files import OutputError

PROMPT_OVERHEAD_TOKENS = 600  # instructions and transcript labels around the region's turns


@dataclass
class Analysis:
    """Distribution and planned work for a set of inputs."""

    target: int
    summary_budget: int
    batch_discount: float = 0.5  # `--batch` tokens cost this share of the live price
    rows: int = 0
    rejected: int = 0
    over_target: int = 0
    would_compress: int = 0
    would_stay_over: int = 0
    summary_prompt_tokens: int = 0
    summary_completion_tokens: int = 0
    before: array = field(default_factory=lambda: array("q"))
    after: array = field(default_factory=lambda: array("q"))
    gpt_turns: int = 0
    gpt_turns_kept: int = 0  # verbatim in the single-row plan (outside its region)
    windows: WindowsEstimate | None = None  # --windows: the same rows cut into context windows

    def cost(self, price_in: float | None, price_out: float | None) -> float | None:
        """Estimated cost in the prices' currency (prices per million tokens)."""
        if price_in is None and price_out is None:
            return None
        return (self.summary_prompt_tokens * (price_in or 0) + self.summary_completion_tokens * (price_out or 0)) / 1e6

    def to_dict(self, price_in: float | None = None, price_out: float | None = None) -> dict[str, Any]:
        pcts = percentiles(self.before, (50, 90, 95, 99, 100)) if self.before else {}
        windows = {"windows": self.windows.to_dict(price_in, price_out, self.batch_discount)} if self.windows else {}
        return {
            "rows": self.rows,
            "rejected": self.rejected,
            "target_max_tokens": self.target,
            "over_target": self.over_target,
            "would_compress": self.would_compress,
            "would_stay_over_limit": self.would_stay_over,
            "tokens_total": sum(self.before),
            "tokens_after_estimate": sum(self.after),
            "percentiles": {f"p{int(p)}": round(v) for p, v in pcts.items()},
            "summary_requests": self.would_compress,
            "summary_prompt_tokens": self.summary_prompt_tokens,
            "summary_completion_tokens": self.summary_completion_tokens,
            "estimated_cost": self.cost(price_in, price_out),
            "estimated_cost_batch": _share(self.cost(price_in, price_out), self.batch_discount),
            "gpt_turns": self.gpt_turns,
            "gpt_turns_trainable": self.gpt_turns_kept,
            **windows,
        }


@dataclass
class WindowsEstimate:
    """`analyze --windows`: the rows replayed into context windows, each summary at its budget."""

    rows_split: int = 0
    windows: int = 0
    over_limit: int = 0
    tokens_written: int = 0
    gpt_turns_trainable: int = 0
    summary_requests: int = 0
    summary_prompt_tokens: int = 0
    summary_completion_tokens: int = 0

    def add(self, replay: WindowReplay, max_prompt_tokens: int) -> None:
        windows = replay.replay_at_budget()
        self.windows += len(windows)
        self.rows_split += len(windows) > 1
        self.over_limit += sum(window.over for window in windows)
        self.tokens_written += sum(window.tokens for window in windows)
        self.gpt_turns_trainable += replay.roles.count("gpt")
        for before, window in itertools.pairwise(windows):
            # Each summary is the update of the one before with the turns that left the context.
            left = replay.tokens(before.context_start if before.index else replay.head, window.context_start)
            self.summary_requests += 1
            self.summary_prompt_tokens += min(left, max_prompt_tokens) + before.summary_tokens + PROMPT_OVERHEAD_TOKENS
            self.summary_completion_tokens += window.summary_tokens

    def to_dict(self, price_in: float | None, price_out: float | None, batch_discount: float) -> dict[str, Any]:
        cost = None
        if price_in is not None or price_out is not None:
            prompt, completion = self.summary_prompt_tokens, self.summary_completion_tokens
            cost = (prompt * (price_in or 0) + completion * (price_out or 0)) / 1e6
        return {
            "rows_split": self.rows_split,
            "windows": self.windows,
            "windows_over_limit": self.over_limit,
            "tokens_written": self.tokens_written,
            "gpt_turns_trainable": self.gpt_turns_trainable,
            "summary_requests": self.summary_requests,
            "summary_prompt_tokens": self.summary_prompt_tokens,
            "summary_completion_tokens": self.summary_completion_tokens,
            "estimated_cost": cost,
            "estimated_cost_batch": _share(cost, batch_discount),
        }


def analyze_sources(
    sources: list[InputSource],
    config: RunConfig,
    counter: TokenCounter,
) -> Analysis:
    """Count and plan every row of `sources`; no summaries, no outputs (the HTML page is checked first)."""
    if config.output.html_report:
        refuse_overwrites([NamedFile("the HTML report", config.output.html_report)], input_files(sources))
    plan = config.plan
    result = Analysis(
        target=plan.target_max_tokens, summary_budget=plan.summary_target_tokens, batch_discount=config.batch.discount
    )
    if plan.windows:
        result.windows = WindowsEstimate()
    notice = notice_tokens(counter, plan)
    for row in planned_rows(sources, config, counter):
        result.rows += 1
        if row.plan is None:
            result.rejected += 1
            continue
        assert row.token_counts is not None and row.turns is not None
        region = row.plan.region
        result.gpt_turns += row.roles.count("gpt")
        result.gpt_turns_kept += sum(
            role == "gpt" and (region is None or not region.start <= i < region.end) for i, role in enumerate(row.roles)
        )
        if result.windows is not None:
            row_notice = 0 if carries_notice(row.turns, plan.notice) else notice
            replay = WindowReplay(row.roles, row.token_counts, plan, notice_tokens=row_notice)
            result.windows.add(replay, config.llm.max_prompt_chars // 3)
        total = row.plan.total_tokens
        result.before.append(total)
        result.over_target += total > plan.target_max_tokens
        result.after.append(row.plan.estimated_tokens)
        result.would_stay_over += row.plan.still_over_limit
        if row.plan.region is not None:
            result.would_compress += 1
            # The transcript sent is capped at max_prompt_chars (about 3 characters a token).
            sent = min(row.plan.region_tokens, config.llm.max_prompt_chars // 3)
            result.summary_prompt_tokens += sent + PROMPT_OVERHEAD_TOKENS
            result.summary_completion_tokens += plan.summary_target_tokens
    return result


def _share(cost: float | None, share: float) -> float | None:
    return None if cost is None else cost * share


def render_analysis(analysis: Analysis, price_in: float | None, price_out: float | None) -> str:
    """The terminal view: headline numbers, percentiles and a histogram of tokens per row."""
    data = analysis.to_dict(price_in, price_out)
    lines = [
        f"rows: {data['rows']:,} ({data['rejected']:,} rejected)",
        f"tokens: {data['tokens_total']:,} in all; "
        + ", ".join(f"{name} {value:,}" for name, value in data["percentiles"].items()),
        f"over target ({data['target_max_tokens']:,}): {data['over_target']:,}; "
        f"a compress run would summarize {data['would_compress']:,} rows "
        f"({data['would_stay_over_limit']:,} would stay over the limit)",
        f"summary requests: {data['summary_requests']:,}, about {data['summary_prompt_tokens']:,} prompt "
        f"and {data['summary_completion_tokens']:,} completion tokens"
        + (
            f", about {data['estimated_cost']:.2f} live or {data['estimated_cost_batch']:.2f} with --batch "
            "at the given prices"
            if data["estimated_cost"] is not None
            else ""
        ),
        f"gpt turns kept as training targets: {data['gpt_turns_trainable']:,} of {data['gpt_turns']:,}",
        *_windows_lines(data),
        "",
        "tokens per row:",
        render_terminal_histogram(token_histogram(analysis.before, 20)) if analysis.before else "(no rows)",
    ]
    return "\n".join(lines)


def _windows_lines(data: dict[str, Any]) -> list[str]:
    """`--windows`: the same rows as context windows, beside the single-row figures above."""
    windows = data.get("windows")
    if not windows:
        return []
    cost = ""
    if windows["estimated_cost"] is not None:
        cost = f", about {windows['estimated_cost']:.2f} live or {windows['estimated_cost_batch']:.2f} with --batch"
    ratio = windows["tokens_written"] / data["tokens_total"] if data["tokens_total"] else 1.0
    return [
        f"with --windows: {windows['windows']:,} windows ({windows['rows_split']:,} rows split, "
        f"{windows['windows_over_limit']:,} over the limit), {windows['tokens_written']:,} tokens written "
        f"({ratio:.2f}x the input), all {windows['gpt_turns_trainable']:,} gpt turns trained",
        f"with --windows: {windows['summary_requests']:,} summary requests, about "
        f"{windows['summary_prompt_tokens']:,} prompt and {windows['summary_completion_tokens']:,} completion tokens"
        + cost,
    ]


def analysis_html(analysis: Analysis, price_in: float | None, price_out: float | None) -> str:
    data = analysis.to_dict(price_in, price_out)
    headline = {
        "rows": data["rows"],
        "over target": data["over_target"],
        "would compress": data["would_compress"],
        "would stay over": data["would_stay_over_limit"],
        "tokens": data["tokens_total"],
        "summary requests": data["summary_requests"],
    }
    if data["estimated_cost"] is not None:
        headline["estimated cost"] = round(data["estimated_cost"], 2)
        headline["estimated cost with --batch"] = round(data["estimated_cost_batch"], 2)
    return render_html_report(
        "trajectory_compressor: analysis", headline, analysis.before, analysis.after, analysis.target
    )


def write_analysis_html(path: Path, analysis: Analysis, price_in: float | None, price_out: float | None) -> None:
    """Write the HTML page; a path that cannot be written is one line (`OutputError`), not a traceback."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(analysis_html(analysis, price_in, price_out), encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write the HTML report {quoted(path)}: {exc.strerror or exc}") from None
