"""`eval`: how faithful the summaries of one or more outputs of the same input are, and at what cost.

Each compressed row (or window) is scored again from the files themselves (input row, output row
and the metrics line that says which turns were replaced), so `eval` judges any run: one from
before fidelity was measured, one made with another prompt or model, the extractive summarizer
against an LLM, single rows against `--windows`. The headline is **future-grounded fidelity**
(the share of the anchors the kept turns after a summary need that the summary holds), with item
recall beside it; one table puts every output's tokens kept, trainable gpt turns, both
fidelities and cost side by side, to pick a point on the cost/quality frontier. Rows are
streamed; only the scores (a few numbers a row) and a few examples are kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajectory_compressor.commands.eval_figures import (
    SourceFigures,
    compare,
    cost_figures,
    fidelity_figures,
    frontier_row,
    future_figures,
    training_figures,
)
from trajectory_compressor.commands.eval_match import MatchedRow, OutputFiles
from trajectory_compressor.commands.eval_rows import (
    CompressedView,
    ScoredRow,
    gpt_turns_of,
    read_view,
    score_view,
    trained_turns_of,
)
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.write.collisions import NamedFile, html_report_file, input_files, refuse_overwrites
from trajectory_compressor.write.html_examples import RowExample, make_example
from trajectory_compressor.write.paths import OutputPaths

WORST_ROWS = 10
FIRST_EXAMPLES = 3  # the first compressed rows of every output: the same rows, side by side
WORST_EXAMPLES = 2  # and the rows whose kept turns lost most


@dataclass
class OutputScores:
    """The scored rows of one output and the counts around them."""

    output: str
    report: dict[str, Any] | None = None
    rows: int = 0  # input rows the metrics describe
    lines: int = 0  # metrics lines (one per window with --windows)
    windows: int = 0  # lines of a --windows output
    rows_split: int = 0
    compressed: int = 0  # compressed lines: rows, or windows
    records: int = 0  # records in the output (rows or windows written)
    tokens_in: int = 0  # of the valid rows, once each
    tokens_written: int = 0  # of every record written
    gpt_turns: int = 0
    trained: int = 0
    training_from: set[str] = field(default_factory=set)  # "metrics" and/or "files"
    scored: list[ScoredRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sources: dict[str, SourceFigures] = field(default_factory=dict)
    first_examples: list[RowExample] = field(default_factory=list)
    _worst: list[tuple[float, int, RowExample]] = field(default_factory=list)  # a max-heap by -score

    @property
    def examples(self) -> list[RowExample]:
        """The first compressed rows, then the worst by future-grounded fidelity (not repeated)."""
        first = {(e.index, e.window) for e in self.first_examples}
        worst = sorted(self._worst, key=lambda item: (-item[0], item[1]))
        return self.first_examples + [e for _, _, e in worst if (e.index, e.window) not in first]

    def keep_example(self, view: CompressedView, scored: ScoredRow) -> None:
        """Keep `view` as an example if it is among the first rows or the worst so far."""
        is_first = len(self.first_examples) < FIRST_EXAMPLES and all(
            e.index != view.key.index for e in self.first_examples
        )
        future = scored.future.score
        if not is_first and (future is None or (len(self._worst) >= WORST_EXAMPLES and -self._worst[0][0] <= future)):
            return
        example = make_example(
            view.key.index,
            view.key.window,
            view.label,
            view.region,
            view.summary,
            view.after,
            fidelity=scored.fidelity.score,
            future=future,
            missed=scored.future.missed,
        )
        if is_first:
            self.first_examples.append(example)
        elif future is not None:
            heapq.heappush(self._worst, (-future, -len(self.scored), example))
            if len(self._worst) > WORST_EXAMPLES:
                heapq.heappop(self._worst)

    def summary(self, currency: str) -> dict[str, Any]:
        groups: dict[str, list[ScoredRow]] = {}
        for row in self.scored:
            groups.setdefault(row.summarizer, []).append(row)
        ranked = [r for r in self.scored if r.future.score is not None or r.fidelity.score is not None]
        ranked.sort(key=lambda r: (2.0 if r.future.score is None else r.future.score, r.fidelity.score or 0.0))
        return {
            "output": self.output,
            "rows": self.rows,
            "records": self.records,
            "compressed": self.compressed,
            **({"windows": {"windows": self.windows, "rows_split": self.rows_split}} if self.windows else {}),
            "compression": {
                "tokens_before": self.tokens_in,
                "tokens_after": self.tokens_written,
                "ratio": round(self.tokens_written / self.tokens_in, 4) if self.tokens_in else None,
            },
            "training": training_figures(self.gpt_turns, self.trained, self.training_from),
            "future": future_figures(self.scored),
            **fidelity_figures(self.scored),
            "by_summarizer": {
                name: {"future": future_figures(rows), **fidelity_figures(rows)}
                for name, rows in sorted(groups.items())
            },
            "by_source": [figures.to_dict() for _, figures in sorted(self.sources.items())],
            "cost": cost_figures(self.report, self.scored, currency),
            "worst": [row.worst_entry() for row in ranked[:WORST_ROWS]],
            "problems": self.problems[:20],
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
    files = OutputFiles.find(output, metrics)
    model = files.model()
    scores = OutputScores(str(output), files.report)
    if unfinished := files.unfinished():
        scores.problems.append(unfinished)
    for row in files.rows(inputs, config):
        _count(scores, row, config)
        entry = row.entry
        if not entry.get("was_compressed") or row.produced is None:
            continue
        scores.compressed += 1
        view = read_view(entry, row.original, row.produced, model, config)
        if isinstance(view, str):
            scores.problems.append(view)
            continue
        scored = score_view(view, entry)
        scores.scored.append(scored)
        scores.sources.setdefault(view.source, SourceFigures(view.source)).add_scored(scored)
        scores.keep_example(view, scored)
    return scores


def _count(scores: OutputScores, row: MatchedRow, config: RunConfig) -> None:
    """The row and token counts of one metrics line: a row's input tokens and gpt turns once (its
    first window's line), the tokens and trained turns of every record written."""
    entry = row.entry
    window = entry.get("window") if isinstance(entry.get("window"), dict) else None
    first_of_row = window is None or int(window.get("index", 0)) == 0
    scores.lines += 1
    scores.records += row.produced is not None  # a rejected row written unchanged is a record too
    source = scores.sources.setdefault(str(entry.get("source")), SourceFigures(str(entry.get("source"))))
    if window is not None:
        scores.windows += 1
        scores.rows_split += first_of_row and int(window.get("count", 1)) > 1
    if first_of_row:
        scores.rows += 1
        source.rows += 1
    if entry.get("rejected"):
        return
    if first_of_row:
        scores.tokens_in += int(entry.get("original_tokens") or 0)
        gpt = entry["gpt_turns"] if isinstance(entry.get("gpt_turns"), int) else gpt_turns_of(row.original, config)
        scores.gpt_turns += gpt
        source.gpt_turns += gpt
    if row.produced is None:
        return
    scores.tokens_written += int(entry.get("compressed_tokens") or 0)
    if isinstance(entry.get("train_turns"), int):
        trained = entry["train_turns"]
        scores.training_from.add("metrics")
    else:
        trained = trained_turns_of(row.original, row.produced, config, windows=window is not None)
        scores.training_from.add("files")
    scores.trained += trained
    source.trained += trained


