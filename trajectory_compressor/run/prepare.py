"""Validate, count and plan a chunk of records: the CPU part of the pipeline, run off the event loop.

A chunk's turn values are tokenized in one batch call so the Rust tokenizer can use every core
(and releases the GIL, so summaries keep flowing on the event loop meanwhile). The plan is
made here too: it only needs the counts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.count.chat_template import Chat, ChatTemplateCounter, ChatTemplateError
from trajectory_compressor.count.text_pieces import UncountableTextError
from trajectory_compressor.messages import quoted
from trajectory_compressor.plan.apply import carries_notice
from trajectory_compressor.plan.region import Plan, plan_region
from trajectory_compressor.read.ahead import ReadAhead
from trajectory_compressor.read.convert_format import AS_READ, WriteShape
from trajectory_compressor.read.formats import (
    ConversationFormat,
    RecordError,
    detect_format,
    marked_untrained,
    to_turns,
)
from trajectory_compressor.read.select import RowSelection
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.pruning import Placeholders, Pruning, offer_placeholders, prune_rows
from trajectory_compressor.settings import PlanConfig, ReadConfig, RunConfig
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import EditedTurn, SourceRecord, Turn

# Rows (and bytes of input) prepared in one batch: big enough for the tokenizer's batch speed,
# small enough that summaries of the first rows start early.
CHUNK_ROWS = 64
CHUNK_BYTES = 8_000_000


def notice_tokens(counter: TokenCounter, plan: PlanConfig) -> int:
    """What the planner charges a compressed row for the notice: the notice counted alone."""
    return counter.count(plan.notice) if plan.notice else 0


def summary_tokens(counter: TokenCounter, plan: PlanConfig) -> int:
    """What the planner charges a compressed row for the summary turn: its budget, plus, when
    rows are counted by a chat template, what the template writes around a new turn."""
    if isinstance(counter, ChatTemplateCounter):
        return plan.summary_target_tokens + counter.turn_overhead
    return plan.summary_target_tokens


@dataclass(frozen=True)
class RejectedRow:
    """A selected input row that cannot be compressed: unreadable, not a conversation, or too
    large to count. It goes out unchanged (when it is JSON) and is listed with `error`."""

    index: int  # 0-based position in the input stream
    position: int  # stream positions consumed once this row is committed (for resume)
    item: SourceRecord
    error: str

    def __post_init__(self) -> None:
        # The reason quotes the input (`unknown role 'DB_PASSWORD=...'`) and is written to the
        # metrics, the report and stderr: masked like anything else this tool writes.
        object.__setattr__(self, "error", redact_secrets(self.error))

    @property
    def label(self) -> str:
        return f"{quoted(self.item.source)}:{self.item.line}"

    @property
    def record_id(self) -> Any:
        return record_id(self.item.record)


@dataclass(frozen=True)
class CountedRow:
    """A valid row, read and counted, not yet planned: what pruning works on.

    With `--prune-tool-outputs`, `turns` and `token_counts` are the pruned row's (`pruning`
    holds the row as read); with `--windows` too, `placeholders` are what windows may clear.
    """

    index: int  # 0-based position in the input stream
    position: int  # stream positions consumed once this row is committed (for resume)
    item: SourceRecord
    fmt: ConversationFormat
    turns: list[Turn]
    token_counts: list[int]
    pruning: Pruning | None = None
    placeholders: Placeholders | None = None

    @property
    def source_turns(self) -> list[Turn]:
        """The turns as read (`turns` holds the placeholders of a pruned row)."""
        return self.pruning.source_turns if self.pruning is not None else self.turns

    @cached_property
    def source_tokens(self) -> int:
        """The row's size as read (kept: every window record of a long row reports it)."""
        return self.pruning.source_tokens if self.pruning is not None else sum(self.token_counts)

    @property
    def label(self) -> str:
        return f"{quoted(self.item.source)}:{self.item.line}"

    @property
    def record_id(self) -> Any:
        return record_id(self.item.record)

    @cached_property
    def roles(self) -> list[str]:
        """Each turn's role (made once: the planner, pruning and metrics all ask; read-only)."""
        return [turn.role for turn in self.turns]

    @cached_property
    def untrained(self) -> frozenset[int]:
        """The gpt turns the input marks `"train": false` (`read.formats.marked_untrained`):
        context for the trainer, never a training target, in every record written from the row."""
        marked = marked_untrained(self.item.record, self.fmt)
        return frozenset(index for index in marked if self.roles[index] == "gpt") if marked else frozenset()

    @cached_property
    def gpt_turns(self) -> int:
        """How many of the assistant's turns a trainer would train: all but those the input marks
        untrained (counted once: each `--windows` record's metrics ask)."""
        return self.roles.count("gpt") - len(self.untrained)

    @property
    def placeholder_edits(self) -> dict[int, EditedTurn]:
        """`--windows` with `--prune-tool-outputs`: each tool turn a window may clear, as written."""
        return self.placeholders.edits if self.placeholders is not None else {}

    def planned(self, plan: Plan) -> ValidRow:
        """This row with its plan: ready to finish."""
        return ValidRow(**{f.name: getattr(self, f.name) for f in fields(self)}, plan=plan)


