"""Final output formats, converted from the run's JSONL file.

The pipeline always writes JSON Lines first: appending one line per finished row is what makes
resume exact. Only when the run is complete is that file converted to the format asked for:

- ``jsonl``     copied as is;
- ``jsonl.gz``  gzip, streamed, with a fixed header (no file name, mtime 0) so that the same
                input gives the same bytes on every run;
- ``parquet``   a `pyarrow.parquet.ParquetWriter`, fed a chunk of rows at a time;
- ``hf``        a `datasets` ``save_to_disk`` directory, built from the same Arrow chunks.

Rows of real trajectory files do not share one schema: a key appears in some rows only, a
field is null here and a string there, OpenAI ``content`` is a string in one message and a list
of parts in the next. `datasets`' JSON loader guesses a schema from the first block and fails
later (huggingface/datasets#6162, #7092, #7222). So the conversion makes two streaming passes:
the first infers each top-level column's Arrow type chunk by chunk and merges them
(``unify_schemas(promote_options="permissive")``: missing struct fields are added, null takes
any type, int widens to float). A column of strings mixed with numbers or booleans (tau-bench's
``task_id``: ``0`` in one file, ``"48"`` in the next) becomes a string column, each number as
its JSON text (``"0"``, ``"2.5"``, ``"true"``): what pandas and `datasets` users expect, where
JSON text would read back as ``'"48"'``. Any other column whose values cannot share one type is
stored as Arrow JSON text (``pa.json_()``, the parquet JSON logical type; `datasets` reads it as
a ``Json`` feature and `read.parquet` decodes it back to objects). The result names both kinds
(`ConversionResult.changed_columns_note`), and the run prints that line. The second pass
writes. Memory stays at one chunk of rows (`CHUNK_BYTES`), whatever the file size.

A key absent from a row comes back as null from a columnar file: parquet has no "missing".

A column named in `json_lists` (``messages`` of an ``hf-chat`` output) is a list whose items are
each stored as Arrow JSON (``list<json>``, `datasets`' ``List(Json())``): messages differ in their
keys and so do a call's arguments, and one struct type for all of them would give every message
and every call the others' keys as nulls, which a chat template then writes (``"path": null``).

Columns JSON has no type for (binary, decimal, timestamp, date, time, duration) arrive in the
JSONL file encoded as `read.arrow_values` describes (base64, decimal string, ISO 8601...). The
caller passes their original Arrow types (`column_types`, from the input files' schemas); such a
column is then not inferred but decoded back to its own type, so a Parquet or ``hf`` output
holds the values it was given. Should a value not decode (a row from a JSONL input holding
something else under that name), the column falls back to inference.

Every output is written under a temporary name in the destination's directory and renamed into
place at the end, so a half-written output never looks complete; an existing output is replaced.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.arrow_values import DoesNotDecode, decoder
from trajectory_compressor.read.jsonl import parse_json_line
from trajectory_compressor.write.hf_dataset import datasets_holds, save_stream_as_dataset
from trajectory_compressor.write.output_format import OUTPUT_FORMATS, ConversionError, output_format_for  # noqa: F401 (re-exported)
from trajectory_compressor.write.run_files import new_file_beside

CHUNK_BYTES = 32 << 20  # JSON text per Arrow chunk / parquet row group
CHUNK_MAX_ROWS = 10_000
GZIP_LEVEL = 6  # zlib's default: ~9's ratio at a fraction of its time
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)
JSON_LIST = pa.list_(pa.json_())  # a list of JSON values, each with its own keys


@dataclass(frozen=True)
class ConversionResult:
    """What was written: where, in which format, how many rows, which columns became text or JSON text."""

    path: str
    fmt: str
    rows: int
    json_columns: tuple[str, ...] = ()
    text_columns: tuple[str, ...] = ()

    def changed_columns_note(self) -> str | None:
        """One line naming every column stored with another type than its values had, or None."""
        parts = []
        if self.text_columns:
            parts.append(f"{', '.join(map(quoted, self.text_columns))} as text (numbers and strings mixed)")
        if self.json_columns:
            parts.append(f"{', '.join(map(quoted, self.json_columns))} as JSON text (values of several kinds)")
        if not parts:
            return None
        return f"warning: columns stored with another type in {quoted(self.path)}: {'; '.join(parts)}"


def convert_jsonl(
    jsonl_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    fmt: str,
    column_types: Mapping[str, pa.DataType] | None = None,
    json_lists: tuple[str, ...] = (),
) -> ConversionResult:
    """Convert the run's JSONL file to `out_path` in format `fmt` (one of `OUTPUT_FORMATS`).

    `column_types`: original Arrow types of encoded binary/decimal/temporal columns, restored in
    Parquet and ``hf`` outputs (see `read.column_types.source_column_types`). `json_lists`: list
    columns whose items are stored one JSON value each (see the module docstring).
    """
    types = dict(column_types or {})
    types.update(dict.fromkeys(json_lists, JSON_LIST))
    source, target = Path(jsonl_path), Path(out_path)
    fmt = output_format_for(str(target), fmt)
    if not source.is_file():
        raise ConversionError(f"JSONL file to convert not found: {quoted(source)}")
    if source.resolve() == target.resolve():
        if fmt != "jsonl":
            raise ConversionError(f"cannot convert {quoted(source)} onto itself")
        return ConversionResult(path=str(target), fmt=fmt, rows=_count_lines(source))
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "hf":
        return _write_hf(source, target, types)
    if fmt == "parquet":
        writer: Any = lambda source, tmp: _write_parquet(source, tmp, types)  # noqa: E731
    else:
        writer = {"jsonl": _write_jsonl, "jsonl.gz": _write_jsonl_gz}[fmt]
    fd, tmp = new_file_beside(target)
    os.close(fd)
    try:
        rows, schema = writer(source, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    json_columns, text_columns = schema.changed() if schema is not None else ((), ())
    return ConversionResult(str(target), fmt, rows, json_columns, text_columns)


# --- JSON Lines --------------------------------------------------------------------------------


def _write_jsonl(source: Path, tmp: Path) -> tuple[int, None]:
    shutil.copyfile(source, tmp)
    return _count_lines(source), None


def _write_jsonl_gz(source: Path, tmp: Path) -> tuple[int, None]:
    rows = 0
    # filename="" leaves the name out of the header and mtime=0 fixes the time: same bytes every run.
    with (
        open(source, "rb") as src,
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL) as out,
    ):
        for line in src:
            rows += bool(line.strip())
            out.write(line)
    return rows, None


def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


# --- Arrow: schema inference and chunked tables -------------------------------------------------


def _iter_chunks(source: Path) -> Iterator[list[dict[str, Any]]]:
    """Rows of the JSONL file, parsed, in chunks of about `CHUNK_BYTES` of text."""
    chunk: list[dict[str, Any]] = []
    size = 0
    with open(source, "rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = parse_json_line(line)
            except (ValueError, UnicodeDecodeError) as exc:
                raise ConversionError(f"{quoted(source)}:{line_number}: invalid JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise ConversionError(f"{quoted(source)}:{line_number}: a row must be a JSON object")
            chunk.append(row)
            size += len(line)
            if size >= CHUNK_BYTES or len(chunk) >= CHUNK_MAX_ROWS:
                yield chunk
                chunk, size = [], 0
    if chunk:
        yield chunk


def _writable(arrow_type: pa.DataType) -> bool:
    """Whether parquet / datasets can store `arrow_type` (they cannot store a struct without fields)."""
    if pa.types.is_struct(arrow_type):
        return arrow_type.num_fields > 0 and all(_writable(field.type) for field in arrow_type)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _writable(arrow_type.value_type)
    return True


def _merge_types(old: pa.DataType, new: pa.DataType) -> pa.DataType | None:
    """The type both chunks' values fit in, or None when they do not share one."""
    if old == new:
        return old
    try:
        merged = pa.unify_schemas(
            [pa.schema([pa.field("c", old)]), pa.schema([pa.field("c", new)])], promote_options="permissive"
        )
    except _ARROW_ERRORS:
        return None
    return merged.field("c").type


