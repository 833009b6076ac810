"""Streaming JSONL (`.jsonl`, `.jsonl.gz`) reading with line numbers.

Lines are yielded one at a time so memory does not grow with the file; a line that is not
valid JSON becomes a `SourceRecord` carrying the error and the raw text, so the run can report
it and go on.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import orjson

from trajectory_compressor.types import SourceRecord



def open_text(path: str | Path) -> IO[str]:
    """Open a plain or gzipped text file for reading, by suffix."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape")
    return open(path, encoding="utf-8", errors="surrogateescape")


def iter_jsonl(path: str | Path) -> Iterator[SourceRecord]:
    """Yield one `SourceRecord` per non-blank line of a JSONL file, in order."""
    source = str(path)
    with open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                yield SourceRecord(
                    source=source,
                    line=line_number,
                    raw=line.rstrip("\r\n"),
                    error=f"invalid JSON: {exc}",
                )
                continue
            # The raw line is kept so an unchanged row is written back byte for byte.
            yield SourceRecord(source=source, line=line_number, record=record, raw=line.rstrip("\r\n"))
