"""Input sources: which files, directories and datasets to read, and one stream of records from each.

The run reads many inputs the same way: every source yields `SourceRecord`s numbered from 1, so
the rest of the pipeline never asks where a row came from. What each argument may be:

- a file, by suffix:
  ``.jsonl``, ``.jsonl.gz``, ``.ndjson``, ``.ndjson.gz``  JSON Lines, streamed line by line;
  ``.json``     a JSON array of records (or one object). JSON arrays are **not streamed**: the
                whole file is parsed at once, so keep them small or convert them to JSONL. A
                ``.json`` file whose first line is a complete JSON object is JSON Lines under
                another name and is streamed as such;
  ``.parquet``  streamed by record batches (`ParquetFile.iter_batches`); the record number is the
                1-based row index; binary, decimal and temporal values become JSON as
                `read.arrow_values` describes (also for ``datasets`` inputs);
- a directory written by `datasets`' ``save_to_disk`` (it holds ``state.json`` or
  ``dataset_dict.json``): read with `datasets.load_from_disk`; of a `DatasetDict`, the split given
  to `iter_source` is taken (default ``train``);
- any other directory: its supported files, **recursively**, sorted by relative path. Hidden
  files and directories (a leading ``.``) and this tool's own outputs (``*.metrics.jsonl``,
  ``*.report.json``, ``*.rejects.jsonl``, ``*.over_limit.jsonl``, see `OWN_OUTPUT_SUFFIXES`) are
  skipped (and named once, in one line), so an output directory can sit inside the input directory; a ``save_to_disk``
  directory met on the way is read as one dataset and not descended into;
- ``hf:NAME`` or ``hf:NAME:CONFIG``: `datasets.load_dataset(NAME, CONFIG, split=..., streaming=True)`.
  NAME is a Hub id (``hf:org/name``, checked once when the inputs are expanded, see
  `_check_hub_dataset`), or a packaged builder (``hf:json``, ``hf:parquet``,
  ``hf:csv``...) together with ``data_files`` (local paths or globs), which `expand_inputs`
  takes as an argument (the CLI's ``--data-files``) and checks exist.

Why the shapes differ but the output does not: a record number is what the user needs to find a
bad row again (``file.jsonl:12``, ``data.parquet:40000``, ``hf:org/name:7``), and it is also what
`shard_filter` and resume key on.
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import os
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.read.jsonl import BOM, iter_jsonl, json_spans, parse_json_line, parse_record
from trajectory_compressor.types import SourceRecord, one_line

SourceKind = Literal["jsonl", "json", "parquet", "hf_disk", "hf_load"]

HF_PREFIX = "hf:"
JSONL_SUFFIXES: tuple[str, ...] = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
SUPPORTED_SUFFIXES: tuple[str, ...] = (*JSONL_SUFFIXES, ".json", ".parquet")
# Files this tool writes next to its outputs; never read back as input when a directory is given.
OWN_OUTPUT_SUFFIXES: tuple[str, ...] = (
    ".metrics.jsonl",
    ".report.json",
    ".rejects.jsonl",
    ".over_limit.jsonl",
    ".metrics.jsonl.gz",
    ".rejects.jsonl.gz",
    ".over_limit.jsonl.gz",
)
PARQUET_BATCH_ROWS = 256  # trajectories are large (tens of KB each): keep a batch to a few MB
HF_DISK_BATCH_ROWS = 256
HUB_CHECK_TIMEOUT = 10.0  # seconds for the one request that checks a Hub dataset is there
_SAVE_TO_DISK_MARKERS = ("state.json", "dataset_dict.json")


class InputError(UsageError, ValueError):
    """An input cannot be found, opened or read to its end; the message is one line naming it."""


@dataclass(frozen=True)
class InputSource:
    """One thing to read records from.

    `name` is what messages and `SourceRecord.source` show (the path as given, or the ``hf:`` spec).
    `path` is the file or directory for local kinds; `dataset`/`config`/`data_files`/`streaming`
    are the `load_dataset` arguments for ``hf_load``.
    """

    name: str
    kind: SourceKind
    path: str | None = None
    dataset: str | None = None
    config: str | None = None
    data_files: tuple[str, ...] | None = None
    streaming: bool = True


def expand_inputs(
    paths: Sequence[str],
    *,
    data_files: Sequence[str] | None = None,
    streaming: bool = True,
    on_message: Callable[[str], None] | None = None,
    exclude: Sequence[str] = (),
) -> list[InputSource]:
    """Turn command-line input arguments into the ordered, de-duplicated list of sources to read.

    `data_files` and `streaming` apply to every ``hf:`` spec. Raises `InputError` for a missing
    path, an unsupported file type, a directory without any supported file, ``data_files``
    patterns that match nothing, or a Hub dataset that cannot be reached (checked here, once and
    quickly, rather than after minutes of retries). Files of a directory skipped as this tool's
    own outputs are named once through `on_message` (default: a line on stderr). Paths in
    `exclude` (the run's output file or directory) and everything under them are left out of
    directory walks, so an output written inside an input directory is not read back as an
    input by the re-run that resumes or finishes it.
    """
    excluded = tuple(os.path.realpath(path) for path in exclude)
    sources: list[InputSource] = []
    seen: set[str] = set()
    skipped: list[str] = []

    def add(source: InputSource) -> None:
        key = source.name if source.kind == "hf_load" else os.path.realpath(source.path or source.name)
        if key not in seen:
            seen.add(key)
            sources.append(source)

    for arg in paths:
        if arg.startswith(HF_PREFIX):
            add(_hf_source(arg, data_files, streaming))
            continue
        path = Path(arg)
        if not path.exists():
            raise InputError(f"input not found: {quoted(arg)}")
        if path.is_dir():
            if _is_save_to_disk_dir(path):
                add(InputSource(name=arg, kind="hf_disk", path=arg))
                continue
            found = list(_walk_directory(path, skipped, excluded))
            if not found:
                supported = ", ".join(SUPPORTED_SUFFIXES)
                raise InputError(f"no input files ({supported}) in directory: {quoted(arg)}")
            for source in found:
                add(source)
            continue
        kind = _file_kind(arg)
        if kind is None:
            supported = ", ".join(SUPPORTED_SUFFIXES)
            raise InputError(f"unsupported input file type (expected {supported}): {quoted(arg)}")
        add(InputSource(name=arg, kind=kind, path=arg))
    if skipped:
        say = on_message or (lambda text: print(text, file=sys.stderr))
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        example = quoted(skipped[0])
        say(f"note: skipped {len(skipped)} file(s) named like this tool's outputs in input folders: {example}{more}")
    return sources


def iter_source(source: InputSource, *, split: str = "train") -> Iterator[SourceRecord]:
    """Yield every record of `source` as `SourceRecord(source=name, line=n, record=...)`, n from 1.

    A line of JSON Lines that does not parse is yielded with `error` set (the row is rejected, the
    run goes on); a source that cannot be opened or breaks mid-way (a truncated gzip, a corrupt
    parquet page, a missing split) raises `InputError` naming the source and the last record read,
    because nothing after that point can be trusted.
    """
    readers = {
        "jsonl": _iter_jsonl_checked,
        "json": _iter_json_array,
        "parquet": _iter_parquet,
        "hf_disk": _iter_hf_disk,
        "hf_load": _iter_hf_load,
    }
    reader = readers.get(source.kind)
    if reader is None:
        raise InputError(f"unknown input kind {source.kind!r}: {quoted(source.name)}")
    yield from reader(source, split)


def shard_filter(index: int, num_shards: int, shard_index: int) -> bool:
    """Whether the row with global 0-based `index` belongs to shard `shard_index` of `num_shards`.

    Round-robin by row index: it needs no row counts up front, keeps shards within one row of
    each other in size, and gives every row to exactly one shard whatever the input order.
    """
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    if not 0 <= shard_index < num_shards:
        raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index}")
    return index % num_shards == shard_index


# --- discovering sources -----------------------------------------------------------------------


def _file_kind(path: str) -> SourceKind | None:
    lower = path.lower()
    if lower.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if lower.endswith(".parquet"):
        return "parquet"
    if lower.endswith(".json"):
        return "jsonl" if _json_file_is_jsonl(path) else "json"
    return None


def _json_file_is_jsonl(path: str) -> bool:
    """True when the first non-blank line of a ``.json`` file is a whole JSON object on its own.

    A pretty-printed single object or an array never has a complete object on its first line,
    while a JSON Lines file always does; reading one line keeps the check cheap.
    """
    try:
        with open(path, "rb") as handle:
            for line in handle:
                line = line.removeprefix(BOM)
                if line.strip():
                    return line.lstrip().startswith(b"{") and _parses_as_object(line)
    except OSError as exc:
        raise InputError(f"cannot read {quoted(path)}: {exc.strerror or exc}") from exc
    return False


def _parses_as_object(line: bytes) -> bool:
    try:
        return isinstance(parse_json_line(line), dict)
    except (ValueError, UnicodeDecodeError):
        return False


def _is_save_to_disk_dir(path: Path) -> bool:
    return any((path / marker).is_file() for marker in _SAVE_TO_DISK_MARKERS)


def _is_own_output(name: str) -> bool:
    return name.lower().endswith(OWN_OUTPUT_SUFFIXES)


def _is_excluded(path: Path, excluded: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == item or real.startswith(item.rstrip(os.sep) + os.sep) for item in excluded)


def _walk_directory(root: Path, skipped: list[str], excluded: tuple[str, ...] = ()) -> Iterator[InputSource]:
    """Supported files under `root`, recursively, sorted by path relative to `root`; own outputs
    (by name, or under a path in `excluded`) are left out and added to `skipped`."""
    found: list[tuple[str, InputSource]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        kept_dirs = []
        for dirname in sorted(dirnames):
            if dirname.startswith("."):
                continue
            if _is_excluded(here / dirname, excluded):
                skipped.append(str(here / dirname))
                continue
            if _is_save_to_disk_dir(here / dirname):
                sub = str(here / dirname)
                found.append((os.path.relpath(sub, root), InputSource(name=sub, kind="hf_disk", path=sub)))
            else:
                kept_dirs.append(dirname)
        dirnames[:] = kept_dirs  # os.walk descends only into these
        for filename in filenames:
            if filename.startswith("."):
                continue
            if _is_own_output(filename) or _is_excluded(here / filename, excluded):
                skipped.append(str(here / filename))
                continue
            full = str(here / filename)
            kind = _file_kind(full)
            if kind is not None:
                found.append((os.path.relpath(full, root), InputSource(name=full, kind=kind, path=full)))
    found.sort(key=lambda item: item[0])
    yield from (source for _, source in found)


def _hf_source(spec: str, data_files: Sequence[str] | None, streaming: bool) -> InputSource:
    body = spec[len(HF_PREFIX) :]
    dataset, _, config = body.partition(":")
    if not dataset:
        raise InputError(f"empty dataset name in {quoted(spec)} (expected hf:NAME or hf:NAME:CONFIG)")
    files: tuple[str, ...] | None = None
    if data_files:
        for pattern in data_files:
            if not _is_remote(pattern) and not glob.glob(pattern, recursive=True):
                raise InputError(f"data file not found for {quoted(spec)}: {quoted(pattern)}")
        files = tuple(data_files)
    _check_hub_dataset(spec, dataset, config or None)
    return InputSource(
        name=spec,
        kind="hf_load",
        dataset=dataset,
        config=config or None,
        data_files=files,
        streaming=streaming,
    )


def _is_remote(pattern: str) -> bool:
    return "://" in pattern


def _check_hub_dataset(spec: str, dataset: str, config: str | None) -> None:
    """Fail now, in one line, when a Hub dataset cannot be had: `load_dataset` would otherwise
    retry for half a minute, log pages of retries and leave one reject behind.

    Offline (``HF_HUB_OFFLINE=1``) the local cache is asked; online, one metadata request with
    a short timeout and no retry. Packaged builders (``hf:json``...) and local paths are not
    on the Hub and are not checked.
    """
    from huggingface_hub import constants

    try:
        from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES as packaged
    except ImportError:  # a private name: without it, the common builders
        packaged = {"json", "csv", "parquet", "arrow", "text", "imagefolder", "audiofolder", "webdataset"}
    if dataset in packaged or os.path.exists(dataset):
        return
    if constants.HF_HUB_OFFLINE:
        import datasets

        try:
            datasets.load_dataset_builder(dataset, config)
        except Exception as exc:  # datasets raises many unrelated types for a dataset it cannot find
            raise InputError(
                f"{quoted(spec)}: not in the local cache and the Hugging Face Hub is off (HF_HUB_OFFLINE is set): "
                f"{one_line(exc)}"
            ) from None
        return
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().dataset_info(dataset, timeout=HUB_CHECK_TIMEOUT)
    except GatedRepoError:
        return  # it exists; the loader will say what access it needs
    except RepositoryNotFoundError:
        raise InputError(
            f"{quoted(spec)}: no such dataset on the Hugging Face Hub (or it is private and no token is set)"
        ) from None
    except Exception as exc:  # connection, DNS, TLS, proxy and HTTP errors of several libraries
        raise InputError(
            f"{quoted(spec)}: cannot reach the Hugging Face Hub ({one_line(exc)}); "
            "set HF_HUB_OFFLINE=1 to read it from the local cache"
        ) from None


# --- reading each kind -------------------------------------------------------------------------


def _iter_jsonl_checked(source: InputSource, split: str) -> Iterator[SourceRecord]:
    """`iter_jsonl`, with a truncated or corrupt file turned into an `InputError`."""
    last_line = 0
    try:
        for item in iter_jsonl(source.path or source.name):
            last_line = item.line
            yield item if item.source == source.name else dataclasses.replace(item, source=source.name)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(
            f"cannot read {quoted(source.name)} after line {last_line}: {one_line(exc)}"
            + (" (truncated or corrupt gzip?)" if isinstance(exc, EOFError | gzip.BadGzipFile) else "")
        ) from exc


def _iter_json_array(source: InputSource, split: str) -> Iterator[SourceRecord]:
    """A JSON array of records, parsed whole (not streamed); a single object is one record.

    When the whole does not parse because one element is too deep or holds a lone surrogate,
    the array is split into its elements (without recursion) and each is read on its own, so
    that one element is rejected (and, being JSON, still written back) and the others kept.
    """
    path = source.path or source.name
    try:
        text = Path(path).read_bytes().removeprefix(BOM)
    except OSError as exc:
        raise InputError(f"cannot read {quoted(source.name)}: {exc.strerror or exc}") from exc
    if not text.strip():  # an empty file holds no records, as an empty JSON Lines file
        return
    try:
        data = parse_json_line(text)
    except (ValueError, UnicodeDecodeError) as exc:
        spans = json_spans(text)
        if spans is None:
            raise InputError(f"{quoted(source.name)} is neither a JSON array of records nor JSON Lines: {exc}") from exc
        yield from _json_elements(source.name, text, spans)
        return
    records = data if isinstance(data, list) else [data]
    for number, record in enumerate(records, start=1):
        yield SourceRecord(source=source.name, line=number, record=record)


def _json_elements(name: str, text: bytes, spans: list[tuple[int, int]]) -> Iterator[SourceRecord]:
    for number, (start, end) in enumerate(spans, start=1):
        # Whitespace between tokens goes (a JSON string holds no raw line break): one line each.
        raw = text[start:end].replace(b"\r", b"").replace(b"\n", b"")
        item = parse_record(name, number, raw)
        # A good element is written from its parsed value, as every JSON-array record is.
        yield item if item.error is not None else dataclasses.replace(item, raw=None)


def _iter_parquet(source: InputSource, split: str, handle: Any = None) -> Iterator[SourceRecord]:
    """Rows of a parquet file, a record batch at a time, JSON-typed columns decoded back.

    `handle` is an open file to read instead of the path (the Ray engine's, on any filesystem
    pyarrow supports: `iter_parquet_handle`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trajectory_compressor.read.arrow_values import special_columns, to_json

    path = source.path or source.name
    try:
        parquet_file = pq.ParquetFile(handle if handle is not None else path)
        schema = parquet_file.schema_arrow
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot open parquet file {quoted(source.name)}: {one_line(exc)}") from exc
    json_fields = [field.name for field in schema if _contains_json_type(field.type)]
    decoders = {name: _json_decoder(schema.field(name).type) for name in json_fields}
    encoded = [name for name in special_columns(schema) if name not in decoders]
    number = 0
    try:
        for batch in parquet_file.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for row in _batch_rows(batch):
                number += 1
                if isinstance(row, str):  # this row's values do not convert (invalid UTF-8 text)
                    yield SourceRecord(source=source.name, line=number, error=row)
                    continue
                for name, decode in decoders.items():
                    row[name] = decode(row[name])
                for name in encoded:
                    row[name] = to_json(row[name])
                yield SourceRecord(source=source.name, line=number, record=row)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read parquet file {quoted(source.name)} after row {number}: {one_line(exc)}") from exc
    finally:
        parquet_file.close()


def iter_parquet_handle(name: str, handle: Any) -> Iterator[SourceRecord]:
    """The records of an open Parquet file (a pyarrow file object), numbered and decoded as a local file's."""
    return _iter_parquet(InputSource(name=name, kind="parquet", path=name), "train", handle)


def _batch_rows(batch: Any) -> list[Any]:
    """The batch's rows as dicts; a row Arrow cannot convert becomes its one-line error instead."""
    try:
        return batch.to_pylist()
    except (UnicodeDecodeError, ValueError):
        rows: list[Any] = []
        for i in range(batch.num_rows):
            try:
                rows.append(batch.slice(i, 1).to_pylist()[0])
            except (UnicodeDecodeError, ValueError) as exc:
                rows.append(f"unreadable values: {one_line(exc)}")
        return rows


def source_column_types(sources: Sequence[InputSource]) -> dict[str, Any]:
    """Arrow types of every column of the columnar inputs, read from their schemas, so a Parquet
    or ``hf`` output can restore them (see `arrow_values.carried_columns`).

    A column two inputs give different types is left out (it is then inferred from its values).
    """
    found: dict[str, Any] = {}
    conflicting: set[str] = set()
    for source in sources:
        for name, arrow_type in _column_types_of(source).items():
            if found.setdefault(name, arrow_type) != arrow_type:
                conflicting.add(name)
    return {name: arrow_type for name, arrow_type in found.items() if name not in conflicting}


def _column_types_of(source: InputSource) -> dict[str, Any]:
    try:
        if source.kind == "parquet":
            import pyarrow.parquet as pq

            schema = pq.read_schema(source.path or source.name)
        elif source.kind == "hf_disk":
            import datasets

            loaded = datasets.load_from_disk(source.path or source.name)
            if isinstance(loaded, datasets.DatasetDict):
                loaded = next(iter(loaded.values()))
            schema = loaded.features.arrow_schema
        else:
            return {}
    except Exception:  # an unreadable input is reported by the run itself, not here
        return {}
    from trajectory_compressor.read.arrow_values import carried_columns

    json_fields = {field.name for field in schema if _contains_json_type(field.type)}
    return {name: t for name, t in carried_columns(schema).items() if name not in json_fields}


def _contains_json_type(arrow_type: Any) -> bool:
    import pyarrow as pa

    if isinstance(arrow_type, pa.JsonType):
        return True
    if pa.types.is_struct(arrow_type):
        return any(_contains_json_type(field.type) for field in arrow_type)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _contains_json_type(arrow_type.value_type)
    return False


def _json_decoder(arrow_type: Any) -> Any:
    """A function turning `to_pylist()` output of `arrow_type` back into plain JSON values.

    Columns (or nested fields) that mixed types when written are stored as Arrow JSON text
    (see `write.converters`); reading them back as objects makes parquet round trips lossless.
    """
    import pyarrow as pa

    if isinstance(arrow_type, pa.JsonType):
        return lambda value: None if value is None else orjson.loads(value)
    if pa.types.is_struct(arrow_type):
        fields = [(field.name, _json_decoder(field.type)) for field in arrow_type]

        def decode_struct(value: Any) -> Any:
            if value is None:
                return None
            for name, decode in fields:
                if name in value:
                    value[name] = decode(value[name])
            return value

        return decode_struct
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        decode_item = _json_decoder(arrow_type.value_type)
        return lambda value: None if value is None else [decode_item(item) for item in value]
    return lambda value: value


def _iter_hf_disk(source: InputSource, split: str) -> Iterator[SourceRecord]:
    """Rows of a ``save_to_disk`` directory (memory-mapped Arrow, read in batches)."""
    import datasets

    try:
        loaded = datasets.load_from_disk(source.path or source.name)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load dataset directory {quoted(source.name)}: {one_line(exc)}") from exc
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            splits = ", ".join(sorted(loaded)) or "none"
            raise InputError(f"split {split!r} not in {quoted(source.name)} (splits: {splits})")
        loaded = loaded[split]
    yield from _iter_rows(source, loaded.iter(batch_size=HF_DISK_BATCH_ROWS), batched=True)


def _iter_hf_load(source: InputSource, split: str) -> Iterator[SourceRecord]:
    """Rows of `datasets.load_dataset`, streamed unless `source.streaming` is False."""
    import datasets

    kwargs: dict[str, Any] = {"split": split, "streaming": source.streaming}
    if source.data_files:
        # Keyed by the requested split, so `--split test` works with a plain list of files.
        kwargs["data_files"] = {split: list(source.data_files)}
    if source.dataset == "json" and "parse_agent_traces" in _json_config_fields():
        # Rows are trajectories to rewrite as they are: never let the loader reshape them.
        kwargs["parse_agent_traces"] = False
    try:
        loaded = datasets.load_dataset(source.dataset, source.config, **kwargs)
    except Exception as exc:  # datasets raises many unrelated types (hub, builder, split errors)
        raise InputError(f"cannot load {quoted(source.name)}: {one_line(exc)}") from exc
    yield from _iter_rows(source, iter(loaded), batched=False)


def _json_config_fields() -> set[str]:
    try:
        from datasets.packaged_modules.json.json import JsonConfig
    except ImportError:
        return set()
    return {field.name for field in dataclasses.fields(JsonConfig)}


def _iter_rows(source: InputSource, rows: Iterator[Any], *, batched: bool) -> Iterator[SourceRecord]:
    from trajectory_compressor.read.arrow_values import to_json  # pyarrow: only for dataset inputs

    number = 0
    try:
        for item in rows:
            for row in _unbatch(item) if batched else (item,):
                number += 1
                # Binary, decimal and temporal values become JSON (see `arrow_values`).
                yield SourceRecord(source=source.name, line=number, record=to_json(dict(row)))
    except Exception as exc:  # a streamed dataset surfaces file, parse and network errors here
        raise InputError(f"cannot read {quoted(source.name)} after record {number}: {one_line(exc)}") from exc


def _unbatch(batch: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    columns = list(batch)
    for values in zip(*(batch[column] for column in columns), strict=True):
        yield dict(zip(columns, values, strict=True))
