"""`merge`'s dataset: the shards' written rows interleaved back into input order.

Each shard's metrics lines carry the row's global `index` and whether it was `written`, in the
order of the shard's dataset, so a k-way merge of the shards' metrics by `index` says which
shard's next dataset row comes next. The dataset is merged in the format the shards wrote it:

- JSON Lines shards (`.jsonl`, `.jsonl.gz`) line by line, into `.jsonl` or `.jsonl.gz` (gzip
  with the fixed header a run writes: the same bytes as one unsharded run), or, into a Parquet
  or ``hf`` output, merged so and then converted as a run converts its own JSON Lines;
- Parquet shards record batch by record batch into one `pyarrow.parquet.ParquetWriter`, in the
  schema the shards were written with: memory holds about one row group per shard and one row
  group being written, whatever the size of the shards.

Each shard's Parquet schema was inferred from its own rows, so two shards may disagree where
one run would have chosen one type: a column missing from a shard is null there, types are
promoted as the run promotes them (null to any, int to float, struct fields added), and a
column of numbers in one shard and strings in another becomes strings, each number as its JSON
text, as the run stores such a column. Any other disagreement (a column stored as JSON text in
one shard only) has no faithful merge: it is refused, as are Parquet shards into another format
(read back, their rows are not the rows the run wrote) and `hf` shard folders, before anything
is written.
"""

from __future__ import annotations

import gzip
import heapq
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.write.output_format import ConversionError, output_format_for
from trajectory_compressor.write.run_files import file_record

if TYPE_CHECKING:
    import pyarrow as pa

LINE_FORMATS = ("jsonl", "jsonl.gz")
MERGEABLE = ("jsonl", "jsonl.gz", "parquet")
GZIP_LEVEL = 6  # as `write.converters` writes a run's `.jsonl.gz`
CHUNK_BYTES = 32 << 20  # Arrow bytes per row group written
CHUNK_MAX_ROWS = 10_000
SHARD_BATCH_ROWS = 256  # rows read from a shard at a time


class MergeError(UsageError, ValueError):
    """The shard reports cannot be merged (missing, incomplete, or from different settings)."""


@dataclass(frozen=True)
class DatasetMerge:
    """How the shards' datasets are merged: checked whole by `plan`, before anything is written."""

    shard_format: str
    format: str
    shards: tuple[tuple[Path, Path], ...]  # (metrics, dataset) of each shard
    schema: pa.Schema | None = None  # Parquet shards: the schema of the merged rows
    text_columns: frozenset[str] = frozenset()
    column_types: Mapping[str, Any] = field(default_factory=dict)  # JSON Lines into Parquet or hf: as the run
    json_lists: tuple[str, ...] = ()

    @classmethod
    def plan(
        cls,
        shard_format: str,
        output: Path,
        shards: Sequence[tuple[Path, Path]],
        column_types: Callable[[], Mapping[str, Any]],
        json_lists: tuple[str, ...] = (),
    ) -> DatasetMerge:
        """The merge of the shards' datasets into `output`, or `MergeError` saying why there is none.

        JSON Lines shards merged into a Parquet or ``hf`` output are converted as the run
        converts its own JSON Lines: with the Arrow types of the inputs' columns
        (`column_types()`, read only then) and the columns stored as lists of JSON (`json_lists`).
        """
        fmt = merge_formats(shard_format, output)
        if shard_format == "parquet":
            schema, text_columns = parquet_schema([data for _, data in shards])
            return cls(shard_format, fmt, tuple(shards), schema, text_columns)
        if fmt in LINE_FORMATS:
            return cls(shard_format, fmt, tuple(shards))
        return cls(shard_format, fmt, tuple(shards), column_types=column_types(), json_lists=json_lists)

    def write(self, path: Path) -> dict[str, Any] | None:
        """Merge into a temporary file beside `path`, rename it into place; its record (path, bytes,
        sha256, and lines for JSON Lines) for a later check (None for an hf folder)."""
        temporary = path.with_name(f".{path.name}.tmp")
        try:
            if self.schema is not None:
                merge_parquet(temporary, self.shards, self.schema, self.text_columns)
                os.replace(temporary, path)
            elif self.format in LINE_FORMATS:
                merge_lines(temporary, self.shards, self.shard_format, self.format)
                os.replace(temporary, path)
            else:  # the run's own JSON Lines, converted as the run converts it
                from trajectory_compressor.write.converters import convert_jsonl

                merge_lines(temporary, self.shards, self.shard_format, "jsonl")
                convert_jsonl(temporary, path, self.format, self.column_types, self.json_lists)
        finally:
            temporary.unlink(missing_ok=True)
        if not path.is_file():  # an hf folder: nothing to record
            return None
        digest, size, lines = file_record(path)
        record: dict[str, Any] = {"path": str(path), "bytes": size, "sha256": digest.hexdigest()}
        return {**record, "lines": lines} if self.format == "jsonl" else record


