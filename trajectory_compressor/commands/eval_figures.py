"""The figures `eval` reports, pooled from scored rows: pure functions over numbers.

Pooled, not averaged: future-grounded fidelity is the share of all needed anchors the summaries
kept (a row needing 40 anchors weighs 40 times a row needing one), and item recall of a kind is
the share of all items of that kind; the item score's distribution (mean, p10, median) is the
per-row view beside them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.commands.eval_rows import ScoredRow
from trajectory_compressor.summarize.fidelity import KINDS
from trajectory_compressor.summarize.fidelity.score import score_histogram
from trajectory_compressor.write.html_report import percentiles


def fidelity_figures(rows: Sequence[ScoredRow]) -> dict[str, Any]:
    """Distribution of the item score and pooled recall of each kind over `rows`."""
    scores = sorted(r.fidelity.score for r in rows if r.fidelity.score is not None)
    recall: dict[str, float | None] = {}
    items: dict[str, int] = {}
    for kind in KINDS:
        total = sum(r.fidelity.total.get(kind, 0) for r in rows)
        found = sum(r.fidelity.found.get(kind, 0) for r in rows)
        items[kind] = total
        recall[kind] = round(found / total, 4) if total else None
    with_unsupported = [r for r in rows if r.fidelity.unsupported]
    quantiles = {p: round(value, 4) for p, value in percentiles(scores, (10, 50)).items()}
    return {
        "scored": len(rows),
        "fidelity": {
            "mean": round(sum(scores) / len(scores), 4) if scores else None,
            "p10": quantiles.get(10),
            "median": quantiles.get(50),
            "min": scores[0] if scores else None,
            "histogram": score_histogram(scores),
        },
        "recall": recall,
        "items": items,
        "unsupported": {
            "rows": len(with_unsupported),
            "items": sum(len(r.fidelity.unsupported) for r in with_unsupported),
        },
    }


def future_figures(rows: Iterable[ScoredRow]) -> dict[str, Any]:
    """Future-grounded fidelity pooled over `rows`: needed anchors kept / needed anchors, with the
    distribution of the rows' own scores (rows that needed nothing have none)."""
    anchors = kept = 0
    scores = []
    for row in rows:
        anchors += len(row.future.anchors)
        kept += len(row.future.anchors) - len(row.future.missed)
        if row.future.score is not None:
            scores.append(row.future.score)
    return {
        "score": round(kept / anchors, 4) if anchors else None,
        "anchors": anchors,
        "kept": kept,
        "rows": len(scores),
        "histogram": score_histogram(scores),
    }


def training_figures(gpt_turns: int, trained: int, counted_from: set[str]) -> dict[str, Any]:
    """The gpt turns of the input and how many the output holds as training targets; `from` says
    whether the metrics counted them (`train_turns`) or `eval` did, from the files (older runs)."""
    return {
        "gpt_turns": gpt_turns,
        "trained": trained,
        "share": round(trained / gpt_turns, 4) if gpt_turns else None,
        "from": " and ".join(sorted(counted_from)) or None,
    }


def cost_figures(report: dict[str, Any] | None, rows: Sequence[ScoredRow], currency: str) -> dict[str, Any]:
    """What the run's summaries cost, from its report (`summaries.endpoint`). An output without
    LLM summaries cost nothing; one whose report has no prices (or no report) has no cost figure.
    Costs are in the currency of the run's `--price-in/--price-out`, named by `--currency`."""
    endpoint = ((report or {}).get("summaries") or {}).get("endpoint") or {}
    requests = endpoint.get("requests")
    used_llm = any(row.summarizer.startswith("llm") for row in rows)
    if requests is None and not used_llm:
        return {"amount": 0.0, "currency": currency, "requests": 0, "cache_hits": 0}
    amount = endpoint.get("cost_usd")
    return {
        "amount": None if amount is None else float(amount),
        "currency": currency,
        "requests": requests,
        "cache_hits": endpoint.get("cache_hits"),
    }


def frontier_row(summary: dict[str, Any]) -> dict[str, Any]:
    """One output's line of the comparison table: what it keeps, trains, remembers and costs."""
    compression, training, future, cost = (
        summary["compression"],
        summary["training"],
        summary["future"],
        summary["cost"],
    )
    return {
        "output": summary["output"],
        "rows": summary["rows"],
        "records": summary["records"],
        "compressed": summary["compressed"],
        "tokens_in": compression["tokens_before"],
        "tokens_written": compression["tokens_after"],
        "tokens_kept": compression["ratio"],
        "gpt_turns": training["gpt_turns"],
        "gpt_turns_trained": training["trained"],
        "trainable_share": training["share"],
        "future_fidelity": future["score"],
        "future_anchors": future["anchors"],
        "item_fidelity": summary["fidelity"]["mean"],
        "recall": summary["recall"],
        "cost": cost["amount"],
        "currency": cost["currency"],
        "requests": cost["requests"],
    }


@dataclass
class SourceFigures:
    """One input file's rows in one output: how many were compressed, how well, how much trains."""

    source: str
    rows: int = 0
    compressed: int = 0  # compressed lines (rows or windows)
    gpt_turns: int = 0
    trained: int = 0
    score_sum: float = 0.0
    scored: int = 0
    anchors: int = 0
    kept: int = 0

    def add_scored(self, row: ScoredRow) -> None:
        self.compressed += 1
        if row.fidelity.score is not None:
            self.score_sum += row.fidelity.score
            self.scored += 1
        self.anchors += len(row.future.anchors)
        self.kept += len(row.future.anchors) - len(row.future.missed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows": self.rows,
            "compressed": self.compressed,
            "future": round(self.kept / self.anchors, 4) if self.anchors else None,
            "fidelity": round(self.score_sum / self.scored, 4) if self.scored else None,
            "gpt_turns": self.gpt_turns,
            "trained": self.trained,
            "trainable_share": round(self.trained / self.gpt_turns, 4) if self.gpt_turns else None,
        }


def compare(first: Sequence[ScoredRow], second: Sequence[ScoredRow]) -> dict[str, Any]:
    """Row by row (window by window), the rows both outputs compressed: who scored higher on item
    recall, and by how much; each row's future-grounded fidelity in both beside it."""
    theirs = {(row.key.index, row.key.window): row for row in second}
    pairs = []
    for row in first:
        other = theirs.get((row.key.index, row.key.window))
        if other is not None and row.fidelity.score is not None and other.fidelity.score is not None:
            pairs.append((row, other))
    diffs = [(b.fidelity.score or 0) - (a.fidelity.score or 0) for a, b in pairs]
    rows = [
        {
            "index": a.index,
            **({"window": a.key.window} if a.key.window is not None else {}),
            "row": a.label,
            "first": round(a.fidelity.score or 0, 4),
            "second": round(b.fidelity.score or 0, 4),
            "difference": round(diff, 4),
            "future_first": None if a.future.score is None else round(a.future.score, 4),
            "future_second": None if b.future.score is None else round(b.future.score, 4),
        }
        for (a, b), diff in zip(pairs, diffs, strict=True)
    ]
    return {
        "rows_in_both": len(pairs),
        "first_better": sum(d < 0 for d in diffs),
        "second_better": sum(d > 0 for d in diffs),
        "tied": sum(d == 0 for d in diffs),
        "mean_difference": round(sum(diffs) / len(diffs), 4) if diffs else None,
        "rows": rows,
    }
