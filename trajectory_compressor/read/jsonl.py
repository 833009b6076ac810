"""Streaming JSONL (`.jsonl`, `.jsonl.gz`) reading with line numbers.

Lines are read as bytes, one at a time, so memory does not grow with the file and no text
decoding is paid twice: orjson parses bytes directly, and an unchanged row is written back
from the very bytes it came in as. A line that is not valid JSON becomes a `SourceRecord`
carrying the error and the raw text, so the run can report it and go on.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from trajectory_compressor.types import SourceRecord


def open_binary(path: str | Path) -> IO[bytes]:
    """Open a plain or gzipped file for reading bytes, by suffix."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


# A run of 20+ digits may be an integer beyond 64 bits, which orjson silently turns into a float.
_LONG_DIGITS = re.compile(rb"\d{20,}")


def parse_json_line(line: bytes) -> Any:
    """orjson first (fast); the standard library for what orjson refuses but Python's json
    accepts (NaN, Infinity), so such rows are not rejected."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def exact_record(raw: bytes, record: Any) -> Any:
    """The record parsed so that integers beyond 64 bits keep every digit.

    Called only for rows that are rewritten (unchanged rows are written from their raw bytes),
    so the extra scan costs nothing on the common path.
    """
    if _LONG_DIGITS.search(raw):
        return json.loads(raw)
    return record


def iter_jsonl(path: str | Path) -> Iterator[SourceRecord]:
    """Yield one `SourceRecord` per non-blank line of a JSONL file, in order."""
    source = str(path)
    with open_binary(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            raw = line.rstrip(b"\r\n")
            if not raw.strip():
                continue
            try:
                record = parse_json_line(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                yield SourceRecord(source=source, line=line_number, raw=raw, error=f"invalid JSON: {exc}")
                continue
            # The raw line is kept so an unchanged row is written back byte for byte.
            yield SourceRecord(source=source, line=line_number, record=record, raw=raw)