def merge_formats(shard_format: str, output: Path) -> str:
    """The format of the merged dataset at `output` (by its suffix), or `MergeError` naming why
    the shards' `shard_format` cannot be merged into it."""
    if shard_format not in MERGEABLE:
        raise MergeError(
            f"merge cannot merge {shard_format} shard datasets (save_to_disk folders); "
            "run the shards with -o NAME.parquet or NAME.jsonl"
        )
    try:
        target = output_format_for(str(output))
    except ConversionError:
        raise MergeError(
            f"cannot tell the dataset format of {quoted(output)} from its suffix "
            "(use .jsonl, .jsonl.gz, .parquet, or a directory for a datasets save_to_disk)"
        ) from None
    if shard_format == "parquet" and target != "parquet":
        raise MergeError(
            f"the shards wrote Parquet datasets, which merge into a .parquet output only: as {target} their rows "
            f"would not be the rows the run wrote (a key a row lacks reads back as null); use -o NAME.parquet, "
            f"not {quoted(output)}"
        )
    return target


def written_indices(metrics_path: Path) -> Iterator[int]:
    """The global index of each row of a shard's dataset, in its order (the metrics lines marked `written`)."""
    with open(metrics_path, "rb") as metrics:
        for line in metrics:
            if line.strip():
                row = orjson.loads(line)
                if row.get("written", True):
                    yield row["index"]


def _dataset_lines(path: Path, fmt: str) -> Iterator[bytes]:
    opener: Any = gzip.open if fmt == "jsonl.gz" else open
    with opener(path, "rb") as handle:
        for line in handle:
            yield line.rstrip(b"\n")


def _indexed_lines(metrics_path: Path, data_path: Path, fmt: str) -> Iterator[tuple[int, bytes]]:
    return zip(written_indices(metrics_path), _dataset_lines(data_path, fmt), strict=False)


def merge_lines(out: Path, shards: Sequence[tuple[Path, Path]], shard_format: str, fmt: str) -> int:
    """Write the JSON Lines shards' rows, (metrics, dataset) each, to `out` in input order; the rows written."""
    streams = [_indexed_lines(metrics, data, shard_format) for metrics, data in shards]
    rows = 0
    with open(out, "wb") as raw:
        # filename="" and mtime=0, as a run writes: the same rows give the same bytes.
        sink: Any = (
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL)
            if fmt == "jsonl.gz"
            else raw
        )
        with sink:
            for _, line in heapq.merge(*streams, key=lambda pair: pair[0]):
                sink.write(line + b"\n")
                rows += 1
    return rows


# --- Parquet -------------------------------------------------------------------------------------


