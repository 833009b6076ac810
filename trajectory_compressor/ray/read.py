"""Input files into a Ray Dataset of rows, each with its index in the whole input stream.

The local engine numbers rows by their position in one stream over all inputs (`index` in the
metrics; what `--sample-percent` samples on). Ray reads files in parallel, so each file's rows
are counted first (one Ray task per file: lines without parsing for JSONL, the footer for
Parquet), which gives every file its first index; the files are then read in parallel and
every row carries `row_index`, its index in the stream. Counting costs a read of the JSONL
bytes, at disk or network speed: a few per cent of tokenizing them.

A row travels as the bytes it came in as (`raw`, a JSONL line, parsed by the worker that
compresses it: the same `parse_record` as the local engine, so rejects are the same too), or
as JSON (`payload`, a Parquet or JSON-array record, decoded here as the local reader does), or
as the error that made it unreadable (`error`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.jsonl import record_lines
from trajectory_compressor.read.select import records_of, sampled
from trajectory_compressor.read.sources import InputSource, iter_parquet_handle
from trajectory_compressor.settings import RunConfig, SelectConfig
from trajectory_compressor.types import SourceRecord
from trajectory_compressor.write.records import dumps

ROW_SCHEMA = pa.schema(
    [
        ("row_index", pa.int64()),
        ("source", pa.string()),
        ("line", pa.int64()),
        ("raw", pa.binary()),
        ("payload", pa.binary()),
        ("error", pa.string()),
    ]
)
READ_BATCH_ROWS = 16  # rows per block handed on: small blocks spread one big file over the actors


def count_inputs(sources: Sequence[InputSource], split: str) -> list[int]:
    """The records of each source, counted in parallel (one Ray task per file)."""
    import ray

    return list(ray.get([_count.remote(source, split) for source in sources]))


def stream_rows_read(total: int, select: SelectConfig) -> int:
    """How far into the input stream the local engine reads for this selection (its `rows.read`):
    everything, or with `--limit`, up to the first selected row past the limit."""
    if select.limit is None:
        return total
    selected = 0
    for index in range(total):
        percent = select.sample_percent
        if percent is None or percent >= 100 or sampled(index, percent, select.seed):
            selected += 1
            if selected > select.limit:
                return index + 1
    return total


def read_inputs(sources: Sequence[InputSource], config: RunConfig, counts: Sequence[int] | None = None) -> Any:
    """A `ray.data.Dataset` of the selected rows of `sources` (`ROW_SCHEMA`), in input order.

    `counts` (from `count_inputs`) saves counting again when the caller has them.
    """
    import ray.data

    split = config.read.split
    if counts is None:
        counts = count_inputs(sources, split)
    entries = []
    offset = 0
    for ordinal, count in enumerate(counts):
        entries.append({"ordinal": ordinal, "offset": offset})
        offset += count
    if not entries:
        return ray.data.from_arrow(ROW_SCHEMA.empty_table())
    select = config.select
    dataset = ray.data.from_items(entries, override_num_blocks=len(entries)).map_batches(
        read_files,
        fn_kwargs={"sources": list(sources), "split": split, "percent": select.sample_percent, "seed": select.seed},
        batch_size=1,
        batch_format="pyarrow",
        num_cpus=0.25,
    )
    if select.limit is not None:
        dataset = dataset.limit(select.limit)
    return dataset


def count_records(source: InputSource, split: str) -> int:
    """How many records `source` yields, as the local reader counts them (a broken file: one more)."""
    if source.kind == "jsonl":
        count = 0
        try:
            with open_binary_stream(source) as handle:
                for _ in record_lines(handle):
                    count += 1
        except (OSError, EOFError, zlib.error):
            count += 1  # the local reader's "unreadable from here on" record
        return count
    if source.kind == "parquet":
        import pyarrow.parquet as pq

        try:
            with open_input_file(source) as handle:
                return pq.ParquetFile(handle).metadata.num_rows
        except (OSError, pa.ArrowException):
            return 1
    return sum(1 for _ in records_of(source, split))


def iter_records(source: InputSource, split: str) -> Iterator[SourceRecord]:
    """The records of `source`: the local reader for local files, pyarrow.fs for URIs."""
    from trajectory_compressor.ray.inputs import is_uri

    if not is_uri(source.name):
        yield from records_of(source, split)
        return
    line = 0
    try:
        if source.kind == "parquet":
            with open_input_file(source) as handle:
                for item in iter_parquet_handle(source.name, handle):
                    line = item.line
                    yield item
            return
        with open_binary_stream(source) as handle:
            for line, raw in record_lines(handle):
                yield SourceRecord(source=source.name, line=line, raw=raw)
    except (OSError, EOFError, zlib.error, pa.ArrowException, ValueError) as exc:
        message = f"unreadable from here on: cannot read {quoted(source.name)} after line {line}: {exc}"
        yield SourceRecord(source=source.name, line=line + 1, error=message)


def open_binary_stream(source: InputSource) -> Any:
    """A binary stream of a JSONL file (gzip by suffix), local or on any pyarrow filesystem."""
    from trajectory_compressor.ray.inputs import is_uri
    from trajectory_compressor.read.jsonl import open_binary

    if not is_uri(source.name):
        return open_binary(source.path or source.name)
    import gzip

    import pyarrow.fs as pafs

    filesystem, path = pafs.FileSystem.from_uri(source.name)
    stream = filesystem.open_input_stream(path, compression=None)
    # pyarrow's streams do not iterate by line: the standard library's readers do.
    return gzip.GzipFile(fileobj=stream, mode="rb") if path.endswith(".gz") else LineReader(stream)


class LineReader:
    """Lines (with their ends) of a pyarrow input stream, read a megabyte at a time."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __iter__(self) -> Iterator[bytes]:
        pending = b""
        while chunk := self.stream.read(1 << 20):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            yield from (line + b"\n" for line in lines)
        if pending:
            yield pending

    def __enter__(self) -> LineReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()


