"""Parquet inputs: rows numbered across batches, JSON and Arrow-only types decoded, bad files named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.read.reader_fixtures import read_all
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.parquet import count_parquet
from trajectory_compressor.read.readers import iter_source
from trajectory_compressor.read.select import records_of
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig


def test_parquet_rows_stream_in_batches_with_row_numbers(tmp_path: Path) -> None:
    rows = [{"id": i, "conversations": [{"from": "human", "value": str(i)}]} for i in range(700)]
    path = tmp_path / "a.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=100)
    (source,) = expand_inputs([str(path)])
    got = read_all(source)
    assert [line for line, _ in got] == list(range(1, 701))
    assert [record for _, record in got] == rows


def test_parquet_json_columns_are_decoded(tmp_path: Path) -> None:
    table = pa.table({"meta": pa.array(['{"a": [1, "x"]}', None], type=pa.json_())})
    path = tmp_path / "j.parquet"
    pq.write_table(table, path)
    (source,) = expand_inputs([str(path)])
    assert [record for _, record in read_all(source)] == [{"meta": {"a": [1, "x"]}}, {"meta": None}]


def test_corrupt_parquet_raises_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"this is not parquet at all")
    (source,) = expand_inputs([str(path)])
    with pytest.raises(InputError, match=r"bad\.parquet"):
        list(iter_source(source))


def test_parquet_binary_decimal_and_time_columns_are_read_as_documented_json(tmp_path: Path) -> None:
    import datetime as dt
    from decimal import Decimal

    table = pa.table(
        {
            "id": ["a", "b"],
            "blob": pa.array([b"\x00\xff", None], pa.binary()),
            "price": pa.array([Decimal("12.30"), Decimal("-1")], pa.decimal128(6, 2)),
            "ts": pa.array([dt.datetime(2024, 5, 1, 12, 0, 0, 5), None], pa.timestamp("us", tz="UTC")),
            "day": pa.array([dt.date(2024, 5, 1)] * 2, pa.date32()),
            "took": pa.array([dt.timedelta(seconds=1.5)] * 2, pa.duration("ms")),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    (source,) = expand_inputs([str(tmp_path / "t.parquet")])
    records = [item.record for item in iter_source(source)]
    assert records[0] == {
        "id": "a",
        "blob": "AP8=",
        "price": "12.30",
        "ts": "2024-05-01T12:00:00.000005+00:00",
        "day": "2024-05-01",
        "took": 1.5,
    }
    assert records[1]["blob"] is None and records[1]["price"] == "-1.00"


def test_parquet_row_with_invalid_utf8_text_is_one_error_record(tmp_path: Path) -> None:
    text = pa.array([b"r0", b"\xff\xfe", b"r2"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"id": text, "n": [0, 1, 2]}), tmp_path / "t.parquet")
    items = list(iter_source(InputSource(name="t.parquet", kind="parquet", path=str(tmp_path / "t.parquet"))))
    assert [(item.line, item.record) for item in items] == [
        (1, {"id": "r0", "n": 0}),
        (2, None),
        (3, {"id": "r2", "n": 2}),
    ]
    assert items[1].error is not None and "utf-8" in items[1].error and not items[1].raw_is_json


@pytest.mark.parametrize(
    "column",
    [
        pa.array([0, -62135596800 * 1000 - 1, 1], pa.timestamp("ms")),  # 1 ms before year 1
        pa.array([0, 253402300800, 1], pa.timestamp("s", tz="UTC")),  # year 10000
        pa.array([0, 2**62, 1], pa.date64()),
        pa.array([0, 2**31 - 1, 1], pa.date32()),
        pa.array([0, 2**62, 1], pa.duration("s")),
    ],
    ids=["timestamp-before-year-1", "timestamp-year-10000", "date64", "date32", "duration"],
)
def test_parquet_row_with_a_value_python_cannot_hold_is_one_error_record(tmp_path: Path, column: Any) -> None:
    # Arrow holds dates far outside Python's years 1-9999 (and durations past timedelta's
    # range); converting one once raised OverflowError, an internal error that stopped the run.
    pq.write_table(pa.table({"t": column, "n": [0, 1, 2]}), tmp_path / "t.parquet")
    items = list(iter_source(InputSource(name="t.parquet", kind="parquet", path=str(tmp_path / "t.parquet"))))
    assert [(item.line, item.record is None) for item in items] == [(1, False), (2, True), (3, False)]
    assert items[1].error is not None and items[1].error.startswith("unreadable values: ")
    assert [items[0].record["n"], items[2].record["n"]] == [0, 2]


def test_count_is_the_footers_row_count_and_one_for_a_file_that_does_not_open(tmp_path: Path) -> None:
    pq.write_table(pa.table({"n": list(range(7))}), tmp_path / "a.parquet", row_group_size=3)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    for name, rows in (("a.parquet", 7), ("bad.parquet", 1)):
        source = InputSource(name=name, kind="parquet", path=str(tmp_path / name))
        assert count_parquet(source, ReadConfig()) == rows == len(list(records_of(source, ReadConfig())))