def parquet_schema(paths: Sequence[Path]) -> tuple[pa.Schema, frozenset[str]]:
    """The schema the shards' rows merge into, and the columns that become text (numbers in one
    shard, strings in another); `MergeError` when a column's types have no faithful merge."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schemas = [pq.read_schema(path) for path in paths]
    fields: dict[str, pa.DataType] = {}
    text: set[str] = set()
    for path, schema in zip(paths, schemas, strict=True):
        for column in schema:
            known = fields.setdefault(column.name, column.type)
            if known == column.type or (column.name in text and _is_scalar(column.type)):
                continue
            try:
                fields[column.name] = (
                    pa.unify_schemas(
                        [pa.schema([(column.name, known)]), pa.schema([(column.name, column.type)])],
                        promote_options="permissive",
                    )
                    .column(0)
                    .type
                )
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                if _is_scalar(known) and _is_scalar(column.type):
                    fields[column.name] = pa.string()
                    text.add(column.name)
                    continue
                raise MergeError(
                    f"shard dataset {quoted(path)} stores column {quoted(column.name)} as {_type_name(column.type)}, "
                    f"another shard as {_type_name(known)}: no merge keeps both; re-run the shards with -o NAME.jsonl "
                    "to merge them"
                ) from None
    return pa.schema(list(fields.items())), frozenset(text)


def _type_name(arrow_type: pa.DataType) -> str:
    return "JSON text" if getattr(arrow_type, "extension_name", None) == "arrow.json" else str(arrow_type)


def _is_scalar(arrow_type: pa.DataType) -> bool:
    import pyarrow as pa

    t = pa.types
    return (
        t.is_integer(arrow_type)
        or t.is_floating(arrow_type)
        or t.is_boolean(arrow_type)
        or t.is_string(arrow_type)
        or t.is_large_string(arrow_type)
        or t.is_null(arrow_type)
    )


class _ShardRows:
    """A shard's Parquet rows in order, handed out as slices of its record batches."""

    def __init__(self, path: Path, schema: pa.Schema, text: frozenset[str]) -> None:
        import pyarrow.parquet as pq

        self._file = pq.ParquetFile(path)
        self._batches = self._file.iter_batches(batch_size=SHARD_BATCH_ROWS)
        self._schema, self._text, self._path = schema, text, path
        self._batch: pa.RecordBatch | None = None
        self._at = 0

    def take(self, count: int) -> list[pa.RecordBatch]:
        """The next `count` rows, in the merged schema."""
        taken = []
        while count:
            if self._batch is None or self._at == self._batch.num_rows:
                try:
                    self._batch, self._at = self._conform(next(self._batches)), 0
                except StopIteration:
                    raise MergeError(
                        f"shard dataset {quoted(self._path)} holds fewer rows than its metrics mark written"
                    ) from None
            part = self._batch.slice(self._at, min(count, self._batch.num_rows - self._at))
            taken.append(part)
            self._at += part.num_rows
            count -= part.num_rows
        return taken

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        import pyarrow as pa

        if batch.schema == self._schema:
            return batch
        arrays = []
        for column in self._schema:
            if column.name not in batch.schema.names:
                arrays.append(pa.nulls(batch.num_rows, column.type))
                continue
            values = batch.column(column.name)
            if column.name in self._text and not pa.types.is_string(values.type):
                arrays.append(pa.array([_text(value) for value in values.to_pylist()], pa.string()))
            else:
                arrays.append(values.cast(column.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)

    def close(self) -> None:
        self._file.close()


def _text(value: Any) -> str | None:
    """A scalar of a text column as the run stores it: strings as they are, numbers as JSON text."""
    return value if value is None or isinstance(value, str) else orjson.dumps(value).decode()


def merge_parquet(out: Path, shards: Sequence[tuple[Path, Path]], schema: pa.Schema, text: frozenset[str]) -> int:
    """Write the Parquet shards' rows, (metrics, dataset) each, to `out` in input order; the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    readers = [_ShardRows(data, schema, text) for _, data in shards]
    order = heapq.merge(*[_of_shard(shard, metrics) for shard, (metrics, _) in enumerate(shards)])
    rows = 0
    try:
        with pq.ParquetWriter(out, schema, compression="zstd") as writer:
            pending: list[pa.RecordBatch] = []
            pending_bytes = pending_rows = 0
            runs = _runs(shard for _, shard in order)
            for shard, count in runs:
                for part in readers[shard].take(count):
                    pending.append(part)
                    pending_rows += part.num_rows
                    pending_bytes += part.nbytes
                if pending_rows >= CHUNK_MAX_ROWS or pending_bytes >= CHUNK_BYTES:
                    writer.write_table(pa.Table.from_batches(pending, schema=schema))
                    rows += pending_rows
                    pending, pending_bytes, pending_rows = [], 0, 0
            if pending:
                writer.write_table(pa.Table.from_batches(pending, schema=schema))
                rows += pending_rows
    finally:
        for reader in readers:
            reader.close()
    return rows


def _of_shard(shard: int, metrics_path: Path) -> Iterator[tuple[int, int]]:
    """(index, shard) for each row of the shard's dataset."""
    for index in written_indices(metrics_path):
        yield index, shard


def _runs(shards: Iterator[int], most: int = SHARD_BATCH_ROWS) -> Iterator[tuple[int, int]]:
    """(shard, how many rows in a row) of a sequence of shard numbers, each run at most `most` long."""
    current, count = -1, 0
    for shard in shards:
        if shard == current and count < most:
            count += 1
            continue
        if count:
            yield current, count
        current, count = shard, 1
    if count:
        yield current, count
