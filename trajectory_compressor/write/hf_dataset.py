"""A Hugging Face `datasets` folder (`save_to_disk`) made from an Arrow stream of the rows written.

`datasets` is imported when such a folder is made, not when the package loads: its import
costs about a second of start-up that other runs are spared.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa


def save_stream_as_dataset(stream_path: Path, folder: Path) -> None:
    """Save the rows of the Arrow IPC stream at `stream_path` as a `save_to_disk` folder.

    `datasets` fingerprints a file-backed table by its path, here a random scratch folder: the
    same rows would be written with a new `_fingerprint` (in `state.json`) on every run. Named
    by the rows instead, the folder is the same byte for byte, as every other format is."""
    import datasets

    table = datasets.table.MemoryMappedTable.from_file(str(stream_path))
    dataset = datasets.Dataset(table, fingerprint=_content_fingerprint(stream_path))
    bars_were_on = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # the run draws its own progress; keep stderr clean
    try:
        dataset.save_to_disk(str(folder))
    finally:
        if bars_were_on:
            datasets.enable_progress_bars()


def _content_fingerprint(path: Path) -> str:
    """A `datasets` fingerprint (16 hex digits, as its own) of the file at `path`."""
    digest = hashlib.blake2b(digest_size=8)
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def datasets_holds(arrow_type: pa.DataType) -> bool:
    """Whether `datasets` has a feature for `arrow_type`: it has none for a map (at any depth),
    which a Parquet input may carry; such a column is inferred from its JSON values instead."""
    import datasets

    try:
        datasets.Features.from_arrow_schema(pa.schema([pa.field("c", arrow_type)]))
    except (ValueError, TypeError, NotImplementedError):
        return False
    return True
