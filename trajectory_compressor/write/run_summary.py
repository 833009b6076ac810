"""The end-of-run summary a person reads: what the run did against its budget, each figure named.

It is read from the run report (`write/report.py`), which keeps every figure; this says the ones
a user acts on, in words: the budget the rows were fitted to, what future-grounded fidelity and
its anchors are, what the summaries cost, and the time since the command started, start-up
included (imports, the tokenizer's load and probe, the endpoint check: a run of a few rows
spends most of its time there). The engine's own figures (who counted the tokens and what its
guard checked, the endpoint's raw counters, CPU time) are shown only when asked (`verbose`,
`compress -v`); `--json` and the report file keep them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trajectory_compressor.messages import quoted

ANCHORS = (
    "anchors: the exact ids, paths, names and numbers that the turns after a summary use from the turns it replaced"
)


@dataclass(frozen=True)
class SummaryView:
    """How the summary is shown: what the report alone cannot say."""

    verbose: bool = False  # the engine's figures too
    since_start: float | None = None  # seconds since the command started (its clock); None: the run's own time
    currency: str = "USD"  # of --price-in / --price-out, which the costs are in


def render_text_summary(report: dict[str, Any], view: SummaryView | None = None) -> str:
    """A short human-readable account of the report for the end of a run (or of a merge)."""
    view = view or SummaryView()
    if "rows" not in report:  # stopped before any row: batches pending, or interrupted there
        return f"status: {report['status']}"
    rows, tokens = report["rows"], report["tokens"]
    dry = bool(report.get("settings", {}).get("dry_run"))  # figures of a plan, not of a dataset
    status = report["status"] + (" (dry run: planned only, no summaries asked for, no dataset written)" if dry else "")
    lines = [f"status: {status}", *_budget_line(report), _rows_line(rows, dry=dry)]
    if rows.get("rejected_in_data"):
        lines.append(
            f"rejected: {rows['rejected_in_data']} bad records (valid JSON) are in the dataset unchanged, where a "
            "trainer's loader fails on them: --on-reject drop leaves them out (they stay in the rejects file)"
        )
    lines.append(_tokens_line(tokens, dry=dry, windows=bool(report.get("windows"))))
    lines += _compression_lines(report)
    lines += _endpoint_lines(report, view)
    counting = report.get("counting")
    if counting and view.verbose:
        lines.append(counting_line(counting))
    lines += _time_line(report["timings_seconds"], view)
    for name, path in report["outputs"].items():
        lines.append(f"{name}: {quoted(path)}")
    if not view.verbose and (counting or report["summaries"].get("endpoint")):
        lines.append("more: -v (token counting, endpoint counters); --json or the report file (every figure)")
    return "\n".join(lines)


def _budget_line(report: dict[str, Any]) -> list[str]:
    """The budget every row was fitted to: the figure the rest of the summary is measured against."""
    plan = report.get("settings", {}).get("plan") or {}
    if "target_max_tokens" not in plan:
        return []
    unit = "window" if plan.get("windows") else "row"
    return [
        f"budget: {plan['target_max_tokens']:,} tokens per {unit} (--target-max-tokens), "
        f"{plan['summary_target_tokens']:,} per summary (--summary-target-tokens)"
    ]


def _rows_line(rows: dict[str, Any], *, dry: bool) -> str:
    done = f"{rows.get('planned', 0)} planned to compress" if dry else f"{rows['compressed']} compressed"
    return (
        f"rows: {rows['selected']} processed, {done}, {rows['skipped_under_target']} under the budget as they were, "
        f"{rows['unchanged_over_target']} over it left unchanged, "
        + (f"{rows['truncated']} truncated (--over-limit truncate), " if rows.get("truncated") else "")
        + f"{rows['still_over_limit']} {'would stay' if dry else 'still'} over it, "
        + _dropped_rows(rows, dry=dry)
        + f"{rows['rejected']} rejected"
    )


def _dropped_rows(rows: dict[str, Any], *, dry: bool) -> str:
    """The rows `--over-limit drop` left out: whole, and (`--windows`) those written without some windows."""
    whole, partly = rows.get("dropped_over_limit", 0), rows.get("partly_dropped", 0)
    if not whole and not partly:
        return ""
    would = "would be " if dry else ""
    part = f", {partly} {would}written without some of their windows" if partly else ""
    return f"{whole} {would}dropped{part} (--over-limit drop), "


def _tokens_line(tokens: dict[str, Any], *, dry: bool, windows: bool) -> str:
    """Tokens before and after. With `--windows` the records repeat the context each window's
    turns had, so more tokens are written than read: that is the design, not a loss, and a
    "saved -11,184" would read as one."""
    label = "tokens (planned)" if dry else "tokens"
    if windows:
        return (
            f"{label}: {tokens['before']:,} read -> {tokens['after']:,} written in the windows "
            f"(ratio {tokens['overall_ratio']:.3f}: each window repeats the context its turns had)"
        )
    return (
        f"{label}: {tokens['before']:,} -> {tokens['after']:,} "
        f"({'would save' if dry else 'saved'} {tokens['saved']:,}, ratio {tokens['overall_ratio']:.3f})"
    )


def _compression_lines(report: dict[str, Any]) -> list[str]:
    """Windows, pruning, training turns, fidelity and the summarizers: what the compression kept."""
    lines = []
    windows = report.get("windows")
    if windows:
        dropped = windows.get("dropped", 0)
        kept_over = windows["over_limit"] - dropped  # written, flagged
        written = "planned" if report.get("settings", {}).get("dry_run") else "written"  # a dry run writes none
        lines.append(
            f"windows: {windows['windows']} {written}"
            + (f", {dropped} dropped over the limit (--over-limit drop)" if dropped else "")
            + f", {windows['rows_split']} rows split ({windows['windows_per_split_row']} windows each"
            + (", dropped ones included" if dropped else "")
            + ")"
            + (f", {kept_over} over the limit" if kept_over or not dropped else "")
            + f", {windows['tokens_written_per_input_token']:.2f} tokens written per input token"
        )
    pruning = report.get("pruning")
    if pruning:
        lines.append(
            f"pruning: {pruning['rows_pruned']} rows pruned, {pruning['rows_fitted_by_pruning']} fitted by pruning "
            f"alone (no summary); {pruning['turns_pruned']:,} tool results cleared, "
            f"{pruning['tokens_cleared']:,} tokens"
        )
    training = report.get("training")
    if training and training["gpt_turns"]:
        lines.append(
            f"training: {training['gpt_turns_trained']:,} of {training['gpt_turns']:,} gpt turns kept as "
            f"training targets ({training['trainable_share']:.1%})"
        )
    fidelity = report.get("fidelity") or {}
    if fidelity.get("future") is not None:
        kept_in = "the summaries or the placeholders" if pruning else "the summaries"
        lines.append(
            f"future-grounded fidelity: {fidelity['future']:.3f}: {kept_in} keep {fidelity['future_kept']:,} of the "
            f"{fidelity['future_anchors']:,} anchors the kept turns need"
        )
        lines.append(f"  ({ANCHORS})")
    rows = report["rows"]
    if rows["by_summarizer"]:
        by_window = (windows or {}).get("by_summarizer", {})
        parts = ", ".join(
            f"{name}: {count}" + (f" rows ({by_window.get(name, 0)} windows)" if windows else "")
            for name, count in rows["by_summarizer"].items()
        )
        lines.append(f"summaries by: {parts}; second pass: {rows['second_pass']}; failed: {rows['summary_failed']}")
    return lines


def _endpoint_lines(report: dict[str, Any], view: SummaryView) -> list[str]:
    """The LLM's work in a user's terms (requests, failures, cache, tokens, cost); its raw counters with -v."""
    endpoint = report["summaries"].get("endpoint")
    if not endpoint or endpoint.get("requests") is None:
        return []
    parts = [f"{endpoint['requests']:,} requests"]
    if endpoint.get("failures"):
        parts.append(f"{endpoint['failures']:,} failed")
    if endpoint.get("retries"):
        parts.append(f"{endpoint['retries']:,} retried")
    if endpoint.get("cache_hits"):
        parts.append(f"{endpoint['cache_hits']:,} answered from the cache")
    if endpoint.get("batch_answers_loaded"):
        parts.append(f"{endpoint['batch_answers_loaded']:,} batch answers loaded")
    prompt = (endpoint.get("prompt_tokens") or 0) + (endpoint.get("batch_prompt_tokens") or 0)
    completion = (endpoint.get("completion_tokens") or 0) + (endpoint.get("batch_completion_tokens") or 0)
    parts.append(f"{prompt:,} prompt + {completion:,} completion tokens")
    cost = endpoint.get("cost_usd")
    parts.append(
        "cost: no prices given (--price-in, --price-out)" if cost is None else f"cost {cost:,.4f} {view.currency}"
    )
    model = f" ({endpoint['model']})" if endpoint.get("model") else ""
    lines = [f"LLM{model}: " + ", ".join(parts)]
    if view.verbose:
        lines.append(
            "endpoint: " + ", ".join(f"{k}={v}" for k, v in endpoint.items() if not isinstance(v, (dict, list)))
        )
    return lines


def counting_line(counting: dict[str, Any]) -> str:
    """Who counted, and what the exactness guard checked: one line of the run's summary (-v)."""
    guard = counting["guard"]
    line = f"counting: {counting['backend']}"
    if counting.get("fast_backend") and guard["probes"]:
        line += (
            f" ({counting['fast_backend']} checked against hf: {guard['probes']:,} probe texts at load, "
            f"{guard['sampled']:,} sampled texts, {guard['sample_differences']} differences)"
        )
    if counting.get("note"):
        line += f"; {counting['note']}"
    return line


def _time_line(timings: dict[str, Any], view: SummaryView) -> list[str]:
    """The time since the command started when the CLI knows it, split into start-up, rows and writing.

    Start-up is what the run's own clock does not hold: before it, the interpreter, the imports,
    the tokenizer's load and probe and the endpoint check; after it, the report (small)."""
    rows = timings.get("total")
    cpu = f"; the rows' CPU {timings['cpu']:.1f}s" if view.verbose and timings.get("cpu") is not None else ""
    if view.since_start is None:
        return [f"time: {rows:.1f}s{cpu}"] if rows is not None else []
    rows = rows or 0.0
    writing = timings.get("finalize") or 0.0
    start_up = max(view.since_start - rows - writing, 0.0)
    return [
        f"time: {view.since_start:.1f}s since start ({start_up:.1f}s start-up: imports, tokenizer load, checks; "
        f"{rows:.1f}s on the rows; {writing:.1f}s writing{cpu})"
    ]
