"""Choosing the output format from a path or a flag: no pyarrow, so a JSONL run never imports it."""

from __future__ import annotations

import os
from pathlib import Path

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted

OUTPUT_FORMATS: tuple[str, ...] = ("jsonl", "jsonl.gz", "parquet", "hf")
# The file formats by the suffixes that name them (longest first: `.jsonl.gz` before `.jsonl`).
OUTPUT_SUFFIXES: dict[str, tuple[str, ...]] = {
    "jsonl.gz": (".jsonl.gz", ".ndjson.gz"),
    "jsonl": (".jsonl", ".ndjson"),
    "parquet": (".parquet",),
}


class ConversionError(UsageError, ValueError):
    """The JSONL file cannot be converted (unreadable, not JSON objects, unknown format)."""


def output_format_for(path: str, explicit: str | None = None) -> str:
    """The output format for `path`: `explicit` if given, else by suffix.

    ``.jsonl`` / ``.ndjson`` → jsonl, ``.jsonl.gz`` / ``.ndjson.gz`` → jsonl.gz, ``.parquet`` →
    parquet, a path ending in ``/``, an existing directory, or a name without any suffix → hf.
    """
    if explicit is not None:
        fmt = explicit.lower().lstrip(".")
        if fmt not in OUTPUT_FORMATS:
            raise ConversionError(f"unknown output format {explicit!r} (expected {', '.join(OUTPUT_FORMATS)})")
        return fmt
    lower = path.lower()
    for fmt, suffixes in OUTPUT_SUFFIXES.items():
        if lower.endswith(suffixes):
            return fmt
    if path.endswith(("/", os.sep)) or Path(path).is_dir() or not Path(path).suffix:
        return "hf"
    raise ConversionError(
        f"cannot tell the output format of {quoted(path)} from its suffix "
        "(use .jsonl, .jsonl.gz, .parquet, a directory for a datasets save_to_disk, or --output-format)"
    )
