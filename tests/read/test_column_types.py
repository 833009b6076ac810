"""The Arrow types of columnar inputs, read from their schemas for outputs to restore."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from trajectory_compressor.read.column_types import contains_json_type, json_decoder, source_column_types
from trajectory_compressor.read.sources import InputSource


def parquet_source(path: Path, table: pa.Table) -> InputSource:
    pq.write_table(table, path)
    return InputSource(name=str(path), kind="parquet", path=str(path))


def test_column_types_of_every_input_except_json_and_conflicting_columns(tmp_path: Path) -> None:
    first = parquet_source(
        tmp_path / "a.parquet",
        pa.table(
            {
                "n": pa.array([1], pa.int32()),
                "blob": pa.array([b"x"], pa.binary()),
                "meta": pa.array(['{"a": 1}'], pa.json_()),
                "score": pa.array([1.5], pa.float32()),
            }
        ),
    )
    second = parquet_source(
        tmp_path / "b.parquet", pa.table({"n": pa.array([2], pa.int32()), "score": pa.array([2.5], pa.float64())})
    )
    jsonl = InputSource(name="c.jsonl", kind="jsonl", path=str(tmp_path / "c.jsonl"))
    missing = InputSource(name="gone.parquet", kind="parquet", path=str(tmp_path / "gone.parquet"))
    types = source_column_types([first, second, jsonl, missing])
    assert types.get("n") == pa.int32() and types.get("blob") == pa.binary()
    assert "meta" not in types  # JSON text: decoded to objects when read, inferred again when written
    assert "score" not in types  # two inputs disagree: inferred from the values


def test_json_fields_nested_in_structs_and_lists_are_found_and_decoded() -> None:
    nested = pa.struct([("tags", pa.list_(pa.json_())), ("n", pa.int64())])
    assert contains_json_type(nested) and not contains_json_type(pa.struct([("n", pa.int64())]))
    decode = json_decoder(nested)
    assert decode({"tags": ['{"a": [1]}', None], "n": 3}) == {"tags": [{"a": [1]}, None], "n": 3}
    assert decode(None) is None
