"""JSON Lines and JSON arrays: numbered records, bad lines as error records, broken files named."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tests.conftest import write_jsonl
from tests.read.reader_fixtures import ROWS, read_all
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.json_files import count_jsonl
from trajectory_compressor.read.readers import iter_source
from trajectory_compressor.read.select import records_of
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig


def test_jsonl_lines_are_numbered_and_bad_lines_become_error_records(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n\n{not json\n" + json.dumps(ROWS[1]) + "\n")
    (source,) = expand_inputs([str(path)])
    items = list(iter_source(source))
    assert [(i.line, i.error is None) for i in items] == [(1, True), (3, False), (4, True)]
    assert items[1].raw == b"{not json"
    assert all(i.source == str(path) for i in items)


@pytest.mark.parametrize("name", ["a.jsonl.gz", "B.JSONL.GZ", "c.ndjson.Gz"])
def test_gzip_jsonl_is_read(tmp_path: Path, name: str) -> None:
    """Suffixes are matched whatever their case, decompression too (upper case was read as bytes)."""
    path = tmp_path / name
    with gzip.open(path, "wt") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in ROWS)
    (source,) = expand_inputs([str(path)])
    assert [record for _, record in read_all(source)] == ROWS


def test_truncated_gzip_raises_input_error_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl.gz"
    big_rows = [{"id": i, "text": os.urandom(2000).hex()} for i in range(50)]
    payload = gzip.compress("".join(json.dumps(r) + "\n" for r in big_rows).encode())
    path.write_bytes(payload[: len(payload) // 2])
    (source,) = expand_inputs([str(path)])
    seen: list[int] = []
    with pytest.raises(InputError) as info:
        for item in iter_source(source):
            seen.append(item.line)
    assert str(path) in str(info.value)
    assert seen, "rows before the cut are still delivered"
    assert f"after line {seen[-1]}" in str(info.value)


def test_json_array_records_are_numbered(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps(ROWS, indent=2))
    (source,) = expand_inputs([str(path)])
    assert source.kind == "json"
    assert read_all(source) == [(i + 1, row) for i, row in enumerate(ROWS)]


def test_json_single_object_is_one_record(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(ROWS[0], indent=2))
    (source,) = expand_inputs([str(path)])
    assert read_all(source) == [(1, ROWS[0])]


def test_broken_json_array_raises_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"a": 1},\n  {"b": ')
    (source,) = expand_inputs([str(path)])
    with pytest.raises(InputError, match=r"bad\.json"):
        list(iter_source(source))


def test_bad_jsonl_lines_become_records_with_errors_and_valid_json_is_marked(tmp_path: Path) -> None:
    good = json.dumps(ROWS[0])
    deep = '{"id": "deep", "x": ' + "[" * 3000 + "]" * 3000 + "}"
    lines = [
        good,
        '{"id": "a\\ud800b", "conversations": []}',
        deep,
        "null",
        "[1, 2",
        "[" * 3000 + "]" * 2999,
        good,
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    items = list(iter_source(InputSource(name=str(path), kind="jsonl", path=str(path))))
    assert [item.line for item in items] == list(range(1, 8))
    assert [(item.error is not None, item.raw_is_json) for item in items] == [
        (False, False),
        (True, True),  # lone surrogate: valid JSON, not writable as UTF-8 text
        (True, True),  # deeper than the parsers go, but valid JSON
        (False, False),  # null: parsed (None); the record check rejects it
        (True, False),
        (True, False),  # deep and unbalanced: not JSON
        (False, False),
    ]
    assert "surrogate" in items[1].error and "nested deeper" in items[2].error
    assert [item.raw for item in items] == [line.encode() for line in lines]


def test_bom_is_stripped_from_every_input(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    first = write_jsonl(tmp_path / "a.jsonl", ROWS[:1])
    second = tmp_path / "b.jsonl"
    second.write_bytes(bom + json.dumps(ROWS[1]).encode() + b"\r\n")
    as_json = tmp_path / "c.json"
    as_json.write_bytes(bom + json.dumps(ROWS[2:4]).encode())
    items = [item for source in expand_inputs([str(first), str(second), str(as_json)]) for item in iter_source(source)]
    assert [item.record for item in items] == ROWS[:4]
    assert [item.error for item in items] == [None] * 4
    assert items[1].raw == json.dumps(ROWS[1]).encode()  # the bytes written back carry no BOM


def test_json_array_with_a_deep_or_surrogate_element_keeps_the_others(tmp_path: Path) -> None:
    deep = "[" * 3000 + "]" * 3000
    path = tmp_path / "a.json"
    path.write_text(
        "[\n"
        + json.dumps(ROWS[0])
        + ",\n  null,\n"
        + deep
        + ",\n"
        + '{"id": "x\\udc00"}'
        + ",\n"
        + json.dumps(ROWS[1])
        + "\n]"
    )
    (source,) = expand_inputs([str(path)])
    items = list(iter_source(source))
    assert [item.line for item in items] == [1, 2, 3, 4, 5]
    assert [item.record for item in items] == [ROWS[0], None, None, {"id": "x\udc00"}, ROWS[1]]
    assert [item.error is not None for item in items] == [False, False, True, True, False]
    assert items[2].raw_is_json and items[2].raw == deep.encode()
    assert items[3].raw_is_json and items[3].raw == b'{"id": "x\\udc00"}'


def test_a_line_with_an_integer_python_will_not_convert_is_valid_json_kept_as_its_bytes(tmp_path: Path) -> None:
    # 5000 digits: past Python's 4300-digit guard. It was "invalid JSON" (with advice to call
    # sys.set_int_max_str_digits), rejected and left out of the dataset: a valid line lost.
    huge = b'{"id": "h", "n": ' + b"9" * 5000 + b"}"
    not_json = b'{"id": "b", "n": ' + b"9" * 5000 + b",}"
    path = tmp_path / "a.jsonl"
    path.write_bytes(json.dumps(ROWS[0]).encode() + b"\n" + huge + b"\n" + not_json + b"\n")
    items = list(iter_source(*expand_inputs([str(path)])))
    assert [item.record for item in items] == [ROWS[0], None, None]
    assert items[1].raw_is_json and items[1].raw == huge
    assert items[1].error == "an integer of more than 4300 digits"
    assert not items[2].raw_is_json and items[2].error is not None and items[2].error.startswith("invalid JSON")


def test_count_is_the_number_of_records_read_and_one_more_for_a_broken_file(tmp_path: Path) -> None:
    whole = write_jsonl(tmp_path / "a.jsonl", [ROWS[0], "", "{not json", ROWS[1]])
    cut = tmp_path / "cut.jsonl.gz"
    payload = gzip.compress(
        "".join(json.dumps({"id": i, "text": os.urandom(2000).hex()}) + "\n" for i in range(50)).encode()
    )
    cut.write_bytes(payload[: len(payload) // 2])
    for path in (whole, cut):
        source = InputSource(name=str(path), kind="jsonl", path=str(path))
        assert count_jsonl(source, ReadConfig()) == len(list(records_of(source, ReadConfig())))
    assert count_jsonl(InputSource(name=str(whole), kind="jsonl", path=str(whole)), ReadConfig()) == 3
