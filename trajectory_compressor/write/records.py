"""A row's dataset line: written back byte for byte when unchanged, rebuilt in its own format when not.

The record keeps every key it came with; only its conversation is rebuilt from the layout
(`plan.apply`), by the format module that read it. JSON goes out through orjson, with the
standard library where orjson would change a value (integers beyond 64 bits, NaN, Infinity).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson

from trajectory_compressor.read.formats import ConversationFormat, from_turns, with_training_marks
from trajectory_compressor.read.jsonl import needs_standard_json
from trajectory_compressor.types import OutputTurn, SourceRecord


def dumps(value: Any) -> bytes:
    """JSON bytes, fast; falls back to the standard library for what orjson refuses (huge ints)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def unchanged_bytes(item: SourceRecord) -> bytes:
    """An unchanged row is written back byte for byte when its source line is known."""
    if item.raw is not None:
        return item.raw
    return dumps(item.record)


def window_bytes(
    item: SourceRecord,
    fmt: ConversationFormat,
    layout: Sequence[OutputTurn],
    marks: Sequence[bool | None],
    window: dict[str, int],
) -> bytes:
    """The dataset line of one context window (`--windows`): the record rebuilt from `layout`, its
    assistant turns marked `"train"` (`marks`, one per layout item), and its `"window"` key."""
    raw = item.raw
    standard = raw is not None and needs_standard_json(raw)
    record = from_turns(json.loads(raw) if standard else item.record, fmt, layout)  # type: ignore[arg-type]
    with_training_marks(record, fmt, marks)
    record.pop("window", None)  # a windowed dataset windowed again: the new position, at the end
    record["window"] = window
    if standard:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return dumps(record)


def rewritten_bytes(item: SourceRecord, fmt: ConversationFormat, layout: Sequence[OutputTurn]) -> bytes:
    """The dataset line of a rewritten row: its record with the new turns, every other key exact.

    A record holding integers beyond 64 bits, NaN or Infinity is re-read and written with the
    standard library, which keeps them as they came in (orjson would change them silently).
    """
    raw = item.raw
    if raw is not None and needs_standard_json(raw):
        record = from_turns(json.loads(raw), fmt, layout)
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return dumps(from_turns(item.record, fmt, layout))
