"""`analyze`: what a dataset looks like and what compressing it would cost, without any LLM call.

It streams the inputs through the same validate → count → plan steps as `compress`, keeps one
8-byte token count per row (for exact percentiles), and estimates the summary requests a
compress run would make: one per row the planner would compress, with the region's tokens
(plus the prompt's instructions) in and about the summary budget out. Beside that, always,
what `--prune-tool-outputs` would do to the same rows: the rows pruning alone fits, with no
summary, and the summary requests and tokens it spares (the main figures are the pruned
plan's when the flag is given).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.messages import quoted
from trajectory_compressor.plan.apply import carries_notice
from trajectory_compressor.plan.region import Plan, plan_region
from trajectory_compressor.plan.windows import WindowReplay
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.prepare import (
    CHUNK_ROWS,
    PreparedRow,
    RejectedRow,
    ValidRow,
    notice_tokens,
    planned_rows,
)
from trajectory_compressor.run.pruning import Pruning, pruned_views
from trajectory_compressor.settings import PlanConfig, RunConfig
from trajectory_compressor.write.collisions import html_report_file, input_files, refuse_overwrites
from trajectory_compressor.write.html_report import (
    percentiles,
    render_html_report,
    render_terminal_histogram,
    token_histogram,
)
from trajectory_compressor.write.run_files import OutputError
from trajectory_compressor.write.run_summary import counting_line

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
    pruning: PruningEstimate = field(default_factory=lambda: PruningEstimate())
    counting: dict[str, Any] | None = None  # who counted, and what the exactness guard saw

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
            "pruning": self.pruning.to_dict(self.over_target),
            **windows,
            **({"counting": self.counting} if self.counting else {}),
        }


@dataclass
class PruningEstimate:
    """What `--prune-tool-outputs` does to the rows (single-row plans, each summary at its budget):
    the rows it prunes, those it fits with no summary, what it clears, the summaries it spares."""

    rows_pruned: int = 0
    rows_fitted: int = 0
    turns_pruned: int = 0
    tokens_cleared: int = 0
    summary_requests_saved: int = 0
    summary_prompt_tokens_saved: int = 0
    summary_completion_tokens_saved: int = 0
    gpt_turns_kept_gained: int = 0  # more gpt turns verbatim (outside a summarized region) than without pruning

    def to_dict(self, over_target: int) -> dict[str, Any]:
        return {
            "rows_pruned": self.rows_pruned,
            "rows_fitted_by_pruning": self.rows_fitted,
            "share_of_rows_over_target": round(self.rows_fitted / over_target, 4) if over_target else None,
            "turns_pruned": self.turns_pruned,
            "tokens_cleared": self.tokens_cleared,
            "summary_requests_saved": self.summary_requests_saved,
            "summary_prompt_tokens_saved": self.summary_prompt_tokens_saved,
            "summary_completion_tokens_saved": self.summary_completion_tokens_saved,
            "gpt_turns_kept_gained": self.gpt_turns_kept_gained,
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
        self.gpt_turns_trainable += replay.roles.count("gpt") - len(replay.untrained)
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
        refuse_overwrites([html_report_file(config.output.html_report)], input_files(sources))
    plan = config.plan
    result = Analysis(
        target=plan.target_max_tokens, summary_budget=plan.summary_target_tokens, batch_discount=config.batch.discount
    )
    if plan.windows:
        result.windows = WindowsEstimate()
    notice = notice_tokens(counter, plan)
    max_prompt_tokens = config.llm.max_prompt_chars // 3  # the transcript sent is capped (~3 characters a token)
    for row, view in _with_pruned_views(planned_rows(sources, config, counter), counter, plan):
        result.rows += 1
        if isinstance(row, RejectedRow):
            result.rejected += 1
            continue
        row_notice = 0 if carries_notice(row.turns, plan.notice) else notice
        plain, pruned, pruning = _plans(row, view, config, row_notice)
        chosen = pruned if plan.prune_tool_outputs else plain
        result.gpt_turns += row.gpt_turns
        result.gpt_turns_kept += _gpt_kept(row.roles, chosen, row.untrained)
        if result.windows is not None:
            placeholders = row.placeholders.tokens if row.placeholders is not None else None
            replay = WindowReplay(
                row.roles,
                row.token_counts,
                plan,
                notice_tokens=row_notice,
                placeholders=placeholders,
                untrained=row.untrained,
            )
            result.windows.add(replay, max_prompt_tokens)
        total = row.source_tokens
        result.before.append(total)
        result.over_target += total > plan.target_max_tokens
        result.after.append(chosen.estimated_tokens)
        result.would_stay_over += chosen.still_over_limit
        prompt, completion = _request_tokens(chosen, plan.summary_target_tokens, max_prompt_tokens)
        result.would_compress += chosen.region is not None
        result.summary_prompt_tokens += prompt
        result.summary_completion_tokens += completion
        if pruning is not None:
            _add_pruning(result.pruning, row.roles, plain, pruned, pruning, plan, max_prompt_tokens, row.untrained)
    result.counting = counter.guard.to_dict()
    return result


def _with_pruned_views(
    rows: Iterable[PreparedRow], counter: TokenCounter, plan: PlanConfig
) -> Iterator[tuple[PreparedRow, Pruning | None]]:
    """Each row with what pruning would make of it (`row.pruning` when the run pruned it),
    made a chunk of rows at a time so that their placeholders are counted in one call."""
    rows = iter(rows)
    while chunk := list(itertools.islice(rows, CHUNK_ROWS)):
        unpruned = [row for row in chunk if isinstance(row, ValidRow) and row.pruning is None]
        views = dict(zip(map(id, unpruned), pruned_views(unpruned, counter, plan), strict=True))
        for row in chunk:
            yield row, (row.pruning if isinstance(row, ValidRow) else None) or views.get(id(row))


def _plans(row: ValidRow, pruning: Pruning | None, config: RunConfig, notice: int) -> tuple[Plan, Plan, Pruning | None]:
    """The row's plan without pruning, its plan pruned, and the pruning (None: nothing to clear).

    A run with `--prune-tool-outputs` prepared the row pruned; otherwise (and with `--windows`,
    which prunes per window) the pruned view is made for it, so the estimate is always there.
    """
    if pruning is None:
        return row.plan, row.plan, None

    def planned(counts: list[int]) -> Plan:
        return plan_region(
            row.roles, counts, config.plan, notice_tokens=notice, skip_under_target=config.skip_under_target
        )

    if row.pruning is not None:
        return planned(pruning.source_counts), row.plan, pruning
    return row.plan, planned(pruning.counts), pruning


def _gpt_kept(roles: list[str], plan: Plan, untrained: frozenset[int] = frozenset()) -> int:
    """gpt turns a single-row plan keeps verbatim (outside its region) as training targets: not
    those the input marks `"train": false`."""
    region = plan.region
    inside = range(0) if region is None else range(region.start, region.end)
    return sum(role == "gpt" and index not in untrained and index not in inside for index, role in enumerate(roles))


def _request_tokens(plan: Plan, budget: int, max_prompt_tokens: int) -> tuple[int, int]:
    """The summary request a plan asks for: the region's tokens (capped) and the instructions in,
    the budget out; nothing without a region."""
    if plan.region is None:
        return 0, 0
    return min(plan.region_tokens, max_prompt_tokens) + PROMPT_OVERHEAD_TOKENS, budget


def _add_pruning(
    estimate: PruningEstimate,
    roles: list[str],
    plain: Plan,
    pruned: Plan,
    pruning: Pruning,
    plan: PlanConfig,
    max_prompt_tokens: int,
    untrained: frozenset[int] = frozenset(),
) -> None:
    """One pruned row in the estimate: fitted with no summary or not, what it spares."""
    estimate.rows_pruned += 1
    estimate.rows_fitted += pruned.region is None and pruned.total_tokens <= plan.target_max_tokens
    estimate.turns_pruned += len(pruning.edits)
    estimate.tokens_cleared += pruning.saved_tokens
    before = _request_tokens(plain, plan.summary_target_tokens, max_prompt_tokens)
    after = _request_tokens(pruned, plan.summary_target_tokens, max_prompt_tokens)
    estimate.summary_requests_saved += (plain.region is not None) - (pruned.region is not None)
    estimate.summary_prompt_tokens_saved += before[0] - after[0]
    estimate.summary_completion_tokens_saved += before[1] - after[1]
    estimate.gpt_turns_kept_gained += _gpt_kept(roles, pruned, untrained) - _gpt_kept(roles, plain, untrained)


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
        *_pruning_lines(data),
        *_windows_lines(data),
        *([counting_line(data["counting"])] if data.get("counting") else []),
        "",
        "tokens per row:",
        render_terminal_histogram(token_histogram(analysis.before, 20)) if analysis.before else "(no rows)",
    ]
    return "\n".join(lines)


def _pruning_lines(data: dict[str, Any]) -> list[str]:
    """What pruning tool outputs alone would do (the plan above includes it with --prune-tool-outputs)."""
    pruning = data["pruning"]
    share = pruning["share_of_rows_over_target"]
    return [
        f"pruning tool outputs (--prune-tool-outputs): {pruning['rows_fitted_by_pruning']:,} of "
        f"{data['over_target']:,} rows over the target fit with no summary"
        + (f" ({share:.0%})" if share is not None else "")
        + f"; {pruning['turns_pruned']:,} tool results cleared in {pruning['rows_pruned']:,} rows "
        f"({pruning['tokens_cleared']:,} tokens)",
        f"pruning tool outputs: {pruning['summary_requests_saved']:,} fewer summary requests, about "
        f"{pruning['summary_prompt_tokens_saved']:,} prompt and {pruning['summary_completion_tokens_saved']:,} "
        f"completion tokens saved, {pruning['gpt_turns_kept_gained']:,} more gpt turns kept verbatim",
    ]


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
        "fit by pruning alone": data["pruning"]["rows_fitted_by_pruning"],
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
