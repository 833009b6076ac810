"""Zstandard-compressed JSON Lines (`.jsonl.zst`, `.ndjson.zst`), streamed: the shape most dumps of
agent runs and pretraining corpora ship in.

Decompressed by pyarrow's zstd codec (`pyarrow.CompressedInputStream`), a dependency already:
it streams frame after frame (a file `zstd`, `pzstd` or `zstd --long` wrote, several frames
concatenated) a megabyte at a time, so memory does not grow with the file, and it opens a local
path and a URI's stream alike (`read.files`). Each line is then read as a `.jsonl` line is
(`read.jsonl`): a line that does not parse is a record with `error`, an unchanged row is written
back from its very bytes. A truncated or corrupt file raises `InputError` naming the last line read.
A mirrored output is plain JSON Lines (`.jsonl`): this tool writes no zstd.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.files import ArrowStream, LineReader, is_uri
from trajectory_compressor.read.jsonl import parse_record, record_lines
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.types import SourceRecord, one_line

JSONL_ZST_SUFFIXES: tuple[str, ...] = (".jsonl.zst", ".ndjson.zst")
# Decompressed bytes per read: what a file that breaks loses of its last good lines at most (a
# read that meets the break returns nothing), small enough to keep nearly all of them.
ZSTD_READ_BYTES = 64 << 10


class _SmallReads:
    """A stream read at most `ZSTD_READ_BYTES` at a time, whatever the reader asks."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def read(self, size: int = -1) -> bytes:
        return bytes(self.stream.read(ZSTD_READ_BYTES if size is None or size < 0 else min(size, ZSTD_READ_BYTES)))

    def close(self) -> None:
        self.stream.close()


@contextmanager
def zstd_lines(path: str) -> Iterator[LineReader]:
    """The decompressed lines (with their ends) of a local zstd file or one at a URI."""
    import pyarrow as pa

    try:
        if is_uri(path):
            import pyarrow.fs as pafs

            filesystem, inner = pafs.FileSystem.from_uri(path)
            raw: Any = filesystem.open_input_stream(inner, compression=None)
        else:
            raw = pa.OSFile(path, "rb")
        stream = pa.CompressedInputStream(raw, "zstd")
    except pa.ArrowException as exc:  # a missing file, an unknown filesystem: as a local open's OSError
        raise OSError(str(exc)) from exc
    with LineReader(_SmallReads(ArrowStream(stream)), raw) as lines:
        yield lines


def read_jsonl_zst(source: InputSource, settings: ReadConfig) -> Iterator[SourceRecord]:
    """One record per non-blank line, numbered by line, as `read.json_files.read_jsonl` reads them."""
    last_line = 0
    try:
        with zstd_lines(source.path or source.name) as handle:
            for line, raw in record_lines(handle):
                last_line = line
                yield parse_record(source.name, line, raw)
    except OSError as exc:
        # pyarrow says what broke: "Truncated compressed stream", "ZSTD decompress failed: ..."
        raise InputError(f"cannot read {quoted(source.name)} after line {last_line}: {one_line(exc)}") from exc


def count_jsonl_zst(source: InputSource, settings: ReadConfig) -> int:
    """The records `read_jsonl_zst` yields, its lines counted without parsing them (decompressed,
    not parsed); a file that breaks counts one more, the record that says so."""
    count = 0
    try:
        with zstd_lines(source.path or source.name) as handle:
            for _ in record_lines(handle):
                count += 1
    except OSError:
        count += 1
    return count
