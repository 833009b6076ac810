"""gzip inputs read member after member: whole data before bytes that are not gzip is kept."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.read.reader_fixtures import ROWS
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.files import open_lines
from trajectory_compressor.read.gzip_members import BytesAfterGzip, GzipMembers
from trajectory_compressor.read.json_files import count_jsonl
from trajectory_compressor.read.readers import iter_source
from trajectory_compressor.read.sources import InputError
from trajectory_compressor.settings import ReadConfig


def _all_of(members: GzipMembers) -> bytes:
    chunks = []
    while chunk := members.read(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.binary(max_size=3000), min_size=1, max_size=5),
    padding=st.lists(st.integers(min_value=0, max_value=600), min_size=5, max_size=5),
)
def test_members_and_zero_padding_read_as_gzip_reads_them(parts: list[bytes], padding: list[int]) -> None:
    """Several members (what `cat a.gz b.gz` makes), each followed by zero padding (a tape
    block's fill, which `gzip` skips), decompress to what `gzip` decompresses them to."""
    packed = b"".join(gzip.compress(part) + b"\0" * pad for part, pad in zip(parts, padding, strict=False))
    assert _all_of(GzipMembers(io.BytesIO(packed))) == gzip.decompress(packed) == b"".join(parts)


def test_a_highly_compressed_member_is_inflated_in_steps() -> None:
    """64 MB of one byte packs into ~64 KB: each read returns at most a megabyte, not all of it."""
    members = GzipMembers(io.BytesIO(gzip.compress(b"a" * (64 << 20))))
    sizes = []
    while chunk := members.read(1 << 16):
        sizes.append(len(chunk))
    assert sum(sizes) == 64 << 20 and max(sizes) <= 1 << 20


def test_bytes_after_the_last_member_end_the_data_then_are_named() -> None:
    members = GzipMembers(io.BytesIO(gzip.compress(b"whole") + b"not gzip"))
    assert members.read() == b"whole"
    assert members.read() == b"", "the data's end first, so a line without an end is still whole"
    with pytest.raises(BytesAfterGzip, match="8 bytes after the end of its gzip data are not gzip"):
        members.read()
    assert members.read() == b""


@pytest.mark.parametrize(
    ("packed", "error"),
    [
        (gzip.compress(b"x" * 1000, mtime=0)[:-12], EOFError),  # cut inside the member
        (b"plain text, named .gz", gzip.BadGzipFile),
        (gzip.compress(b"x", mtime=0)[:10] + b"\xff" * 20, zlib.error),  # a header, then no deflate data
    ],
    ids=["cut", "not gzip", "corrupt"],  # stable: each xdist worker collects the same names
)
def test_cut_or_corrupt_data_raises_as_gzip_raises(packed: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        _all_of(GzipMembers(io.BytesIO(packed)))


def test_the_last_record_before_an_appended_line_is_read_and_the_line_is_one_error(tmp_path: Path) -> None:
    """A record on the last line of the gzip data, with no line end, then a plain line
    appended (`echo '{...}' >> runs.jsonl.gz`): `gzip.GzipFile` lost that record with the
    error; every record of the gzip data is read, and the appended bytes are one error after
    them, counted as `count_jsonl` counts the file."""
    path = tmp_path / "runs.jsonl.gz"
    data = "\n".join(json.dumps(row) for row in ROWS[:3]).encode()
    path.write_bytes(gzip.compress(data) + json.dumps(ROWS[3]).encode() + b"\n")
    (source,) = expand_inputs([str(path)])
    read: list[object] = []
    with pytest.raises(InputError) as info:
        read.extend(item.record for item in iter_source(source))
    assert read == ROWS[:3]
    assert "after line 3" in str(info.value) and "bytes after the end of its gzip data" in str(info.value)
    assert "truncated" not in str(info.value), "the data before is whole, not cut"
    assert count_jsonl(source, ReadConfig()) == 4


def test_an_empty_gz_file_holds_no_lines(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl.gz"
    path.write_bytes(b"")
    with open_lines(str(path)) as handle:
        assert list(handle) == []


def test_a_file_cut_anywhere_in_its_last_member_keeps_every_whole_line_before_the_cut(tmp_path: Path) -> None:
    """Cut at every byte of the last member (header with FNAME/FEXTRA/FCOMMENT/FHCRC, data,
    trailer): the records are exactly the lines decompressible whole before the cut, never a
    partial line, and the error names the last of them; `count_jsonl` counts them and the error."""
    lines = [json.dumps(row).encode() for row in ROWS[:4]]
    first = gzip.compress(b"\n".join(lines[:2]) + b"\n")
    flags = 0x02 | 0x04 | 0x08 | 0x10  # FHCRC, FEXTRA, FNAME, FCOMMENT
    header = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\xff" + b"\x04\0AB\0\0" + b"x.jsonl\0" + b"note\0"
    header += (zlib.crc32(header) & 0xFFFF).to_bytes(2, "little")
    data = b"\n".join(lines[2:])  # the last line without its end
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    trailer = zlib.crc32(data).to_bytes(4, "little") + len(data).to_bytes(4, "little")
    packed = first + header + deflate.compress(data) + deflate.flush() + trailer
    assert gzip.decompress(packed) == b"\n".join(lines) and len(packed) - len(first) > 50
    path = tmp_path / "cut.jsonl.gz"
    for cut in range(len(first), len(packed)):
        path.write_bytes(packed[:cut])
        (source,) = expand_inputs([str(path)])
        inflate, whole = zlib.decompressobj(31), gzip.decompress(first)
        with contextlib.suppress(zlib.error):
            whole += inflate.decompress(packed[len(first) : cut])
        expected = [json.loads(line) for line in whole.split(b"\n")[:-1]]
        read: list[object] = []
        with pytest.raises(InputError) if cut > len(first) else contextlib.nullcontext() as info:
            read.extend(item.record for item in iter_source(source))
        assert read == expected, cut
        if info is not None:
            assert f"after line {len(expected)}:" in str(info.value), cut
        assert count_jsonl(source, ReadConfig()) == len(expected) + (cut > len(first)), cut


class CountedReads(io.BytesIO):
    """A stream that counts the bytes read from it (what a read task downloads from a bucket)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data


def test_many_bytes_after_the_gzip_data_are_named_without_reading_them_all() -> None:
    """A plain file concatenated onto a gzip one (`cat a.jsonl.gz b.jsonl > c.jsonl.gz`): its
    bytes were all read, by the count and again by the read (on a bucket, downloaded twice),
    only to be counted for the message, where `gzip.GzipFile` stopped at their start."""
    appended = b'{"a": 1}\n' * (64 << 20 >> 3)  # 72 MiB of plain lines
    stream = CountedReads(gzip.compress(b"whole\n") + appended)
    members = GzipMembers(stream)
    assert members.read() == b"whole\n" and members.read() == b""
    with pytest.raises(BytesAfterGzip, match=r"over 1,048,576 bytes after the end of its gzip data are not gzip"):
        members.read()
    assert stream.bytes_read < 4 << 20
    few = GzipMembers(io.BytesIO(gzip.compress(b"whole\n") + b"x" * (1 << 20)))
    assert few.read() == b"whole\n" and few.read() == b""
    with pytest.raises(BytesAfterGzip, match=r"^1,048,576 bytes after"):
        few.read()
