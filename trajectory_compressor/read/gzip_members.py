"""A gzip file read member after member, so that bytes after its data cost no record before them.

`gzip.GzipFile` raises `BadGzipFile` when what follows a member is not another member (a plain
line appended to a `.jsonl.gz`, junk after a download): the error surfaces inside a `readline`,
which drops the line it was reading, so the file's last whole record was lost and reported as
unreadable, though the `gzip` tool reads it ("decompression OK, trailing garbage ignored").
Here the data ends at the last whole member (zero padding skipped, as `gzip` skips it), and
what follows is named on the read after that end (`read.files.LineReader` makes it), once every
line before it was delivered. A member cut short still raises `EOFError` and corrupt data
`zlib.error`, as `gzip` raises them.
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any

GZIP_MAGIC = b"\x1f\x8b"
_READ_BYTES = 1 << 16  # compressed bytes read at a time
_MAX_OUTPUT = 1 << 20  # decompressed bytes returned at most per read: a bomb is inflated in steps
_NAMED_AFTER_END = 1 << 20  # bytes after the data counted for the message at most


class BytesAfterGzip(gzip.BadGzipFile):
    """Bytes after a gzip file's last member that begin no member: the data before them is whole."""


class GzipMembers:
    """The decompressed bytes of a binary stream of gzip members, read as `read(size)` reads."""

    def __init__(self, compressed: Any) -> None:
        self.compressed = compressed
        self._inflate: Any = None  # the member being read; None between members
        self._input = b""  # compressed bytes read and not yet given to `_inflate`
        self._members = 0
        self._ended = False
        self._after_end: BytesAfterGzip | None = None  # raised on the read after the end
        self._end_read = False

    def read(self, size: int = -1) -> bytes:
        """Up to `_MAX_OUTPUT` bytes (whatever `size`: callers read in chunks), b"" at the end."""
        while not self._ended:
            if self._inflate is None:
                self._start_member()
                continue
            if output := self._inflate_some():
                return output
        if self._after_end is not None and self._end_read:
            error, self._after_end = self._after_end, None
            raise error
        self._end_read = True
        return b""

    def close(self) -> None:
        self.compressed.close()

    def _inflate_some(self) -> bytes:
        if not self._input:
            self._input = self.compressed.read(_READ_BYTES)
            if not self._input:
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")
        output = self._inflate.decompress(self._input, _MAX_OUTPUT)
        if self._inflate.eof:
            self._input, self._inflate = self._inflate.unused_data, None
        else:
            self._input = self._inflate.unconsumed_tail
        return bytes(output)

    def _start_member(self) -> None:
        """Begin the next member, or end: at the stream's end, or at bytes that begin no member."""
        while True:
            if self._members:  # zero padding after a member, as `gzip` allows it
                self._input = self._input.lstrip(b"\0")
            if len(self._input) >= len(GZIP_MAGIC):
                break
            more = self.compressed.read(_READ_BYTES)
            if not more:
                break
            self._input += more
        if not self._input:
            self._ended = True
        elif not self._input.startswith(GZIP_MAGIC):
            self._ended = True
            if not self._members:
                raise gzip.BadGzipFile(f"Not a gzipped file ({self._input[:2]!r})")
            self._after_end = BytesAfterGzip(
                f"{self._bytes_left()} bytes after the end of its gzip data are not gzip (appended to the file?)"
            )
        else:
            self._inflate = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer, checked
            self._members += 1

    def _bytes_left(self) -> str:
        """How many bytes follow the data, counted up to `_NAMED_AFTER_END`: a plain file concatenated
        onto a gzip one was read whole only to be counted (on a bucket, downloaded by the count and
        again by the read), where `gzip.GzipFile` stopped at its start."""
        left = len(self._input)
        self._input = b""
        while left <= _NAMED_AFTER_END:
            more = self.compressed.read(_READ_BYTES)
            if not more:
                return f"{left:,}"
            left += len(more)
        return f"over {_NAMED_AFTER_END:,}"
