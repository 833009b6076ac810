"""`eval`: how faithful the summaries of one output are, or of two outputs of the same input.

Each compressed row is scored again from the files themselves (input row, output row and the
metrics line that says which turns were replaced), so `eval` judges any run: one from before
fidelity was measured, one made with another prompt or model, the extractive summarizer against
an LLM. Rows are streamed; only the scores (a few numbers a row) are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajectory_compressor.commands.eval_match import RowMatcher, check_inputs, load_report, row_turns
from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.layout import RayOutputLayout, is_ray_output_folder, part_files
from trajectory_compressor.read.formats import RecordError
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.summarize.fidelity import KINDS, Fidelity, score_summary
from trajectory_compressor.summarize.fidelity.score import score_histogram, shown_item
from trajectory_compressor.types import SUMMARY_PREFIX, SourceRecord, Turn
from trajectory_compressor.write.collisions import NamedFile, input_files, refuse_overwrites
from trajectory_compressor.write.html_report import percentiles
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.run_files import OutputError

WORST_ROWS = 10
_MISSED_SHOWN = 6


@dataclass(frozen=True)
class ScoredRow:
    """One compressed row's fidelity, with what identifies it and what it saved."""

    index: int
    where: str  # "source:line"
    summarizer: str  # "llm (model)" or "extractive"
    fidelity: Fidelity
    original_tokens: int
    compressed_tokens: int

    def worst_entry(self) -> dict[str, Any]:
        score = self.fidelity.score
        missed = {
            kind: list(self.fidelity.missed.get(kind, ())[:_MISSED_SHOWN])
            for kind in KINDS
            if self.fidelity.missed.get(kind)
        }
        return {
            "index": self.index,
            "row": self.where,
            "summarizer": self.summarizer,
            "score": None if score is None else round(score, 4),
            "missed": {kind: [shown_item(item) for item in items] for kind, items in missed.items()},
            "unsupported": self.fidelity.shown_unsupported(),
        }


