"""A Ray run's report on its filesystem: its `inputs` entries, an earlier run's status, written whole."""

from __future__ import annotations

import contextlib
import os
import posixpath
from typing import Any

import orjson

from trajectory_compressor.ray.layout import filesystem_of
from trajectory_compressor.ray.read import InputCount
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.read.sources import InputSource


def input_entry(source: InputSource, count: InputCount) -> dict[str, Any]:
    """An input as the report's `inputs` records it (the local engine's shape: what `eval --input` checks)."""
    path = source.path or source.name
    return {
        "name": source.name,
        "path": path if is_uri(path) else os.path.realpath(path),
        "bytes": count.bytes,
        "sha256": count.sha256,
    }


def fingerprinted_entry(source: InputSource, count: InputCount) -> dict[str, Any]:
    """An input as the run's fingerprint hashes it: its report entry, and a directory's contents
    (`InputCount.contents`), which the report does not name (the local engine's shape)."""
    entry = input_entry(source, count)
    return entry if count.contents is None else {**entry, "contents": count.contents}


def report_status(path: str) -> str | None:
    """The status in an earlier run's report, None when there is none (or it is not one of ours)."""
    try:
        filesystem, target = filesystem_of(path)
        with filesystem.open_input_stream(target) as stream:
            report = orjson.loads(stream.read())
    except (OSError, ValueError, orjson.JSONDecodeError):
        return None
    status = report.get("status") if isinstance(report, dict) else None
    return status if isinstance(status, str) else None


def forget_report(path: str) -> None:
    """An earlier run's report goes when a run starts, before any of its parts: an output without its
    report is unfinished. A delete the store refuses stops the run (nothing else touched yet):
    ignored, a run stopped while it deleted the old parts left them named by a `completed` report."""
    if report_status(path) is None:
        return
    filesystem, target = filesystem_of(path)
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_file(target)


def write_report(path: str, report: dict[str, Any]) -> None:
    """The report, written whole (a temporary name, then moved), on any filesystem."""
    filesystem, target = filesystem_of(path)
    parent = posixpath.dirname(target)
    filesystem.create_dir(parent, recursive=True)
    temporary = posixpath.join(parent, "." + posixpath.basename(target) + ".tmp")
    with filesystem.open_output_stream(temporary) as stream:
        stream.write(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    filesystem.move(temporary, target)
