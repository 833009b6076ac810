"""One compressed row (or window) of an output as `eval` reads it from the files, and its scores.

`eval` trusts nothing a run wrote about its own summaries: it lines up the input row, the output
row and the metrics line that says which turns were replaced, and judges the summary from them.
A `CompressedView` is that line-up: the input row's head and region, the output row as written,
and where its summary sits; the turns after the summary are the *kept* turns the summary must
serve (in `--windows` mode, the window's own turns after its summary: its future).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trajectory_compressor.commands.eval_match import row_turns
from trajectory_compressor.messages import quoted
from trajectory_compressor.read.formats import RecordError, detect_format, marked_untrained
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.summarize.fidelity import KINDS, Fidelity, score_summary
from trajectory_compressor.summarize.fidelity.anchors import FutureFidelity, future_fidelity
from trajectory_compressor.summarize.fidelity.score import shown_item
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets
from trajectory_compressor.types import LLM_SUMMARIZER, SUMMARY_PREFIX, SourceRecord, Turn
from trajectory_compressor.write.html_examples import row_label

_MISSED_SHOWN = 6


@dataclass(frozen=True)
class RowKey:
    """Which compressed thing a line is: an input row, and its window in a `--windows` output."""

    index: int
    window: int | None = None
    windows: int | None = None  # the row's window count

    def label(self, where: str) -> str:
        """`file.jsonl:12`, or `file.jsonl:12 window 3 of 15` for a window of a split row."""
        return row_label(where, self.window, self.windows)


@dataclass(frozen=True)
class CompressedView:
    """A compressed row lined up from the files: what it replaced, what replaced it, what follows."""

    key: RowKey
    source: str  # the input file, as the metrics name it
    where: str  # "source:line"
    summarizer: str  # "extractive", "llm (model)"
    input_turns: Sequence[Turn]
    start: int  # the region, in the input row: [start, end)
    end: int
    output_turns: Sequence[Turn]
    summary_at: int  # the summary turn's position in the output row

    @property
    def label(self) -> str:
        return self.key.label(self.where)

    @property
    def head(self) -> Sequence[Turn]:
        """The input turns before the region (what the summary did not have to carry)."""
        return self.input_turns[: self.start]

    @property
    def region(self) -> Sequence[Turn]:
        return self.input_turns[self.start : self.end]

    @property
    def after(self) -> Sequence[Turn]:
        """The kept turns after the summary, as written (a window's: its own future)."""
        return self.output_turns[self.summary_at + 1 :]

    @property
    def summary(self) -> str:
        """The summary's body, without its `[CONTEXT SUMMARY]:` prefix."""
        return self.output_turns[self.summary_at].value[len(SUMMARY_PREFIX) :].strip()


def read_view(
    entry: dict[str, Any], original: SourceRecord, produced: SourceRecord, model: str | None, config: RunConfig
) -> CompressedView | str:
    """The view of one compressed metrics line, or why it cannot be scored (one line)."""
    where = f"{quoted(str(entry.get('source')))}:{entry.get('line')}"
    region = entry.get("compression_region") or {}
    window = entry.get("window") if isinstance(entry.get("window"), dict) else None
    key = RowKey(
        int(entry["index"]),
        None if window is None else int(window.get("index", 0)),
        None if window is None else int(window.get("count", 1)),
    )
    try:
        before = row_turns(original, config)
        after = row_turns(produced, config)
        start, end = int(region["start_idx"]), int(region["end_idx"]) + 1
        summary_at = _summary_index(after, start)
        summary = after[summary_at].value
    except (RecordError, KeyError, IndexError, TypeError, ValueError) as exc:
        return f"{key.label(where)}: cannot be scored ({exc})"
    if not summary.startswith(SUMMARY_PREFIX):
        return (
            f"{key.label(where)}: turn {start} of the output is not a summary; does the output belong to these inputs?"
        )
    summarizer = str(entry.get("summarizer") or "unknown")
    if summarizer == LLM_SUMMARIZER and model:
        summarizer = f"{LLM_SUMMARIZER} ({model})"
    source = str(entry.get("source"))
    return CompressedView(key, source, where, summarizer, before, start, end, after, summary_at)


def _summary_index(after: list[Turn], start: int) -> int:
    """Where the summary turn is: at the region's start, or later when the output was written in
    the other format (`--write-format messages` splits a tool turn of several results in the head)."""
    if start < len(after) and after[start].value.startswith(SUMMARY_PREFIX):
        return start
    return next((i for i in range(start, len(after)) if after[i].value.startswith(SUMMARY_PREFIX)), start)


@dataclass(frozen=True)
class ScoredRow:
    """One compressed row's (or window's) fidelity: item recall, and what its kept turns needed."""

    key: RowKey
    where: str  # "source:line"
    source: str
    summarizer: str
    fidelity: Fidelity
    future: FutureFidelity
    original_tokens: int
    compressed_tokens: int

    @property
    def index(self) -> int:
        return self.key.index

    @property
    def label(self) -> str:
        return self.key.label(self.where)

    def worst_entry(self) -> dict[str, Any]:
        """The row as the worst-rows list shows it: both scores, what it missed, what it invented."""
        score, future = self.fidelity.score, self.future.score
        missed = {
            kind: _distinct(shown_item(item) for item in self.fidelity.missed.get(kind, ()))[:_MISSED_SHOWN]
            for kind in KINDS
            if self.fidelity.missed.get(kind)
        }
        return {
            "index": self.key.index,
            **({"window": self.key.window} if self.key.window is not None else {}),
            "row": self.label,
            "source": self.source,
            "summarizer": self.summarizer,
            "future": None if future is None else round(future, 4),
            "score": None if score is None else round(score, 4),
            "needed_missed": _distinct(shown_item(anchor) for anchor in self.future.missed)[:_MISSED_SHOWN],
            "missed": missed,
            "unsupported": self.fidelity.shown_unsupported(),
        }


def _distinct(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def score_view(view: CompressedView, entry: dict[str, Any]) -> ScoredRow:
    """Score a view as `compress` scores a summary: item recall against the region (inventions
    against the whole input row), and the anchors the kept turns after it need."""
    summary = view.summary
    fidelity = score_summary(view.region, summary, view.input_turns)
    future = future_fidelity(view.head, view.region, view.after, summary)
    if future.missed or any(fidelity.missed.values()):
        fidelity, future = _masked_in_context(fidelity, future, view.region)
    return ScoredRow(
        key=view.key,
        where=view.where,
        source=view.source,
        summarizer=view.summarizer,
        fidelity=fidelity,
        future=future,
        original_tokens=int(entry.get("original_tokens") or 0),
        compressed_tokens=int(entry.get("compressed_tokens") or 0),
    )


def _masked_in_context(
    fidelity: Fidelity, future: FutureFidelity, region: Sequence[Turn]
) -> tuple[Fidelity, FutureFidelity]:
    """The missed items and anchors as `eval` may show them: one that the region holds only inside
    a credential (a piece of a key its JSON was cut into) is `[REDACTED]`. Masking an item alone
    cannot tell: a credential's pattern needs its context (`aws_secret_access_key = ...`)."""
    raw = "\n".join(turn.value for turn in region)
    masked = redact_secrets(raw)
    if masked == raw:
        return fidelity, future

    def shown(items: Sequence[str]) -> tuple[str, ...]:  # one for one: the scores count them
        return tuple(item if item in masked or item not in raw else REDACTED for item in items)

    missed = {kind: shown(items) for kind, items in fidelity.missed.items()}
    return replace(fidelity, missed=missed), replace(future, missed=shown(future.missed))


def gpt_turns_of(item: SourceRecord, config: RunConfig) -> int:
    """The gpt turns of a row a trainer would train, as `compress` counts them (`gpt_turns`): not
    those marked `"train": false` (0 when it is not a conversation)."""
    try:
        turns = row_turns(item, config)
        untrained = marked_untrained(item.record, detect_format(item.record, config.read.conversation_key))
    except (RecordError, KeyError, TypeError):
        return 0
    return sum(turn.role == "gpt" and index not in untrained for index, turn in enumerate(turns))


def trained_turns_of(original: SourceRecord, produced: SourceRecord, config: RunConfig, *, windows: bool) -> int:
    """The gpt turns an output row holds as training targets, for metrics from before they counted
    them: in a `--windows` record the ones marked `"train": true`, else the gpt turns kept verbatim
    from the input row (not marked `"train": false`)."""
    try:
        turns = row_turns(produced, config)
        messages = produced.record[detect_format(produced.record, config.read.conversation_key).key]
        verbatim = {turn.value for turn in row_turns(original, config) if turn.role == "gpt"}
    except (RecordError, KeyError, TypeError):
        return 0
    trained = 0
    for position, turn in enumerate(turns):
        if turn.role != "gpt":
            continue
        mark = messages[position].get("train") if isinstance(messages[position], dict) else None
        trained += mark is True if windows else (turn.value in verbatim and mark is not False)
    return trained