@dataclass
class OutputScores:
    """The scored rows of one output and the counts around them."""

    output: str
    rows: int = 0  # metrics lines
    compressed: int = 0
    tokens_before: int = 0  # of the rows in the dataset
    tokens_after: int = 0
    scored: list[ScoredRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        groups: dict[str, list[ScoredRow]] = {}
        for row in self.scored:
            groups.setdefault(row.summarizer, []).append(row)
        worst = sorted((r for r in self.scored if r.fidelity.score is not None), key=lambda r: r.fidelity.score or 0)
        return {
            "output": self.output,
            "rows": self.rows,
            "compressed": self.compressed,
            "compression": {
                "tokens_before": self.tokens_before,
                "tokens_after": self.tokens_after,
                "ratio": round(self.tokens_after / self.tokens_before, 4) if self.tokens_before else None,
            },
            **fidelity_figures(self.scored),
            "by_summarizer": {name: fidelity_figures(rows) for name, rows in sorted(groups.items())},
            "worst": [row.worst_entry() for row in worst[:WORST_ROWS]],
            "problems": self.problems[:20],
        }


def fidelity_figures(rows: Sequence[ScoredRow]) -> dict[str, Any]:
    """Distribution of the overall score and pooled recall of each kind over `rows`."""
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


def compare(first: OutputScores, second: OutputScores) -> dict[str, Any]:
    """Row by row, the rows both outputs compressed: who scored higher, and by how much."""
    theirs = {row.index: row for row in second.scored}
    pairs = [
        (row, theirs[row.index])
        for row in first.scored
        if row.index in theirs and row.fidelity.score is not None and theirs[row.index].fidelity.score is not None
    ]
    diffs = [(b.fidelity.score or 0) - (a.fidelity.score or 0) for a, b in pairs]
    rows = [
        {
            "index": a.index,
            "row": a.where,
            "first": round(a.fidelity.score or 0, 4),
            "second": round(b.fidelity.score or 0, 4),
            "difference": round(diff, 4),
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


def score_output(
    output: Path, inputs: Sequence[InputSource], config: RunConfig, metrics: Path | None = None
) -> OutputScores:
    """Score every compressed row of `output` against `inputs`, using the run's metrics.

    `output` is a local run's dataset file, or a Ray run's folder of parts (its metrics are the
    parts of the `<stem>.metrics/` folder beside it); `metrics` a file or a folder of parts. The
    three must belong together (`eval_match`): the first row where they do not is a
    `MismatchError`, never a score.
    """
    paths = OutputPaths.beside(output)
    metrics_files = _metrics_files(output, metrics)
    dataset = part_files(output) if is_ray_output_folder(output) else [output]
    report = load_report(paths.report)
    check_inputs(report, paths.report, inputs)
    model = _model_of(report)
    scores = OutputScores(str(output))
    rows = RowMatcher(output, metrics_files, inputs, config, dataset=dataset)
    for row in rows:
        entry = row.entry
        scores.rows += 1
        if row.produced is not None:
            scores.tokens_before += int(entry.get("original_tokens") or 0)
            scores.tokens_after += int(entry.get("compressed_tokens") or 0)
        if not entry.get("was_compressed") or row.produced is None:
            continue
        scores.compressed += 1
        scored = _score_row(entry, row.original, row.produced, model, config)
        if isinstance(scored, str):
            scores.problems.append(scored)
        else:
            scores.scored.append(scored)
    rows.check_totals(report, paths.report)
    return scores


def _score_row(
    entry: dict[str, Any], original: SourceRecord, produced: SourceRecord, model: str | None, config: RunConfig
) -> ScoredRow | str:
    where = f"{quoted(str(entry.get('source')))}:{entry.get('line')}"
    region = entry.get("compression_region") or {}
    try:
        before = row_turns(original, config)
        after = row_turns(produced, config)
        start, end = int(region["start_idx"]), int(region["end_idx"]) + 1
        summary = after[_summary_index(after, start)].value
    except (RecordError, KeyError, IndexError, TypeError, ValueError) as exc:
        return f"{where}: cannot be scored ({exc})"
    if not summary.startswith(SUMMARY_PREFIX):
        return f"{where}: turn {start} of the output is not a summary; does the output belong to these inputs?"
    summarizer = str(entry.get("summarizer") or "unknown")
    if summarizer == "llm" and model:
        summarizer = f"llm ({model})"
    fidelity = score_summary(before[start:end], summary[len(SUMMARY_PREFIX) :].strip(), before)
    return ScoredRow(
        index=int(entry["index"]),
        where=where,
        summarizer=summarizer,
        fidelity=fidelity,
        original_tokens=int(entry.get("original_tokens") or 0),
        compressed_tokens=int(entry.get("compressed_tokens") or 0),
    )


def _summary_index(after: list[Turn], start: int) -> int:
    """Where the summary turn is: at the region's start, or later when the output was written in
    the other format (`--write-format messages` splits a tool turn of several results in the head)."""
    if start < len(after) and after[start].value.startswith(SUMMARY_PREFIX):
        return start
    return next((i for i in range(start, len(after)) if after[i].value.startswith(SUMMARY_PREFIX)), start)


def _metrics_files(output: Path, metrics: Path | None) -> list[Path]:
    """The metrics files of `output`, in order: the one given (a file, or a folder of parts), the
    local run's file beside the output, or a Ray run's metrics folder of parts."""
    looked = metrics or OutputPaths.beside(output).metrics
    if looked.is_dir() and metrics is not None:
        return part_files(looked)
    if looked.is_file():
        return [looked]
    if metrics is None and is_ray_output_folder(output):
        looked = Path(RayOutputLayout.beside(str(output)).metrics)
        if looked.is_dir():
            return part_files(looked)
    raise OutputError(f"no metrics file for {quoted(output)} (looked for {quoted(looked)}); pass --metrics PATH")


def _model_of(report: dict[str, Any] | None) -> str | None:
    settings = (report or {}).get("settings", {})
    model = (settings.get("llm") or {}).get("model") if isinstance(settings, dict) else None
    return str(model) if model else None


def evaluate(
    outputs: Sequence[Path], inputs: Sequence[InputSource], config: RunConfig, metrics: Sequence[Path | None] = ()
) -> dict[str, Any]:
    """The `eval` result: figures for each output, and the row-by-row comparison of two."""
    given = list(metrics) + [None] * (len(outputs) - len(metrics))
    _refuse_overwrites(outputs, inputs, given, config)
    scored = [score_output(path, inputs, config, given[i]) for i, path in enumerate(outputs)]
    result: dict[str, Any] = {"outputs": [scores.summary() for scores in scored]}
    if len(scored) == 2:
        result["comparison"] = compare(scored[0], scored[1])
    return result


def _refuse_overwrites(
    outputs: Sequence[Path], inputs: Sequence[InputSource], metrics: Sequence[Path | None], config: RunConfig
) -> None:
    """The HTML report must not land on a file `eval` reads: an input, an output, its metrics or report."""
    if not config.output.html_report:
        return
    reads = input_files(inputs)
    for output, given in zip(outputs, metrics, strict=True):
        beside = OutputPaths.beside(output)
        reads += [
            NamedFile("the output", output),
            NamedFile("the metrics file", given or beside.metrics),
            NamedFile("the report", beside.report),
        ]
    refuse_overwrites([NamedFile("the HTML report", config.output.html_report)], reads)
