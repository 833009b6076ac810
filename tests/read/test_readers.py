"""The table of file formats: what it claims, and that a format added to it is read everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.read.reader_fixtures import LINES_FORMAT
from trajectory_compressor.read import readers
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.readers import (
    FILE_FORMATS,
    file_kind,
    format_of_file,
    iter_source,
    supported_suffixes,
)
from trajectory_compressor.read.sources import InputError, InputSource


def test_every_suffix_belongs_to_one_format() -> None:
    suffixes = supported_suffixes()
    assert len(suffixes) == len(set(suffixes))
    for entry in FILE_FORMATS.values():
        for suffix in entry.suffixes:
            assert format_of_file(f"dir/name{suffix}") is entry
            assert format_of_file(f"dir/NAME{suffix.upper()}") is entry
    assert format_of_file("notes.txt") is None
    assert ".json" in suffixes and ".json" not in supported_suffixes(at_uri=True)


def test_json_suffix_is_told_apart_by_its_first_line(tmp_path: Path) -> None:
    (tmp_path / "lines.json").write_text('{"id": 1}\n{"id": 2}\n')
    (tmp_path / "array.json").write_text('[\n  {"id": 1}\n]\n')
    assert file_kind(str(tmp_path / "lines.json")) == "jsonl"
    assert file_kind(str(tmp_path / "array.json")) == "json"
    assert file_kind(str(tmp_path / "x.parquet")) == "parquet"  # by suffix alone: not opened


def test_unknown_kind_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown input kind 'csv'"):
        list(iter_source(InputSource(name="a.csv", kind="csv", path="a.csv")))


def test_a_format_added_to_the_table_is_found_and_read_by_the_local_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(FILE_FORMATS, "lines", LINES_FORMAT)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.lines").write_text("x1\n\nx2\n")
    (tmp_path / "in" / "b.txt").write_text("not an input\n")
    (source,) = expand_inputs([str(tmp_path / "in")])
    assert source.kind == "lines"
    assert [(item.line, item.record) for item in iter_source(source)] == [(1, {"id": "x1"}), (2, {"id": "x2"})]
    with pytest.raises(InputError, match=r"\.lines"):  # the message lists it among the supported suffixes
        expand_inputs([str(tmp_path / "in" / "b.txt")])
    assert readers.supported_suffixes()[-1] == ".lines"
