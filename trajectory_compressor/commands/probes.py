"""`eval --probes`: can a model still answer what the replaced turns showed, from the compressed row?

The Hermes agent's compaction evaluation, for users with an endpoint. For every compressed row
(or window) the questions of `fidelity.probes` (up to `--probe-questions`, about the values the
kept turns after the summary go on to use) are asked twice, at temperature 0:

* from the **compressed** context: the output row as written, up to the first kept turn that
  uses one of the values (its head, the summary, the kept turns before that use);
* from the **uncompressed** context: the input row up to the same point, the ceiling.

An answer is right when it states the value (`NOT IN CONTEXT` is allowed and counted). Recall is
right answers over questions answered; with the output's tokens kept beside it, a run is judged
at its cost. Answers are cached like summaries (a re-run asks nothing), contexts and questions
are masked before they are sent, and the requests go through the summarizer's client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajectory_compressor.commands.eval_match import OutputFiles
from trajectory_compressor.commands.eval_rows import CompressedView, read_view
from trajectory_compressor.errors import UsageError
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.summarize.choose import resolve_endpoint
from trajectory_compressor.summarize.fidelity.probes import NOT_IN_CONTEXT, Probe, answered, probes_for
from trajectory_compressor.summarize.fidelity.score import shown_item
from trajectory_compressor.summarize.llm.probe_answers import ProbeAnswer, ProbeAnswerer
from trajectory_compressor.types import EndpointAuthError, EndpointUnreachableError, Turn

EXAMPLES_SHOWN = 5


@dataclass
class ProbeFigures:
    """The questions asked about one output's rows, and how they were answered."""

    rows: int = 0  # compressed rows (or windows) asked about
    rows_without: int = 0  # compressed rows whose kept turns needed nothing from the region
    questions: int = 0
    right: int = 0
    ceiling_right: int = 0
    not_in_context: int = 0
    ceiling_not_in_context: int = 0
    failed: int = 0  # questions the endpoint gave no answer to (compressed context)
    ceiling_failed: int = 0
    examples: dict[int, dict[str, Any]] = field(default_factory=dict)  # by the order questions were asked

    def add(
        self, number: int, view: CompressedView, probe: Probe, compressed: ProbeAnswer, ceiling: ProbeAnswer
    ) -> None:
        """Score question `number` (in reading order) from both contexts' answers."""
        self.questions += 1
        for answer, ceiling_side in ((compressed, False), (ceiling, True)):
            if answer.text is None:
                self.ceiling_failed += ceiling_side
                self.failed += not ceiling_side
                continue
            right = answered(answer.text, probe.answer)
            abstained = not right and NOT_IN_CONTEXT in answer.text.upper()
            if ceiling_side:
                self.ceiling_right += right
                self.ceiling_not_in_context += abstained
            else:
                self.right += right
                self.not_in_context += abstained
        if number < EXAMPLES_SHOWN:
            self.examples[number] = {
                "row": view.label,
                "question": probe.question,
                "expected": shown_item(probe.answer),
                "answer": compressed.text if compressed.text is not None else f"(failed: {compressed.error})",
                "ceiling_answer": ceiling.text if ceiling.text is not None else f"(failed: {ceiling.error})",
            }

    def to_dict(self) -> dict[str, Any]:
        asked, ceiling_asked = self.questions - self.failed, self.questions - self.ceiling_failed
        return {
            "rows": self.rows,
            "rows_without_questions": self.rows_without,
            "questions": self.questions,
            "recall": round(self.right / asked, 4) if asked else None,
            "ceiling_recall": round(self.ceiling_right / ceiling_asked, 4) if ceiling_asked else None,
            "right": self.right,
            "ceiling_right": self.ceiling_right,
            "not_in_context": self.not_in_context,
            "ceiling_not_in_context": self.ceiling_not_in_context,
            "failed": self.failed,
            "ceiling_failed": self.ceiling_failed,
            "examples": [self.examples[number] for number in sorted(self.examples)],
        }


def run_probes(
    outputs: Sequence[Path], inputs: Sequence[InputSource], config: RunConfig, metrics: Sequence[Path | None]
) -> dict[str, Any]:
    """Ask every output's questions; the figures per output and what the asking cost."""
    config = resolve_endpoint(config)  # OPENAI_BASE_URL, as for summaries
    if not config.llm.base_url or not config.llm.model:
        raise UsageError("eval --probes asks a model: give --base-url (or set OPENAI_BASE_URL) and --model")
    return asyncio.run(_probe_all(outputs, inputs, config, metrics))


async def _probe_all(
    outputs: Sequence[Path], inputs: Sequence[InputSource], config: RunConfig, metrics: Sequence[Path | None]
) -> dict[str, Any]:
    answerer = ProbeAnswerer(config.llm)
    try:
        per_output = [
            (await _probe_output(output, inputs, config, given, answerer)).to_dict()
            for output, given in zip(outputs, metrics, strict=True)
        ]
    except EndpointAuthError as exc:
        raise UsageError(f"the probe endpoint refused the credentials: {exc}") from None
    except EndpointUnreachableError as exc:
        raise UsageError(str(exc)) from None
    finally:
        await answerer.aclose()
    return {
        "questions_per_row": config.probe_questions,
        "outputs": per_output,
        "endpoint": answerer.stats(),
        "currency": config.llm.currency,
    }


async def _probe_output(
    output: Path, inputs: Sequence[InputSource], config: RunConfig, metrics: Path | None, answerer: ProbeAnswerer
) -> ProbeFigures:
    """The rows are read in order; at most a few times the concurrency of questions are pending."""
    files = OutputFiles.find(output, metrics)
    model = files.model()
    figures = ProbeFigures()
    pending: set[asyncio.Task[None]] = set()
    window = 4 * config.llm.max_concurrency
    asked = 0
    try:
        for row in files.rows(inputs, config):
            if not row.entry.get("was_compressed") or row.produced is None:
                continue
            view = read_view(row.entry, row.original, row.produced, model, config)
            if isinstance(view, str):
                continue  # the figures say why it was not scored
            probes = probes_for(view.head, view.region, view.after, config.probe_questions)
            if not probes:
                figures.rows_without += 1
                continue
            figures.rows += 1
            compressed, ceiling = contexts(view, min(probe.use for probe in probes))
            for probe in probes:
                number, asked = asked, asked + 1
                pending.add(asyncio.create_task(_ask(figures, number, view, probe, compressed, ceiling, answerer)))
                if len(pending) >= window:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        task.result()
        if pending:
            for outcome in await asyncio.gather(*pending, return_exceptions=True):
                if isinstance(outcome, BaseException):
                    raise outcome
            pending = set()
    finally:
        for task in pending:
            task.cancel()
    return figures


def contexts(view: CompressedView, use: int) -> tuple[list[Turn], list[Turn]]:
    """What the model sees: the compressed row up to the first kept turn using an answer (head,
    summary, kept turns before it), and the uncompressed row up to the same turn (the ceiling)."""
    compressed = list(view.output_turns[: view.summary_at + 1 + use])
    ceiling = [*view.head, *view.region, *view.after[:use]]
    return compressed, ceiling


async def _ask(
    figures: ProbeFigures,
    number: int,
    view: CompressedView,
    probe: Probe,
    compressed: Sequence[Turn],
    ceiling: Sequence[Turn],
    answerer: ProbeAnswerer,
) -> None:
    from_summary, from_row = await asyncio.gather(
        answerer.answer(compressed, probe.question), answerer.answer(ceiling, probe.question)
    )
    figures.add(number, view, probe, from_summary, from_row)
