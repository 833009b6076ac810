"""Parquet files, streamed by record batches; the record number is the 1-based row index.

Binary, decimal and temporal values become JSON as `read.arrow_values` describes, and columns
written as Arrow JSON text (`write.converters` does, for columns of mixed types) are decoded
back into objects, so a Parquet round trip loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.column_types import contains_json_type, json_decoder
from trajectory_compressor.read.files import random_access
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.types import SourceRecord, one_line

_UNCONVERTIBLE = (UnicodeDecodeError, ValueError, OverflowError)  # what `to_pylist` raises for one bad value
PARQUET_BATCH_ROWS = 256  # trajectories are large (tens of KB each): keep a batch to a few MB


def read_parquet(source: InputSource, settings: ReadConfig) -> Iterator[SourceRecord]:
    """Rows of a parquet file (local, or at a URI), a record batch at a time, JSON-typed columns decoded back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trajectory_compressor.read.arrow_values import special_columns, to_json

    name = source.name
    with ExitStack() as opened:
        try:
            parquet_file = pq.ParquetFile(opened.enter_context(random_access(source.path or name)))
            opened.callback(parquet_file.close)
            schema = parquet_file.schema_arrow
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"cannot open parquet file {quoted(name)}: {one_line(exc)}") from exc
        json_fields = [field.name for field in schema if contains_json_type(field.type)]
        decoders = {column: json_decoder(schema.field(column).type) for column in json_fields}
        encoded = [column for column in special_columns(schema) if column not in decoders]
        number = 0
        try:
            for batch in parquet_file.iter_batches(batch_size=PARQUET_BATCH_ROWS):
                for row in _batch_rows(batch):
                    number += 1
                    if isinstance(row, str):  # this row's values do not convert (invalid UTF-8 text)
                        yield SourceRecord(source=name, line=number, error=row)
                        continue
                    for column, decode in decoders.items():
                        row[column] = decode(row[column])
                    for column in encoded:
                        row[column] = to_json(row[column])
                    yield SourceRecord(source=name, line=number, record=row)
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"cannot read parquet file {quoted(name)} after row {number}: {one_line(exc)}") from exc


def count_parquet(source: InputSource, settings: ReadConfig) -> int:
    """The rows `read_parquet` yields, from the file's footer; a file that cannot be opened
    counts one, the record that says so (`read.select.records_of`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with random_access(source.path or source.name) as target, pq.ParquetFile(target) as parquet_file:
            return int(parquet_file.metadata.num_rows)
    except (OSError, pa.ArrowException):
        return 1


def _batch_rows(batch: Any) -> list[Any]:
    """The batch's rows as dicts; a row Arrow cannot convert becomes its one-line error instead.

    Arrow cannot convert invalid UTF-8 text, nor a date, timestamp or duration outside Python's
    range (years 1 to 9999; Arrow's reach far beyond): OverflowError.
    """
    try:
        return batch.to_pylist()
    except _UNCONVERTIBLE:
        rows: list[Any] = []
        for i in range(batch.num_rows):
            try:
                rows.append(batch.slice(i, 1).to_pylist()[0])
            except _UNCONVERTIBLE as exc:
                rows.append(f"unreadable values: {one_line(exc)}")
        return rows