@dataclass
class Evaluation:
    """What `eval` found: the figures (`--json` prints them) and the example rows the HTML shows."""

    figures: dict[str, Any]
    examples: list[list[RowExample]]  # per output, in order


def evaluate(
    outputs: Sequence[Path],
    inputs: Sequence[InputSource],
    config: RunConfig,
    metrics: Sequence[Path | None] = (),
) -> Evaluation:
    """The `eval` result: figures for each output, one table of them all, and for exactly two
    outputs the row-by-row comparison."""
    given = list(metrics) + [None] * (len(outputs) - len(metrics))
    _refuse_overwrites(outputs, inputs, given, config)
    scored = [score_output(path, inputs, config, given[i]) for i, path in enumerate(outputs)]
    currency = config.llm.currency
    summaries = [scores.summary(currency) for scores in scored]
    figures: dict[str, Any] = {
        "outputs": summaries,
        "table": [frontier_row(summary) for summary in summaries],
    }
    if len(scored) == 2:
        figures["comparison"] = compare(scored[0].scored, scored[1].scored)
    if config.probes:
        from trajectory_compressor.commands.probes import run_probes

        probes = run_probes(outputs, inputs, config, given)
        for summary, row, asked in zip(summaries, figures["table"], probes.pop("outputs"), strict=True):
            summary["probes"] = asked
            row["probe_recall"], row["probe_ceiling_recall"] = asked["recall"], asked["ceiling_recall"]
        figures["probes"] = probes
    return Evaluation(figures, [scores.examples for scores in scored])


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
    refuse_overwrites([html_report_file(config.output.html_report)], reads)
