"""Opening an input file, on the local disk or at a URI (`s3://`, `gs://`, `file://`...).

The local engine reads local paths; the Ray engine also reads URIs, through the filesystems
`pyarrow.fs` knows. Readers open their files here, so one reader serves both engines and a
file is numbered and decoded the same wherever it lies.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from trajectory_compressor.read.gzip_members import GzipMembers

READ_CHUNK_BYTES = 1 << 20  # a pyarrow stream is read a megabyte at a time


def is_uri(path: str) -> bool:
    """A URI (`s3://`, `gs://`, `hdfs://`, `file://`...), read and written through pyarrow.fs."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isidentifier()


def open_lines(path: str) -> io.BufferedIOBase | LineReader:
    """A binary stream of the file's lines (with their ends), gunzipped by suffix (in any case:
    `.GZ` too) as `read.gzip_members` reads gzip.

    A URI's stream comes from its pyarrow filesystem, its errors raised as `OSError` as a local
    file's are.
    """
    gzipped = path.lower().endswith(".gz")
    if not is_uri(path):
        return LineReader(GzipMembers(open(path, "rb"))) if gzipped else open(path, "rb")
    import pyarrow.fs as pafs

    filesystem, inner = pafs.FileSystem.from_uri(path)
    stream = ArrowStream(filesystem.open_input_stream(inner, compression=None))
    return LineReader(GzipMembers(stream) if gzipped else stream)


@contextmanager
def random_access(path: str) -> Iterator[Any]:
    """What pyarrow's file readers (Parquet) open: a local path as it is, or an open file at a URI."""
    if not is_uri(path):
        yield path
        return
    import pyarrow.fs as pafs

    filesystem, inner = pafs.FileSystem.from_uri(path)
    with filesystem.open_input_file(inner) as handle:
        yield handle


class ArrowStream:
    """A pyarrow input stream whose errors are `OSError`s, as a local file's are, so a reader
    catches one set of errors wherever its file lies."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def read(self, size: int = -1) -> bytes:
        import pyarrow as pa

        try:
            return bytes(self.stream.read() if size is None or size < 0 else self.stream.read(size))
        except pa.ArrowException as exc:
            raise OSError(str(exc)) from exc

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """As the stream seeks (a pyarrow input stream cannot: `GzipFile` asks only to rewind, never done here)."""
        import pyarrow as pa

        try:
            return int(self.stream.seek(offset, whence))
        except pa.ArrowException as exc:
            raise OSError(str(exc)) from exc

    def close(self) -> None:
        self.stream.close()


class LineReader:
    """Lines (with their ends) of a stream, read `READ_CHUNK_BYTES` at a time (pyarrow's streams
    do not iterate by line); closing it closes `stream` and then `also_close`.

    The stream is read once more after its first empty read: a stream that found something
    wrong past its data (`GzipMembers`: bytes after its last member) raises there, once every
    line before it was yielded.
    """

    def __init__(self, stream: Any, *also_close: Any) -> None:
        self.stream = stream
        self.also_close = also_close

    def __iter__(self) -> Iterator[bytes]:
        """Each chunk is searched once and a line's pieces joined once: joining every chunk to
        the line read so far made a line over many chunks quadratic (a 64 MB line of a
        `.jsonl.zst`, read 64 KiB at a time, took 26 s)."""
        pending: list[bytes] = []  # the pieces of a line not ended yet
        while chunk := self.stream.read(READ_CHUNK_BYTES):
            lines = chunk.split(b"\n")
            if len(lines) == 1:
                pending.append(chunk)
                continue
            yield b"".join([*pending, lines[0], b"\n"])
            yield from (line + b"\n" for line in lines[1:-1])
            pending = [lines[-1]]
        if last := b"".join(pending):
            yield last
        self.stream.read(READ_CHUNK_BYTES)

    def __enter__(self) -> LineReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()
        for stream in self.also_close:
            stream.close()