@dataclass(frozen=True)
class ValidRow(CountedRow):
    """A valid row, counted and planned: every field a row finisher reads is there."""

    plan: Plan = field(kw_only=True)


# What a chunk yields for each selected row, in input order.
PreparedRow = ValidRow | RejectedRow


def record_id(record: Any) -> Any:
    """The id a metrics line names a record by (`id`, `uuid`, `_id` or `trajectory_id`), or None."""
    if isinstance(record, dict):
        for key in ("id", "uuid", "_id", "trajectory_id"):
            value = record.get(key)
            if isinstance(value, str):
                return printable_text(value)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def printable_text(text: str) -> str:
    """`text`, with any lone UTF-16 surrogate written as its escape (``\\ud800``), so that it can
    go into a UTF-8 metrics or rejects line."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@dataclass(frozen=True)
class _ReadRow:
    """A row whose turns could be read, before counting; `slot` is its place in the chunk."""

    slot: int
    index: int
    position: int
    item: SourceRecord
    fmt: ConversationFormat
    turns: list[Turn]

    def rejected(self, error: str) -> RejectedRow:
        return RejectedRow(self.index, self.position, self.item, printable_text(error))

    def counted(self, counts: list[int]) -> CountedRow:
        return CountedRow(self.index, self.position, self.item, self.fmt, self.turns, counts)


def prepare_rows(
    rows: Sequence[tuple[int, int, SourceRecord]],
    counter: TokenCounter,
    plan_config: PlanConfig,
    *,
    notice_tokens: int,
    skip_under_target: bool,
    reading: ReadConfig,
    shape: WriteShape = AS_READ,
) -> list[PreparedRow]:
    """Validate each record, count every turn of the chunk in one batch, and plan each row.

    A record is valid when the reader reads it and the run's write `shape` can write it
    (`WriteShape.check`: ``hf-chat`` refuses what would stop a trainer). Each row comes back
    once, in order: a `ValidRow` or a `RejectedRow` saying why."""
    rejected: dict[int, RejectedRow] = {}
    valid: list[_ReadRow] = []
    for slot, (index, position, item) in enumerate(rows):
        if item.error is not None:
            rejected[slot] = RejectedRow(index, position, item, item.error)
            continue
        try:
            fmt = detect_format(item.record, reading.conversation_key, reading.format)
            turns = to_turns(item.record, fmt)
            shape.check(item.record, fmt)
            valid.append(_ReadRow(slot, index, position, item, fmt, turns))
        except RecordError as exc:
            rejected[slot] = RejectedRow(index, position, item, printable_text(str(exc)))
        except RecursionError:  # a record too deep for the standard library (not from JSONL: checked there)
            rejected[slot] = RejectedRow(index, position, item, "nested too deeply to read")
    chats: list[Chat] | None = None
    if isinstance(counter, ChatTemplateCounter):
        valid, chats = _chats(valid, counter, rejected)
    while True:
        try:
            all_counts = _count(valid, chats, counter)
            break
        except ChatTemplateError as exc:  # reject that row, count the others
            failed = valid.pop(exc.position)
            if chats is not None:
                chats.pop(exc.position)
            rejected[failed.slot] = failed.rejected(str(exc))
        except UncountableTextError:  # which rows: each counted alone, the others kept
            valid, all_counts = _count_one_by_one(valid, chats, counter, rejected)
            break
    counted = [row.counted(counts) for row, counts in zip(valid, all_counts, strict=True)]
    if plan_config.prune_tool_outputs and plan_config.windows:  # windows prune each window's context
        counted = offer_placeholders(counted, counter, plan_config)
    elif plan_config.prune_tool_outputs:
        counted = prune_rows(counted, counter, plan_config)
    summary = summary_tokens(counter, plan_config)
    planned: dict[int, PreparedRow] = dict(rejected)
    for read, row in zip(valid, counted, strict=True):
        plan = plan_region(
            row.roles,
            row.token_counts,
            plan_config,
            notice_tokens=0 if carries_notice(row.turns, plan_config.notice) else notice_tokens,
            summary_tokens=summary,
            skip_under_target=skip_under_target,
        )
        planned[read.slot] = row.planned(plan)
    return [planned[slot] for slot in range(len(rows))]


def _count(rows: list[_ReadRow], chats: list[Chat] | None, counter: TokenCounter) -> list[list[int]]:
    """Per-turn counts of `rows` (of their `chats` with chat-template counts), in one batch."""
    if isinstance(counter, ChatTemplateCounter) and chats is not None:
        return counter.count_chats(chats)
    return counter.count_conversations([row.turns for row in rows])


def _count_one_by_one(
    rows: list[_ReadRow], chats: list[Chat] | None, counter: TokenCounter, rejected: dict[int, RejectedRow]
) -> tuple[list[_ReadRow], list[list[int]]]:
    """The rows that can be counted and their counts; a row holding a text too large to count
    exactly in bounded memory (`text_pieces`), or that its chat template refuses, goes to
    `rejected` with the reason. Only reached when a chunk holds such a row: its cuts are found
    before any text is tokenized, so the chunk's other rows are still tokenized once."""
    counted: list[_ReadRow] = []
    counts: list[list[int]] = []
    for position, row in enumerate(rows):
        try:
            [row_counts] = _count([row], None if chats is None else [chats[position]], counter)
        except UncountableTextError as exc:
            rejected[row.slot] = row.rejected(f"too large to count: {exc}")
            continue
        except ChatTemplateError as exc:
            rejected[row.slot] = row.rejected(str(exc))
            continue
        counted.append(row)
        counts.append(row_counts)
    return counted, counts


