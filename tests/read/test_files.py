"""Opening inputs on the local disk and at URIs: the same lines and bytes either way, errors as OSError."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajectory_compressor.read.files import ArrowStream, LineReader, is_uri, open_lines, random_access

TEXT = b'{"id": 1}\r\n\n{"id": 2}\n' + b"x" * 3_000_000 + b"\nlast line without an end"


@pytest.mark.parametrize(
    ("name", "uri"),
    [("s3://bucket/runs/", True), ("file:///tmp/a.jsonl", True), ("/tmp/a.jsonl", False), ("C:/x", False)],
)
def test_is_uri(name: str, uri: bool) -> None:
    assert is_uri(name) is uri


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_lines_at_a_uri_are_the_local_files_lines(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"a{suffix}"
    path.write_bytes(gzip.compress(TEXT) if suffix.endswith(".gz") else TEXT)
    with open_lines(str(path)) as handle:
        local = list(handle)
    with open_lines(f"file://{path}") as handle:
        remote = list(handle)
    assert remote == local and b"".join(remote) == TEXT  # lines cut across read chunks are whole


def test_random_access_is_the_path_itself_or_an_open_file_at_a_uri(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"n": [1, 2, 3]}), path)
    with random_access(str(path)) as target:
        assert target == str(path)
    with random_access(f"file://{path}") as target:
        assert pq.ParquetFile(target).metadata.num_rows == 3
    assert target.closed


class BrokenStream:
    """A pyarrow stream that fails after its first chunk, as a dropped connection does."""

    def __init__(self) -> None:
        self.reads = 0
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads > 1:
            raise pa.ArrowInvalid("connection reset")
        return b"one\ntwo"

    def close(self) -> None:
        self.closed = True


def test_a_pyarrow_error_mid_stream_is_an_os_error_and_the_stream_is_closed() -> None:
    stream = BrokenStream()
    lines: list[bytes] = []
    with pytest.raises(OSError, match="connection reset"), LineReader(ArrowStream(stream)) as reader:
        lines.extend(reader)
    assert lines == [b"one\n"] and stream.closed


class SmallChunks:
    """A stream of `data` read `size` bytes at a time, as the zstd reader reads (64 KiB)."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.position = data, size, 0

    def read(self, size: int = -1) -> bytes:
        chunk = self.data[self.position : self.position + self.size]
        self.position += len(chunk)
        return chunk

    def close(self) -> None:
        pass


@pytest.mark.timeout(120)
def test_a_line_over_many_chunks_is_read_in_linear_time() -> None:
    """A 64 MB line read 1 KiB at a time (65,536 chunks): each chunk was joined to the line read
    so far and the whole split again, some 2 TB of copying (a 64 MB line of a `.jsonl.zst`, read
    64 KiB at a time, took 26 s). Searched once and joined once, it takes well under a second;
    the timeout is a hang guard thousands of times that, not a speed limit."""
    line = b"x" * (64 << 20)
    data = b'{"id": 1}\n' + line + b"\nend"
    with LineReader(SmallChunks(data, 1024)) as reader:
        lines = list(reader)
    assert lines == [b'{"id": 1}\n', line + b"\n", b"end"]
