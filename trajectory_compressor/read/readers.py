"""The table of input file formats, which both engines read through, and `iter_source` over it.

A file is found by its suffix (`expand_inputs` in a local directory; the Ray engine at a URI
too) and read by its format's `read`, which is given the run's read settings (`ReadConfig`, as
datatrove's readers take theirs); the Ray engine numbers every file's rows before it reads them
in parallel, with the format's `count` when it has a cheap one. A file mirrored into an output
folder keeps its name, or takes the format's `written_as` suffix (a JSON array is written as
JSON Lines). So a new file format is one `FileFormat` entry in `FILE_FORMATS` (and its reader's
module): the local engine, the Ray engine, directory walks, URI listings, the mirrored output
names (`write.paths`) and the "supported" lists in messages follow from it.

- ``.jsonl``, ``.jsonl.gz``, ``.ndjson``, ``.ndjson.gz``: JSON Lines, streamed line by line;
- ``.json``: a JSON array of records (or one object), **not streamed** (the whole file is
  parsed at once, so keep them small or convert them to JSONL); a ``.json`` file whose first
  line is a complete JSON object is JSON Lines under another name and is streamed as such.
  Local files only: its kind is told from the local file's first line;
- ``.parquet``: streamed by record batches, the record number being the 1-based row index;
- ``.jsonl.zst``, ``.ndjson.zst``: zstandard-compressed JSON Lines, streamed (pyarrow's zstd
  codec), line by line as ``.jsonl``; mirrored into an output folder as ``.jsonl``.

Inputs that are not files (``save_to_disk`` directories, ``hf:`` specs) are `datasets`'s to
read (`read.hf_datasets`), and only the local engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.hf_datasets import read_hf_disk, read_hf_load
from trajectory_compressor.read.json_files import (
    JSONL_SUFFIXES,
    count_jsonl,
    json_file_kind,
    read_json_array,
    read_jsonl,
)
from trajectory_compressor.read.jsonl_zst import JSONL_ZST_SUFFIXES, count_jsonl_zst, read_jsonl_zst
from trajectory_compressor.read.parquet import count_parquet, read_parquet
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.types import SourceRecord

Reader = Callable[[InputSource, ReadConfig], Iterator[SourceRecord]]


@dataclass(frozen=True)
class FileFormat:
    """How one file format is found, read, counted and named in an output folder, by both engines.

    `read(source, settings)` yields the file's records numbered from 1 and raises `InputError`
    (naming the file and the last record read) when the file breaks; `settings` are the run's
    read settings, for a reader that has any. `count`, when set, says how many records `read`
    yields without parsing them (a file that breaks counts one more, the record that says so);
    without it the Ray engine reads the file to count it. `kind_of_file`, when set, tells from
    a local file which entry reads it (a ``.json`` file holding JSON Lines is ``jsonl``). A
    format with `on_uris` is also listed and read at URIs (`read.files` opens both).
    `written_as`, when set, is the suffix its file takes when mirrored into an output folder
    (an output format's: ``.jsonl``), else it keeps its own.
    """

    kind: str
    suffixes: tuple[str, ...]
    read: Reader
    count: Callable[[InputSource, ReadConfig], int] | None = None
    kind_of_file: Callable[[str], str] | None = None
    on_uris: bool = True
    written_as: str | None = None


FILE_FORMATS: dict[str, FileFormat] = {
    entry.kind: entry
    for entry in (
        FileFormat("jsonl", JSONL_SUFFIXES, read_jsonl, count=count_jsonl),
        FileFormat(
            "json", (".json",), read_json_array, kind_of_file=json_file_kind, on_uris=False, written_as=".jsonl"
        ),
        FileFormat("parquet", (".parquet",), read_parquet, count=count_parquet),
        FileFormat("jsonl.zst", JSONL_ZST_SUFFIXES, read_jsonl_zst, count=count_jsonl_zst, written_as=".jsonl"),
    )
}


def supported_suffixes(*, at_uri: bool = False) -> tuple[str, ...]:
    """Every suffix a format claims (of those read at URIs, with `at_uri`), for messages."""
    return tuple(suffix for entry in FILE_FORMATS.values() if entry.on_uris or not at_uri for suffix in entry.suffixes)


def format_of_file(name: str, *, at_uri: bool = False) -> FileFormat | None:
    """The format whose suffix `name` ends with (of those read at URIs, with `at_uri`), or None."""
    lower = name.lower()
    for entry in FILE_FORMATS.values():
        if (entry.on_uris or not at_uri) and lower.endswith(entry.suffixes):
            return entry
    return None


def file_kind(path: str) -> str | None:
    """The kind of a local file by its suffix (and, for some formats, its first bytes), or None."""
    entry = format_of_file(path)
    if entry is None:
        return None
    return entry.kind_of_file(path) if entry.kind_of_file is not None else entry.kind


def iter_source(source: InputSource, settings: ReadConfig | None = None) -> Iterator[SourceRecord]:
    """Yield every record of `source` as `SourceRecord(source=name, line=n, record=...)`, n from 1,
    read with the run's read `settings` (the defaults when None: the ``train`` split...).

    A line of JSON Lines that does not parse is yielded with `error` set (the row is rejected, the
    run goes on); a source that cannot be opened or breaks mid-way (a truncated gzip, a corrupt
    parquet page, a missing split) raises `InputError` naming the source and the last record read,
    because nothing after that point can be trusted.
    """
    settings = settings or ReadConfig()
    entry = FILE_FORMATS.get(source.kind)
    if entry is not None:
        yield from entry.read(source, settings)
    elif source.kind == "hf_disk":
        yield from read_hf_disk(source, settings.split)
    elif source.kind == "hf_load":
        yield from read_hf_load(source, settings.split)
    else:
        raise InputError(f"unknown input kind {source.kind!r}: {quoted(source.name)}")
