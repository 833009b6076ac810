"""The JSON file formats: JSON Lines (streamed, plain or gzipped) and a JSON array of records.

JSON Lines is the format of choice: read line by line (`read.jsonl` parses each), so memory
does not grow with the file, and an unchanged row is written back from its very bytes. A JSON
array is parsed whole, so it is for small inputs; a ``.json`` file whose first line is a
complete JSON object is JSON Lines under another name and is read as such (`json_file_kind`).
"""

from __future__ import annotations

import dataclasses
import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.files import open_lines
from trajectory_compressor.read.gzip_members import BytesAfterGzip
from trajectory_compressor.read.jsonl import BOM, json_spans, parse_json_line, parse_record, record_lines
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.types import SourceRecord, one_line

JSONL_SUFFIXES: tuple[str, ...] = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")


def read_jsonl(source: InputSource, settings: ReadConfig) -> Iterator[SourceRecord]:
    """One record per non-blank line, numbered by line; a truncated or corrupt file raises
    `InputError` naming the last line read (a line that does not parse is a record with `error`)."""
    last_line = 0
    try:
        with open_lines(source.path or source.name) as handle:
            for line, raw in record_lines(handle):
                last_line = line
                yield parse_record(source.name, line, raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(
            f"cannot read {quoted(source.name)} after line {last_line}: {one_line(exc)}"
            + (" (truncated or corrupt gzip?)" if _looks_cut(exc) else "")
        ) from exc


def _looks_cut(error: BaseException) -> bool:
    return isinstance(error, EOFError | gzip.BadGzipFile | zlib.error) and not isinstance(error, BytesAfterGzip)


def count_jsonl(source: InputSource, settings: ReadConfig) -> int:
    """The records `read_jsonl` yields, its lines counted without parsing them; a file that
    breaks counts one more, the record that says so (`read.select.records_of`)."""
    count = 0
    try:
        with open_lines(source.path or source.name) as handle:
            for _ in record_lines(handle):
                count += 1
    except (OSError, EOFError, zlib.error):
        count += 1
    return count


def json_file_kind(path: str) -> str:
    """``jsonl`` when the first non-blank line of a ``.json`` file is a whole JSON object on its
    own, else ``json``.

    A pretty-printed single object or an array never has a complete object on its first line,
    while a JSON Lines file always does; reading one line keeps the check cheap.
    """
    try:
        with open(path, "rb") as handle:
            for line in handle:
                line = line.removeprefix(BOM)
                if line.strip():
                    return "jsonl" if line.lstrip().startswith(b"{") and _parses_as_object(line) else "json"
    except OSError as exc:
        raise InputError(f"cannot read {quoted(path)}: {exc.strerror or exc}") from exc
    return "json"


def _parses_as_object(line: bytes) -> bool:
    try:
        return isinstance(parse_json_line(line), dict)
    except (ValueError, UnicodeDecodeError):
        return False


def read_json_array(source: InputSource, settings: ReadConfig) -> Iterator[SourceRecord]:
    """A JSON array of records, parsed whole (not streamed); a single object is one record.

    When the whole does not parse because one element is too deep or holds a lone surrogate,
    the array is split into its elements (without recursion) and each is read on its own, so
    that one element is rejected (and, being JSON, still written back) and the others kept.
    """
    path = source.path or source.name
    try:
        text = Path(path).read_bytes().removeprefix(BOM)
    except OSError as exc:
        raise InputError(f"cannot read {quoted(source.name)}: {exc.strerror or exc}") from exc
    if not text.strip():  # an empty file holds no records, as an empty JSON Lines file
        return
    try:
        data = parse_json_line(text)
    except (ValueError, UnicodeDecodeError) as exc:
        spans = json_spans(text)
        if spans is None:
            raise InputError(f"{quoted(source.name)} is neither a JSON array of records nor JSON Lines: {exc}") from exc
        yield from _json_elements(source.name, text, spans)
        return
    records = data if isinstance(data, list) else [data]
    for number, record in enumerate(records, start=1):
        yield SourceRecord(source=source.name, line=number, record=record)


def _json_elements(name: str, text: bytes, spans: list[tuple[int, int]]) -> Iterator[SourceRecord]:
    for number, (start, end) in enumerate(spans, start=1):
        # Whitespace between tokens goes (a JSON string holds no raw line break): one line each.
        raw = text[start:end].replace(b"\r", b"").replace(b"\n", b"")
        item = parse_record(name, number, raw)
        # A good element is written from its parsed value, as every JSON-array record is.
        yield item if item.error is not None else dataclasses.replace(item, raw=None)
