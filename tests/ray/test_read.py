"""The Ray engine lists, counts and reads input files through the local engine's table of formats."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.read.reader_fixtures import LINES_FORMAT
from trajectory_compressor.ray.inputs import list_inputs
from trajectory_compressor.ray.read import count_records
from trajectory_compressor.read.readers import FILE_FORMATS
from trajectory_compressor.read.select import records_of
from trajectory_compressor.settings import ReadConfig, RunConfig

pytestmark = pytest.mark.ray


def test_a_format_added_to_the_table_is_listed_counted_and_read_at_uris(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.lines").write_text("x1\nx2\nx3\n")
    (tmp_path / "b.txt").write_text("not an input\n")
    counted: list[str] = []
    counter = LINES_FORMAT.count
    assert counter is not None
    counting = dataclasses.replace(
        LINES_FORMAT, count=lambda source, read: counted.append(source.name) or counter(source, read)
    )
    monkeypatch.setitem(FILE_FORMATS, "lines", counting)
    (source,) = list_inputs([f"file://{tmp_path}"], RunConfig())
    assert (source.name, source.kind) == (f"file://{tmp_path}/a.lines", "lines")
    assert count_records(source, ReadConfig()) == 3 and counted == [source.name]  # its own count, not a read
    assert [item.record for item in records_of(source, ReadConfig())] == [{"id": "x1"}, {"id": "x2"}, {"id": "x3"}]


def test_files_at_uris_are_counted_and_read_as_local_files(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "conversations": []} for i in range(5)]
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows[:2]) + "{not json\n")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "c.parquet", row_group_size=2)
    (tmp_path / "d.parquet").write_bytes(b"not parquet")
    (tmp_path / "e.json").write_text(json.dumps(rows))  # JSON arrays: local files only
    local = list_inputs([str(tmp_path)], RunConfig())
    remote = list_inputs([f"file://{tmp_path}"], RunConfig())
    assert [Path(s.name).name for s in local] == ["a.jsonl.gz", "b.jsonl", "c.parquet", "d.parquet", "e.json"]
    assert [s.name for s in remote] == [f"file://{tmp_path}/{Path(s.name).name}" for s in local[:4]]
    for here, there in zip(local, remote, strict=False):
        read_here = [(i.line, i.record, i.raw, i.error) for i in records_of(here, ReadConfig())]
        read_there = [(i.line, i.record, i.raw, i.error) for i in records_of(there, ReadConfig())]
        assert count_records(here, ReadConfig()) == count_records(there, ReadConfig()) == len(read_here)
        if here.kind == "parquet" and here.name.endswith("d.parquet"):  # the error names the file as given
            assert len(read_there) == 1 and "unreadable from here on" in str(read_there[0][3])
            continue
        assert read_there == read_here
