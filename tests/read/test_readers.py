"""The table of file formats: what it claims, and that a format added to it is read everywhere."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
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
from trajectory_compressor.read.select import RowSelection
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.types import SourceRecord
from trajectory_compressor.write.paths import OutputPaths, mirrored_name, output_stem


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


def test_a_reader_is_given_the_run_s_read_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As datatrove's readers take `text_key`: what a run reads with reaches the format's reader."""
    seen: list[ReadConfig] = []

    def read(source: InputSource, settings: ReadConfig) -> Iterator[SourceRecord]:
        seen.append(settings)
        yield from LINES_FORMAT.read(source, settings)

    monkeypatch.setitem(FILE_FORMATS, "lines", dataclasses.replace(LINES_FORMAT, read=read))
    (tmp_path / "a.lines").write_text("x1\n")
    settings = ReadConfig(conversation_key="turns", format="openai")
    rows = list(RowSelection(expand_inputs([str(tmp_path / "a.lines")]), read=settings))
    assert [item.record for _, _, item in rows] == [{"id": "x1"}] and seen == [settings]


def test_output_names_come_from_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A format's files keep their names mirrored into an output folder, or take its `written_as`
    suffix; a dataset named like any format's file has its side files named by its stem."""
    monkeypatch.setitem(FILE_FORMATS, "lines", dataclasses.replace(LINES_FORMAT, written_as=".jsonl"))
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    for name in ("sub/a.lines", "b.json", "c.jsonl.gz", "d.parquet"):
        (root / name).write_text("")
    named = {str(mirrored_name(root / name, [root])) for name in ("sub/a.lines", "b.json", "c.jsonl.gz", "d.parquet")}
    assert named == {"sub/a.jsonl", "b.jsonl", "c.jsonl.gz", "d.parquet"}
    assert str(mirrored_name(tmp_path / "in" / "B.LINES", [])) == "B.jsonl"
    assert output_stem(Path("out/x.lines")) == "x" and output_stem(Path("out/x.ndjson.gz")) == "x"
    assert OutputPaths.beside(Path("out/x.lines")).metrics == Path("out/x.metrics.jsonl")
