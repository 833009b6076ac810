"""One input to read records from, and the error for an input that cannot be read.

The run reads many kinds of input the same way: every source yields `SourceRecord`s numbered
from 1, so the rest of the pipeline never asks where a row came from. `read.expand` turns
command-line arguments into `InputSource`s; `read.readers.iter_source` reads one, through the
table of file formats (`read.readers.FILE_FORMATS`) or a `datasets` reader (`read.hf_datasets`).

Why the shapes differ but the output does not: a record number is what the user needs to find a
bad row again (``file.jsonl:12``, ``data.parquet:40000``, ``hf:org/name:7``), and it is also what
`read.select.shard_filter` and resume key on.
"""

from __future__ import annotations

from dataclasses import dataclass

from trajectory_compressor.errors import UsageError


class InputError(UsageError, ValueError):
    """An input cannot be found, opened or read to its end; the message is one line naming it."""


@dataclass(frozen=True)
class InputSource:
    """One thing to read records from.

    `name` is what messages and `SourceRecord.source` show (the path as given, the URI, or the
    ``hf:`` spec). `kind` is a key of `read.readers.FILE_FORMATS` for a file, ``hf_disk`` for a
    ``save_to_disk`` directory or ``hf_load`` for an ``hf:`` spec. `path` is the file or
    directory for local kinds; `dataset`/`config`/`data_files`/`streaming` are the
    `load_dataset` arguments for ``hf_load``.
    """

    name: str
    kind: str
    path: str | None = None
    dataset: str | None = None
    config: str | None = None
    data_files: tuple[str, ...] | None = None
    streaming: bool = True
