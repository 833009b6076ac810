"""The Ray Data engine: the same compress run, spread over a Ray cluster.

Where the work runs is kept apart from what it is: the rows go through the local engine's own
parts (`read.readers` / `read.jsonl`, `run.prepare.prepare_rows`, `run.row.RowFinisher`,
`write.report`), and this package only moves them across Ray:

    inputs.py   the input files, as the local engine lists them (or listed on any pyarrow filesystem)
    read.py     records per file (counted and hashed first, so every row has its input-stream index)
    limits.py   one async actor on the driver's node: `--max-concurrency`, `--rpm`, `--tpm`, usage
    cache.py    the summary cache on a shared folder: one SQLite file per worker, all read
    actor.py    the map_batches class: tokenizer and HTTP session once per actor, a batch's rows
                summarized concurrently on the actor's event loop
    engine.py   `compress_dataset(dataset, settings)`: a Dataset in, a Dataset out
    write.py    the Datasink: dataset, metrics, over-limit and rejects part files, each part's record
    parts.py    the parts' records: checked on the driver, the report's `files`, what a resume keeps
    storage.py  before any work on several nodes: is every local path the same storage on each node?
    losses.py   what of the cluster an error says was lost (the one line of exit 69)
    layout.py   the output folders: their names, and which files are the run's own (no Ray)
    session.py  the driver's Ray session: SIGTERM kept, stdout left to --json, `-q` kept quiet
    report.py   the report on any filesystem, its `inputs` entries
    run.py      the CLI's driver (`compress --engine ray`): check, read, map, write, verify, report

Ray is imported only inside this package, and only when it is used: the rest of
`trajectory_compressor` works without it (`pip install "trajectory-compressor[ray]"` adds it).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from trajectory_compressor.errors import UsageError

INSTALL_HINT = 'pip install "trajectory-compressor[ray]"'


def require_ray() -> None:
    """Raise a one-line `UsageError` naming the extra when Ray Data is not installed."""
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.data") is None:
        raise UsageError(f"--engine ray needs Ray Data, which is not installed: {INSTALL_HINT}")


def __getattr__(name: str) -> Any:
    """`trajectory_compressor.ray.compress_dataset`, imported (with Ray) on first use."""
    if name == "compress_dataset":
        from trajectory_compressor.ray.engine import compress_dataset

        return compress_dataset
    if name == "read_inputs":
        from trajectory_compressor.ray.read import read_inputs

        return read_inputs
    raise AttributeError(name)


__all__ = ["INSTALL_HINT", "compress_dataset", "read_inputs", "require_ray"]
