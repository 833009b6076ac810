"""Zstandard-compressed JSON Lines (`read.jsonl_zst`): read as its plain `.jsonl` is, line for line and
byte for byte, in one frame or many, locally and at a `file://` URI; a broken file says where."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.read.reader_fixtures import ROWS, read_all
from trajectory_compressor.messages import quoted
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.jsonl_zst import count_jsonl_zst
from trajectory_compressor.read.readers import file_kind, iter_source
from trajectory_compressor.read.select import records_of
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.write.paths import mirrored_name, output_stem

LINES = b"".join(
    [
        b"\xef\xbb\xbf" + b'{"id": "r0", "conversations": []}\n',  # a BOM, dropped as .jsonl drops it
        b"\n",  # blank lines are skipped, and numbered
        b'{"id": "r1",   "spacing": "kept in raw"}\r\n',
        b"{not json\n",
        b'{"id": "r2"}',  # no final newline
    ]
)


def zstd(data: bytes, frames: int = 1) -> bytes:
    """`data` compressed by pyarrow's zstd codec, in `frames` concatenated frames (as pzstd writes)."""
    import pyarrow as pa

    cut = [len(data) * part // frames for part in range(frames + 1)]
    out = b""
    for start, end in itertools.pairwise(cut):
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as stream:
            stream.write(data[start:end])
        out += sink.getvalue().to_pybytes()
    return out


def _items(path: Path) -> list[tuple[int, object, bytes | None, str | None]]:
    (source,) = expand_inputs([str(path)])
    return [(item.line, item.record, item.raw, item.error) for item in iter_source(source)]


@pytest.mark.parametrize("frames", [1, 3])
def test_a_zst_file_is_read_as_its_plain_jsonl_line_for_line(tmp_path: Path, frames: int) -> None:
    (tmp_path / "plain.jsonl").write_bytes(LINES)
    (tmp_path / "packed.jsonl.zst").write_bytes(zstd(LINES, frames))
    (tmp_path / "other.ndjson.zst").write_bytes(zstd(LINES, frames))
    assert file_kind(str(tmp_path / "packed.jsonl.zst")) == file_kind(str(tmp_path / "X.NDJSON.ZST")) == "jsonl.zst"
    plain = _items(tmp_path / "plain.jsonl")
    assert _items(tmp_path / "packed.jsonl.zst") == _items(tmp_path / "other.ndjson.zst") == plain
    assert [line for line, *_ in plain] == [1, 3, 4, 5] and plain[2][3] is not None  # line 4 does not parse
    assert plain[1][2] == b'{"id": "r1",   "spacing": "kept in raw"}'  # its very bytes, written back unchanged
    (source,) = expand_inputs([str(tmp_path / "packed.jsonl.zst")])
    assert count_jsonl_zst(source, ReadConfig()) == 4


def test_a_file_at_a_file_uri_is_read_as_the_local_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl.zst"
    path.write_bytes(zstd(b"".join(b'{"id": "%d"}\n' % n for n in range(3000)), frames=2))  # > one 1 MB read
    here = InputSource(name=str(path), kind="jsonl.zst", path=str(path))
    there = InputSource(name=f"file://{path}", kind="jsonl.zst", path=f"file://{path}")
    assert [i.raw for i in iter_source(there)] == [i.raw for i in iter_source(here)]
    assert count_jsonl_zst(there, ReadConfig()) == count_jsonl_zst(here, ReadConfig()) == 3000


@pytest.mark.skipif(shutil.which("zstd") is None, reason="the zstd command is not installed")
def test_a_file_the_zstd_command_wrote_with_a_checksum_and_a_long_window(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b"".join(b'{"id": "r%d", "pad": "%s"}\n' % (n, b"x" * (n % 97)) for n in range(5000)))
    packed = tmp_path / "packed.jsonl.zst"
    subprocess.run(["zstd", "-q", "-19", "--check", "--long=27", str(plain), "-o", str(packed)], check=True)
    assert _items(packed) == _items(plain)


def test_a_truncated_or_corrupt_file_keeps_what_was_read_and_says_where_it_broke(tmp_path: Path) -> None:
    data = zstd(b"".join(b'{"id": "r%d", "pad": "%s"}\n' % (n, b"y" * 200) for n in range(2000)), frames=4)
    (tmp_path / "cut.jsonl.zst").write_bytes(data[: len(data) - 50])
    (tmp_path / "junk.jsonl.zst").write_bytes(b"not zstd at all\n" * 8)
    (cut,) = expand_inputs([str(tmp_path / "cut.jsonl.zst")])
    items = list(records_of(cut, ReadConfig()))
    *read, last = items
    assert 1000 < len(read) < 2000 and all(item.error is None for item in read)
    assert last.line == len(read) + 1 and last.error is not None
    assert last.error.startswith(f"unreadable from here on: cannot read {quoted(cut.name)} after line {len(read)}: ")
    assert "Truncated" in last.error and count_jsonl_zst(cut, ReadConfig()) == len(items)
    (junk,) = expand_inputs([str(tmp_path / "junk.jsonl.zst")])
    with pytest.raises(InputError, match=r"after line 0: .*ZSTD decompress failed"):
        list(iter_source(junk))


def test_a_folder_of_zst_files_is_walked_and_mirrored_as_jsonl(tmp_path: Path) -> None:
    rows = b"".join(b'{"id": "%s"}\n' % row["id"].encode() for row in ROWS)
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "a.jsonl.zst").write_bytes(zstd(rows))
    (tmp_path / "in" / "sub" / "b.ndjson.zst").write_bytes(zstd(rows))
    (tmp_path / "in" / "notes.zst").write_bytes(zstd(b"not an input"))
    sources = expand_inputs([str(tmp_path / "in")])
    assert [(Path(s.name).name, s.kind) for s in sources] == [
        ("a.jsonl.zst", "jsonl.zst"),
        ("b.ndjson.zst", "jsonl.zst"),
    ]
    assert [len(read_all(source)) for source in sources] == [len(ROWS)] * 2
    roots = [tmp_path / "in"]
    assert [str(mirrored_name(Path(s.name), roots)) for s in sources] == ["a.jsonl", "sub/b.jsonl"]
    assert output_stem(Path("x.jsonl.zst")) == "x"  # with --output-format, its side files are x.*