def _chats(
    valid: list[_ReadRow], counter: ChatTemplateCounter, rejected: dict[int, RejectedRow]
) -> tuple[list[_ReadRow], list[Chat]]:
    """The rows whose tools can be read, and what the chat template renders for each; the others
    go to `rejected` with the reason."""
    rows: list[_ReadRow] = []
    chats: list[Chat] = []
    for row in valid:
        try:
            chats.append(counter.chat_of(row.item.record, row.fmt))
        except RecordError as exc:
            rejected[row.slot] = row.rejected(str(exc))
            continue
        rows.append(row)
    return rows, chats


def prepare_for_run(
    rows: Sequence[tuple[int, int, SourceRecord]], counter: TokenCounter, config: RunConfig, notice_tokens: int
) -> list[PreparedRow]:
    """`prepare_rows` with a run's own settings: what every engine calls on a chunk it read."""
    return prepare_rows(
        rows,
        counter,
        config.plan,
        notice_tokens=notice_tokens,
        skip_under_target=config.skip_under_target,
        reading=config.read,
        shape=WriteShape(config.output.write_format, config.tools_key),
    )


def planned_rows(sources: Sequence[InputSource], config: RunConfig, counter: TokenCounter) -> Iterator[PreparedRow]:
    """Every selected row of `sources`, validated, counted and planned as a compress run plans it.

    For the commands that read and plan without a run around them (`analyze`, `requests`):
    the same selection, chunking and notice cost; a chunk is parsed and the one before it
    counted on their own threads while the caller works (`read.ahead`), so at most three
    chunks are in memory at a time.
    """
    plan = config.plan
    notice = notice_tokens(counter, plan)
    selection = RowSelection(sources, read=config.read, select=config.select)
    # Three threads: parsing a chunk, counting the one before, the caller on the one before that.
    chunks = ReadAhead(selection.chunks(CHUNK_ROWS, CHUNK_BYTES), name="tc-read")
    prepared = ReadAhead((prepare_for_run(chunk, counter, config, notice) for chunk in chunks), name="tc-prepare")
    try:
        for rows in prepared:
            yield from rows
    finally:
        prepared.close()
        chunks.close()
