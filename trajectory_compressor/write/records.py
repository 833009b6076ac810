"""A row's dataset line: written back byte for byte when unchanged, rebuilt in its own format when not.

The record keeps every key it came with; only its conversation is rebuilt from the layout
(`plan.apply`), by the format module that read it. JSON goes out through orjson, with the
standard library where orjson would change a value (integers beyond 64 bits, NaN, Infinity).

With a write format (`--write-format`) other than the row's own, the line is the record
converted by `read.convert_format`, unchanged rows included (they are then no longer the input's
bytes); a row already in that format is written exactly as without the setting.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from trajectory_compressor.read.convert_format import AS_READ, WriteShape
from trajectory_compressor.read.formats import ConversationFormat, from_turns, with_training_marks
from trajectory_compressor.read.jsonl import holds_float, needs_standard_json
from trajectory_compressor.types import OutputTurn, SourceRecord


def dumps(value: Any) -> bytes:
    """JSON bytes, fast; falls back to the standard library for what orjson refuses (huge ints)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def unchanged_bytes(item: SourceRecord, fmt: ConversationFormat | None = None, shape: WriteShape = AS_READ) -> bytes:
    """An unchanged row is written back byte for byte when its source line is known.

    With a write `shape` other than its format `fmt`, it is written converted instead.
    """
    if fmt is not None and shape.converts(fmt):
        return _encoded(item, lambda record: shape.convert(record, fmt))
    if item.raw is not None:
        return item.raw
    return dumps(item.record)


def window_bytes(
    item: SourceRecord,
    fmt: ConversationFormat,
    layout: Sequence[OutputTurn],
    marks: Sequence[bool | None],
    window: dict[str, int],
    shape: WriteShape = AS_READ,
) -> bytes:
    """The dataset line of one context window (`--windows`): the record rebuilt from `layout`, its
    assistant turns marked `"train"` (`marks`, one per layout item), and its `"window"` key."""

    def build(record: Any) -> dict[str, Any]:
        rebuilt = from_turns(record, fmt, layout)
        with_training_marks(rebuilt, fmt, marks)
        rebuilt.pop("window", None)  # a windowed dataset windowed again: the new position, at the end
        rebuilt["window"] = window
        return shape.convert(rebuilt, fmt)

    return _encoded(item, build)


def rewritten_bytes(
    item: SourceRecord, fmt: ConversationFormat, layout: Sequence[OutputTurn], shape: WriteShape = AS_READ
) -> bytes:
    """The dataset line of a rewritten row: its record with the new turns, every other key exact.

    A record holding integers beyond 64 bits, NaN or Infinity is re-read and written with the
    standard library, which keeps them as they came in (orjson would change them silently).
    """
    return _encoded(item, lambda record: shape.convert(from_turns(record, fmt, layout), fmt))


def _encoded(item: SourceRecord, build: Callable[[Any], dict[str, Any]]) -> bytes:
    raw = item.raw
    if raw is not None:
        standard = _standard_record(raw, item.record)
        if standard is not None:
            return json.dumps(build(standard), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return dumps(build(item.record))


# The last record read again with the standard library: a row's context windows are each built
# from it (`window_bytes`), and scanning and parsing a long row once per window made `--windows`
# cost windows times the row. One entry, told apart by the raw bytes' identity: read, never changed.
_STANDARD: tuple[bytes | None, Any] = (None, None)
_NOT_NEEDED = object()


def _standard_record(raw: bytes, parsed: Any) -> Any:
    """The record of `raw` as the standard library reads it, when orjson would not keep it exact
    (`needs_standard_json`), else None. `parsed` is the record read from `raw`: orjson reads an
    integer beyond 64 bits as a float, and NaN and Infinity come from the standard library as
    floats, so a record without a float is exact as read, and its bytes are not scanned."""
    global _STANDARD
    cached_raw, record = _STANDARD
    if cached_raw is not raw:
        needed = holds_float(parsed) and needs_standard_json(raw)
        record = json.loads(raw) if needed else _NOT_NEEDED
        _STANDARD = (raw, record)
    return None if record is _NOT_NEEDED else record
