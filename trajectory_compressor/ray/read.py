"""Input files into a Ray Dataset of rows, each with its index in the whole input stream.

The local engine numbers rows by their position in one stream over all inputs (`index` in the
metrics; what `--sample-percent` samples on). Ray reads files in parallel, so each file's rows
are counted first (one Ray task per file, with its format's cheap `count` where it has one:
lines without parsing for JSONL, the footer for Parquet), which gives every file its first
index; the files are then read in parallel, by the local engine's own readers
(`read.readers.FILE_FORMATS`, which open local paths and URIs alike), and every row carries
`row_index`, its index in the stream. Counting costs a read of the JSONL bytes, at disk or
network speed: a few per cent of tokenizing them.

A row travels as the bytes it came in as (`raw`, a JSONL line, parsed again by the worker that
compresses it: the same `parse_record` as the local engine, so rejects are the same too), or
as JSON (`payload`, a Parquet or JSON-array record, decoded here as the local reader does), or
as the error that made it unreadable (`error`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from trajectory_compressor.errors import RunAborted
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.parts import holds
from trajectory_compressor.read.readers import FILE_FORMATS
from trajectory_compressor.read.select import records_of, sampled
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import ReadConfig, RunConfig, SelectConfig
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


@dataclass(frozen=True)
class InputCount:
    """An input file as a Ray task found it: its records, and its bytes and sha256 (the report's `inputs`)."""

    records: int
    bytes: int | None
    sha256: str | None
    stat: tuple[int, int] | None = None  # (bytes, modification time in ns) before it was counted
    # A directory input's (`save_to_disk`): the sha256 of its files' names and bytes, for the run's
    # fingerprint only (the report's `inputs` keep the local engine's None for what is no file).
    contents: str | None = None


def count_inputs(sources: Sequence[InputSource], read: ReadConfig) -> list[InputCount]:
    """Each source counted and hashed in parallel (one Ray task per file), in order."""
    import ray

    return list(ray.get([_count.remote(source, read) for source in sources]))


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


def limit_end(total: int, select: SelectConfig) -> int:
    """The first stream index past the rows `--limit` selects (`total` without a limit).

    The rows a run computes are the selected rows below it: a bound on the stream, not a count
    of the rows that went by, so a resume that skips the rows it kept selects the same rows.
    """
    if select.limit is None:
        return total
    selected = 0
    for index in range(total):
        percent = select.sample_percent
        if percent is None or percent >= 100 or sampled(index, percent, select.seed):
            if selected == select.limit:
                return index
            selected += 1
    return total


def read_inputs(
    sources: Sequence[InputSource],
    config: RunConfig,
    counts: Sequence[int] | None = None,
    *,
    skip: Sequence[tuple[int, int]] = (),
    stats: Sequence[tuple[int, int] | None] = (),
) -> Any:
    """A `ray.data.Dataset` of the selected rows of `sources` (`ROW_SCHEMA`), in input order.

    `counts` (each file's records, from `count_inputs`) saves counting again when the caller has
    them. `skip`: sorted, disjoint [start, end) runs of row indexes not to read (the rows of the
    parts a resume keeps); a file all of whose rows are skipped is not opened. `stats`: each
    file's (bytes, modification time) when it was counted (`InputCount.stat`): a file read with
    others, or with other records than counted, stops the run (`changed_input`).
    """
    import ray.data

    if counts is None:
        counts = [count.records for count in count_inputs(sources, config.read)]
    end = limit_end(sum(counts), config.select)
    entries = []
    offset = 0
    for ordinal, count in enumerate(counts):
        if offset < end and not _covered(skip, offset, min(offset + count, end)):
            stat = stats[ordinal] if ordinal < len(stats) else None
            entries.append({"ordinal": ordinal, "offset": offset, "count": count, "stat": list(stat or (-1, -1))})
        offset += count
    if not entries:
        return ray.data.from_arrow(ROW_SCHEMA.empty_table())
    select = config.select
    kwargs = {"sources": list(sources), "read": config.read, "percent": select.sample_percent, "seed": select.seed,
              "end": end, "skip": [tuple(run) for run in skip]}  # fmt: skip
    return ray.data.from_items(entries, override_num_blocks=len(entries)).map_batches(
        read_files,  # type: ignore[arg-type]  # Ray's stub types `fn` without the `fn_kwargs` it is given
        fn_kwargs=kwargs,
        batch_size=1,
        batch_format="pyarrow",
        num_cpus=0.25,
    )


def _covered(runs: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    """Whether every row in [start, end) is in one of `runs`."""
    return start >= end or any(first <= start and end <= last for first, last in runs)


def count_records(source: InputSource, read: ReadConfig) -> int:
    """How many records `source` yields, as the local reader counts them (a broken file: one more):
    its format's `count` when it has one (JSONL lines, the Parquet footer), else by reading it."""
    entry = FILE_FORMATS.get(source.kind)
    if entry is not None and entry.count is not None:
        return entry.count(source, read)
    return sum(1 for _ in records_of(source, read))


def count_and_hash(source: InputSource, read: ReadConfig) -> InputCount:
    """The Ray task per input: its records, and its bytes and sha256 for the report's `inputs`
    (what `eval --input` checks a run against; a directory input has none)."""
    stat = stat_of(source.path or source.name)
    records = count_records(source, read)
    try:
        digest, size = _sha256_of(source.path or source.name)
    except (OSError, ValueError):  # a directory (a `save_to_disk` input), or a stream that cannot be read again
        return InputCount(records, None, None, contents=directory_digest(source.path or source.name))
    return InputCount(records, size, digest, stat)


def directory_digest(path: str) -> str | None:
    """The sha256 of a local directory's files, their relative names, sizes and bytes, in sorted
    order; None when `path` is no local directory.

    A `save_to_disk` input has no sha256 of its own: its run was fingerprinted by its record count
    alone, so a resume after the dataset was saved again with other rows of the same count kept
    every old part and said `completed` with the old rows."""
    import os

    if not os.path.isdir(path):
        return None
    digest = hashlib.sha256()
    for folder, subfolders, names in os.walk(path):
        subfolders.sort()
        for name in sorted(names):
            file = os.path.join(folder, name)
            digest.update(os.path.relpath(file, path).encode("utf-8", "surrogateescape") + b"\0")
            with open(file, "rb") as stream:
                while chunk := stream.read(1 << 20):
                    digest.update(chunk)
            digest.update(b"\0")
    return digest.hexdigest()


def _sha256_of(path: str) -> tuple[str, int]:
    from trajectory_compressor.ray.layout import filesystem_of

    filesystem, target = filesystem_of(path)
    digest = hashlib.sha256()
    size = 0
    with filesystem.open_input_stream(target) as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def row_of(index: int, item: SourceRecord) -> dict[str, Any]:
    """One record as a `ROW_SCHEMA` row: its bytes when it has them, else its JSON, else its error."""
    if item.raw is not None:
        return {"row_index": index, "source": item.source, "line": item.line, "raw": item.raw}
    if item.error is None:
        return {"row_index": index, "source": item.source, "line": item.line, "payload": dumps(item.record)}
    return {"row_index": index, "source": item.source, "line": item.line, "error": item.error}


def read_files(
    batch: pa.Table,
    *,
    sources: list[InputSource],
    read: ReadConfig,
    percent: float | None,
    seed: int,
    end: int,
    skip: list[tuple[int, int]],
) -> Iterator[pa.Table]:
    """map_batches function: each file of the batch read whole, its rows out in small blocks
    (the selected rows below `end`, but those in `skip`). A file that yields other than the
    records counted (it changed since; another node sees another version) stops the run."""
    columns = (batch.column(name).to_pylist() for name in ("ordinal", "offset", "count", "stat"))
    for ordinal, offset, count, counted in zip(*columns, strict=True):
        _check_unchanged(sources[ordinal], tuple(counted))
        rows: list[dict[str, Any]] = []
        number = -1
        for number, item in enumerate(records_of(sources[ordinal], read)):
            if number >= count:
                raise changed_input(sources[ordinal], f"{count} records when counted, more when read")
            index = offset + number
            if index >= end:
                break
            if percent is not None and percent < 100 and not sampled(index, percent, seed):
                continue
            if skip and holds(skip, index):
                continue
            rows.append(row_of(index, item))
            if len(rows) >= READ_BATCH_ROWS:
                yield pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
                rows = []
        else:
            if number + 1 != count:
                raise changed_input(sources[ordinal], f"{count} records when counted, {number + 1} when read")
            _check_unchanged(sources[ordinal], tuple(counted))
        if rows:
            yield pa.Table.from_pylist(rows, schema=ROW_SCHEMA)


def _check_unchanged(source: InputSource, counted: tuple[int, ...]) -> None:
    """Stop the run if `source` is not the file that was counted (its bytes and modification time, as
    this node sees it), before and after it is read: same records, other bytes, would go unseen."""
    if counted[0] < 0:
        return
    now = stat_of(source.path or source.name)
    if now is None:
        raise changed_input(source, f"{counted[0]} bytes when counted, not found when read")
    if now[0] != counted[0]:
        raise changed_input(source, f"{counted[0]} bytes when counted, {now[0]} when read")
    if now != counted:
        raise changed_input(source, f"{counted[0]} bytes when counted, as many but modified since when read")


def stat_of(path: str) -> tuple[int, int] | None:
    """(bytes, modification time in ns) of a file on its filesystem; None when it has none (a folder)."""
    import pyarrow.fs as pafs

    from trajectory_compressor.ray.layout import filesystem_of

    try:
        filesystem, target = filesystem_of(path)
        info = filesystem.get_file_info(target)
    except (OSError, ValueError):
        return None
    if info.type != pafs.FileType.File or info.size is None or info.mtime_ns is None:
        return None
    return int(info.size), int(info.mtime_ns)


def changed_input(source: InputSource, what: str) -> RunAborted:
    """An input whose records are not those counted: its rows' indexes would be another file's, or
    missing. The run stops (exit 1) rather than write them; a re-run counts it again."""
    return RunAborted(
        f"the input {quoted(source.name)} changed while the run read it ({what}); re-run once it no longer "
        "changes, with --no-resume (the parts written so far are of the version counted)",
        ExitCode.FAILED,
    )


def _remote_count() -> Any:
    import ray

    return ray.remote(num_cpus=0.25)(count_and_hash)


class _LazyRemote:
    """`count_and_hash` as a Ray task, made on first use (so importing this module needs no Ray)."""

    def __init__(self) -> None:
        self._task: Any = None

    def remote(self, *args: Any) -> Any:
        if self._task is None:
            self._task = _remote_count()
        return self._task.remote(*args)


_count = _LazyRemote()