_SCALARS = (str, int, float, bool)


def _is_scalar_type(arrow_type: pa.DataType) -> bool:
    t = pa.types
    return t.is_integer(arrow_type) or t.is_floating(arrow_type) or t.is_boolean(arrow_type) or _is_text(arrow_type)


def _is_text(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


@dataclass
class _Schema:
    """Top-level columns in first-seen order, with their merged types; text and JSON-text columns apart."""

    types: dict[str, pa.DataType]
    json_columns: set[str]
    text_columns: set[str] = field(default_factory=set)  # strings mixed with numbers: stored as strings
    typed: dict[str, pa.DataType] = field(default_factory=dict)  # restored original types

    def arrow_schema(self) -> pa.Schema:
        return pa.schema(
            [pa.field(name, self._stored_type(name, arrow_type)) for name, arrow_type in self.types.items()]
        )

    def _stored_type(self, name: str, arrow_type: pa.DataType) -> pa.DataType:
        if name in self.json_columns:
            return pa.json_()
        return pa.string() if name in self.text_columns else arrow_type

    def changed(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(JSON-text columns, text columns), in column order."""
        json_text = tuple(name for name in self.types if name in self.json_columns)
        return json_text, tuple(name for name in self.types if name in self.text_columns and name not in json_text)

    def mixed(self, name: str, values: list[Any], *types: pa.DataType) -> None:
        """`name`'s values share no Arrow type: text when they are strings and other scalars, else JSON text."""
        scalars = all(_is_scalar_type(t) or pa.types.is_null(t) for t in types)
        strings = any(_is_text(t) for t in types) or any(isinstance(v, str) for v in values)
        if scalars and strings and all(v is None or isinstance(v, _SCALARS) for v in values):
            self.text_columns.add(name)
        else:
            self.json_columns.add(name)


def _infer_schema(source: Path, column_types: Mapping[str, pa.DataType]) -> tuple[_Schema, int]:
    """First pass: each column's type over the whole file, and the row count; a column with an
    original type (`column_types`) takes that type."""
    schema = _Schema(types={}, json_columns=set())
    rows = 0
    for chunk in _iter_chunks(source):
        rows += len(chunk)
        names = dict.fromkeys(name for row in chunk for name in row)
        for name in names:
            if name in schema.json_columns:
                schema.types.setdefault(name, pa.null())
                continue
            values = [row.get(name) for row in chunk]
            if name in schema.text_columns:
                schema.mixed(name, values)  # stays text while its values are scalars
                continue
            known = schema.types.get(name)
            try:
                chunk_type = pa.array(values).type
            except _ARROW_ERRORS:
                schema.types.setdefault(name, pa.null())
                schema.mixed(name, values, *([] if known is None else [known]))
                continue
            merged = chunk_type if known is None else _merge_types(known, chunk_type)
            if merged is None:
                schema.mixed(name, values, known, chunk_type)
            else:
                schema.types[name] = merged
    for name, arrow_type in schema.types.items():
        if name in column_types:
            schema.types[name] = schema.typed[name] = column_types[name]
            schema.json_columns.discard(name)
            schema.text_columns.discard(name)
        elif not _writable(arrow_type):
            schema.json_columns.add(name)
    return schema, rows


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # integers beyond 64 bits: the standard library writes them
        return json.dumps(value, ensure_ascii=False)


class _ColumnDoesNotFit(Exception):
    def __init__(self, column: str) -> None:
        super().__init__(column)
        self.column = column


def _iter_tables(source: Path, schema: _Schema) -> Iterator[pa.Table]:
    """Second pass: one Arrow table per chunk, in the merged schema."""
    arrow_schema = schema.arrow_schema()
    for chunk in _iter_chunks(source):
        arrays = []
        for column in arrow_schema:
            values = [row.get(column.name) for row in chunk]
            if column.name in schema.json_columns:
                text = [None if v is None else _json_text(v) for v in values]
                arrays.append(pa.array(text, type=pa.json_()))
                continue
            if column.name in schema.text_columns:
                text = [v if v is None or isinstance(v, str) else _json_text(v) for v in values]
                arrays.append(pa.array(text, type=pa.string()))
                continue
            try:
                if column.type == JSON_LIST:
                    arrays.append(_json_list_array(values))
                    continue
                if column.name in schema.typed:
                    decode = decoder(column.type)
                    values = [decode(v) for v in values]
                arrays.append(pa.array(values, type=column.type))
            except (*_ARROW_ERRORS, DoesNotDecode, TypeError) as exc:
                raise _ColumnDoesNotFit(column.name) from exc
        yield pa.Table.from_arrays(arrays, schema=arrow_schema)


def _json_list_array(values: list[Any]) -> pa.Array:
    """A ``list<json>`` array: each list's items as JSON text (pyarrow builds none from objects)."""
    if not all(value is None or isinstance(value, list) for value in values):
        raise TypeError("not a list")
    offsets: list[int] = [0]
    items: list[str] = []
    for value in values:
        items.extend(_json_text(item) for item in value or ())
        offsets.append(len(items))
    mask = pa.array([value is None for value in values])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(items, pa.json_()), mask=mask)


def _with_json_fallback(source: Path, write: Any, column_types: Mapping[str, pa.DataType]) -> tuple[int, _Schema]:
    """Infer, then `write(tables, schema)`; a column that still does not fit becomes JSON text.

    Type merging is an inference; should a value still not convert in the writing pass, that
    column is switched to JSON text and the write restarts (at most once per column).
    """
    types = dict(column_types)
    schema, rows = _infer_schema(source, types)
    while True:
        try:
            write(_iter_tables(source, schema), schema.arrow_schema())
        except _ColumnDoesNotFit as exc:
            if exc.column in schema.typed:  # its values are not all of the original type: infer it
                del types[exc.column]
                schema, rows = _infer_schema(source, types)
            else:
                schema.json_columns.add(exc.column)
            continue
        return rows, schema


# --- parquet and datasets ----------------------------------------------------------------------


def _write_parquet(source: Path, tmp: Path, column_types: Mapping[str, pa.DataType]) -> tuple[int, _Schema]:
    import pyarrow.parquet as pq

    def write(tables: Iterator[pa.Table], arrow_schema: pa.Schema) -> None:
        with pq.ParquetWriter(tmp, arrow_schema, compression="zstd") as writer:
            for table in tables:
                writer.write_table(table)

    return _with_json_fallback(source, write, column_types)


def _write_hf(source: Path, target: Path, column_types: Mapping[str, pa.DataType]) -> ConversionResult:
    """A ``save_to_disk`` directory: Arrow chunks → an IPC stream file → memory-mapped Dataset → save.

    The scratch space (the stream file and the new directory before its rename) lives in a
    hidden temporary directory next to the output, on the same filesystem, removed at the end.
    """
    column_types = {name: arrow_type for name, arrow_type in column_types.items() if datasets_holds(arrow_type)}
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        stream_path = scratch / "rows.arrow"

        def write(tables: Iterator[pa.Table], arrow_schema: pa.Schema) -> None:
            with pa.OSFile(str(stream_path), "wb") as sink, pa.ipc.new_stream(sink, arrow_schema) as writer:
                for table in tables:
                    writer.write_table(table)

        rows, schema = _with_json_fallback(source, write, column_types)
        built = scratch / "dataset"
        save_stream_as_dataset(stream_path, built)
        _replace_directory(built, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return ConversionResult(str(target), "hf", rows, *schema.changed())


def _replace_directory(new: Path, target: Path) -> None:
    """Move `new` to `target`; an existing `target` is set aside first and removed after."""
    if target.exists() and not target.is_dir():
        raise ConversionError(f"output path exists and is not a directory: {quoted(target)}")
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