def open_input_file(source: InputSource) -> Any:
    """A random-access file (Parquet), local or on any pyarrow filesystem."""
    import pyarrow.fs as pafs

    filesystem, path = pafs.FileSystem.from_uri(source.name) if "://" in source.name else (None, source.path)
    if filesystem is None:
        return pa.OSFile(str(path), "rb")
    return filesystem.open_input_file(path)


def row_of(index: int, item: SourceRecord) -> dict[str, Any]:
    """One record as a `ROW_SCHEMA` row: its bytes when it has them, else its JSON, else its error."""
    if item.raw is not None:
        return {"row_index": index, "source": item.source, "line": item.line, "raw": item.raw}
    if item.error is None:
        return {"row_index": index, "source": item.source, "line": item.line, "payload": dumps(item.record)}
    return {"row_index": index, "source": item.source, "line": item.line, "error": item.error}


def read_files(
    batch: pa.Table, *, sources: list[InputSource], split: str, percent: float | None, seed: int
) -> Iterator[pa.Table]:
    """map_batches function: each file of the batch read whole, its rows out in small blocks."""
    for ordinal, offset in zip(batch.column("ordinal").to_pylist(), batch.column("offset").to_pylist(), strict=True):
        rows: list[dict[str, Any]] = []
        for number, item in enumerate(iter_records(sources[ordinal], split)):
            index = offset + number
            if percent is not None and percent < 100 and not sampled(index, percent, seed):
                continue
            rows.append(row_of(index, item))
            if len(rows) >= READ_BATCH_ROWS:
                yield pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
                rows = []
        if rows:
            yield pa.Table.from_pylist(rows, schema=ROW_SCHEMA)


def _remote_count() -> Any:
    import ray

    return ray.remote(num_cpus=0.25)(count_records)


class _LazyRemote:
    """`count_records` as a Ray task, made on first use (so importing this module needs no Ray)."""

    def __init__(self) -> None:
        self._task: Any = None

    def remote(self, *args: Any) -> Any:
        if self._task is None:
            self._task = _remote_count()
        return self._task.remote(*args)


_count = _LazyRemote()
