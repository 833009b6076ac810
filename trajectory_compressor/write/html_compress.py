"""The `compress --html-report` page: sizes before and after, summary fidelity, why rows stayed
as they were, who wrote the summaries and at what cost, the input files, and example rows."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from trajectory_compressor.summarize.fidelity.score import score_histogram
from trajectory_compressor.types import ExampleRow
from trajectory_compressor.write.html_examples import RowExample, example_picker
from trajectory_compressor.write.html_parts import (
    PathCell,
    example_html,
    fidelity_svg,
    short_label,
    short_names,
    table_html,
)
from trajectory_compressor.write.html_report import render_html_report


@dataclass
class _SourceRows:
    """One input file's rows in the run: how many, compressed, how faithfully, how much trains."""

    rows: int = 0
    compressed: int = 0  # compressed lines: rows, or windows
    scores: float = 0.0
    scored: int = 0
    anchors: int = 0
    kept: int = 0
    gpt_turns: int = 0
    trained: int = 0

    def add(self, row: dict[str, Any], first_of_row: bool) -> None:
        self.rows += first_of_row
        if row.get("rejected"):
            return
        self.gpt_turns += (row.get("gpt_turns") or 0) if first_of_row else 0
        self.trained += 0 if row.get("dropped") else (row.get("train_turns") or 0)
        if not row.get("was_compressed"):
            return
        self.compressed += 1
        fidelity = row.get("fidelity") or {}
        if isinstance(fidelity.get("score"), (int, float)):
            self.scores += fidelity["score"]
            self.scored += 1
        future = fidelity.get("future") or {}
        self.anchors += future.get("anchors") or 0
        self.kept += future.get("kept") or 0


def write_compress_html_report(
    path: Path,
    report: dict[str, Any],
    metrics_path: Path,
    target: int,
    *,
    example: ExampleRow | None = None,
    examples: Sequence[RowExample] = (),
    currency: str = "USD",
) -> None:
    """The HTML page, drawn from the metrics file (a few numbers a row in memory, only when asked
    for); `examples` (read back from the files) go behind a picker, else `example` is shown."""
    before, after = array("q"), array("q")
    reasons: Counter[str] = Counter()
    by_summarizer: dict[str, list[float]] = {}
    sources: dict[str, _SourceRows] = {}
    with open(metrics_path, "rb") as handle:
        for line in handle:
            row = orjson.loads(line)
            window = row.get("window")
            sources.setdefault(str(row.get("source")), _SourceRows()).add(row, window is None or window["index"] == 0)
            if row.get("rejected"):
                reasons["rejected: " + str(row.get("reason") or "invalid record")[:80]] += 1
                continue
            if window is None or window["index"] == 0:  # --windows: a row's size once, each window's after
                before.append(row["original_tokens"])
            if not row.get("dropped"):
                after.append(row["compressed_tokens"])
            if row.get("reason") and not row.get("skipped_under_target"):
                reasons[_reason_kind(str(row["reason"]))] += 1
            if row.get("was_compressed"):
                score = (row.get("fidelity") or {}).get("score")
                scores_of = by_summarizer.setdefault(str(row.get("summarizer")), [])
                if isinstance(score, (int, float)):
                    scores_of.append(score)
    rows, tokens = report["rows"], report["tokens"]
    headline = {
        "rows": rows["selected"],
        "compressed": rows["compressed"],
        "still over limit": rows["still_over_limit"],
        "tokens before": tokens["before"],
        "tokens after": tokens["after"],
        "overall ratio": tokens["overall_ratio"],
    }
    pruning = report.get("pruning")
    if pruning:
        headline["fitted by pruning alone"] = pruning["rows_fitted_by_pruning"]
    windows, training = report.get("windows"), report.get("training") or {}
    if windows:
        headline["windows"] = windows["windows"]
        if windows.get("dropped"):
            headline["windows dropped over the limit"] = windows["dropped"]
        headline["rows split"] = windows["rows_split"]
        headline["tokens written per input token"] = windows["tokens_written_per_input_token"]
    if training.get("trainable_share") is not None:
        headline["gpt turns trained"] = f"{training['trainable_share']:.1%}"
    scores = [score for values in by_summarizer.values() for score in values]
    future = (report.get("fidelity") or {}).get("future")
    if future is not None:
        headline["future-grounded fidelity"] = future
    if scores:
        headline["mean fidelity"] = round(sum(scores) / len(scores), 3)
    sections = [
        (
            "Summary fidelity",
            fidelity_svg([("compressed rows", score_histogram(scores))]) if scores else "<p>No scored summaries.</p>",
        ),
        ("Summaries by summarizer", _summarizer_table(by_summarizer, report, currency)),
        ("Why rows were left unchanged or over the limit", _reasons_table(reasons)),
        ("By input file", _sources_table(sources)),
    ]
    if examples:
        names = short_names(sources)
        picked = [(short_label(e.label, names), e) for e in examples]
        sections.append(("Example rows: the replaced turns, the summary, the kept turns", example_picker("ex", picked)))
    elif example is not None:
        sections.append(("One row before and after", example_html(example)))
    page = render_html_report(
        "trajectory_compressor: compress report", headline, before, after, target, sections=sections
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")


def _summarizer_table(by_summarizer: dict[str, list[float]], report: dict[str, Any], currency: str) -> str:
    endpoint = report.get("summaries", {}).get("endpoint") or {}
    rows = [
        [name, len(scores), round(sum(scores) / len(scores), 3) if scores else None]
        for name, scores in sorted(by_summarizer.items())
    ]
    table = table_html(["summarizer", "rows", "mean fidelity"], rows) if rows else "<p>No rows were summarized.</p>"
    if endpoint.get("requests") is not None:
        cost = endpoint.get("cost_usd")
        table += table_html(
            ["endpoint", "requests", "prompt tokens", "completion tokens", "cache hits", "cost"],
            [
                [
                    str(endpoint.get("model") or endpoint.get("endpoint") or "llm"),
                    endpoint.get("requests"),
                    endpoint.get("prompt_tokens"),
                    endpoint.get("completion_tokens"),
                    endpoint.get("cache_hits"),
                    "no prices given" if cost is None else f"{cost:,.4f} {currency}",
                ]
            ],
        )
    return table


def _sources_table(sources: dict[str, _SourceRows]) -> str:
    names = short_names(sources)
    rows = []
    for source, figures in sorted(sources.items()):
        trained = f"{figures.trained:,} of {figures.gpt_turns:,}"
        if figures.gpt_turns:
            trained += f" ({figures.trained / figures.gpt_turns:.0%})"
        rows.append(
            [
                PathCell(names[source], source),
                figures.rows,
                figures.compressed,
                round(figures.kept / figures.anchors, 3) if figures.anchors else None,
                round(figures.scores / figures.scored, 3) if figures.scored else None,
                trained,
            ]
        )
    headers = ["input file", "rows", "summaries", "future-grounded fidelity", "item recall", "gpt turns trained"]
    return table_html(headers, rows)


def _reasons_table(reasons: Counter[str]) -> str:
    if not reasons:
        return "<p>Every row over the target was compressed to fit.</p>"
    return table_html(["reason", "rows"], reasons.most_common())


def _reason_kind(reason: str) -> str:
    """A reason without its row-specific detail, so that rows group: "summary failed: ..." by cause."""
    head, _, rest = reason.partition(": ")
    if head == "summary failed" and rest:
        return f"{head}: {rest.split(' (')[0].split(';')[0][:80]}"
    return reason[:120]
