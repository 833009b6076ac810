"""What a Ray run checks and settles on the driver before Ray starts: the settings only the local
engine has, the `-o` a Ray run can write, Ray Client, local paths made absolute, the local lock.

Kept apart from `run` (the driver itself) so that each stays small enough to read whole; nothing
here starts Ray or writes a byte but the lock beside a local output.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from trajectory_compressor.ray.layout import RayOutputLayout, filesystem_of
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import ConfigError, RunConfig
from trajectory_compressor.write.collisions import input_files, refuse_foreign_report, refuse_overwrites, run_outputs
from trajectory_compressor.write.lock import OutputLock
from trajectory_compressor.write.output_format import output_format_for
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.run_files import OutputError

RAY_FORMATS = ("jsonl", "parquet")
DATASET_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".jsonl.gz", ".ndjson.gz")  # gzip: refused by its name


def check_supported(config: RunConfig, output_format: str) -> None:
    """Refuse, in one line, the settings only the local engine has."""
    refused = {
        "--num-shards (Ray spreads the rows itself)": config.select.num_shards > 1,
        "--strict": config.strict,
        "--html-report": config.output.html_report is not None,
        "--responses": config.llm.responses is not None,
        "--batch (the batch rounds run on the local engine)": config.batch.enabled,
        "--metrics (the Ray layout names it)": config.output.metrics is not None,
    }
    for name, given in refused.items():
        if given:
            raise ConfigError(f"{name} is not supported with --engine ray")
    if output_format not in RAY_FORMATS:
        raise ConfigError(f"--engine ray writes jsonl or parquet part files, not {output_format}")


def default_cache_folder(output: str) -> str | None:
    """`<parent>/.<stem>.ray-cache/` beside a local output; None for a URI (pass --cache)."""
    if is_uri(output):
        return None
    layout = RayOutputLayout.beside(output)
    parent, name = posixpath.split(layout.report)
    return os.path.join(parent or ".", "." + name.removesuffix(".report.json") + ".ray-cache")


def ray_output_format(output: str, explicit: str | None) -> str:
    """`jsonl` or `parquet`: `--output-format`, else the suffix of the folder `-o` names.

    A Ray run writes one folder of part files, named by `-o`. The local engine's readings of a
    name without a dataset suffix (a directory to mirror each input into, or a datasets folder)
    have no Ray counterpart, so such an `-o` is refused with the name to give instead.
    """
    name = output.rstrip("/")
    if explicit is None and not name.lower().endswith(DATASET_SUFFIXES):
        what = "is a directory" if not is_uri(name) and os.path.isdir(name) else "has no .jsonl or .parquet suffix"
        example = posixpath.join(name or "/", "compressed.jsonl")
        raise ConfigError(
            f"--engine ray writes one folder of part files, named by -o with its format's suffix: {output} {what};"
            f" give e.g. -o {example} (or .parquet), or --output-format jsonl|parquet"
        )
    return output_format_for(name, explicit)


def absolute_sources(sources: list[InputSource]) -> list[InputSource]:
    """Local inputs opened by absolute path (each node would resolve a relative one against its own
    working directory); their names, which the metrics show, stay as given."""
    return [
        replace(source, path=os.path.abspath(source.path)) if source.path and not is_uri(source.path) else source
        for source in sources
    ]


def refuse_ray_client(config: RunConfig) -> None:
    """Ray Client (`ray://`): Ray Data does not run over it with the Ray this tool is tested with
    (`'Worker' object has no attribute 'core_worker'`), so say so before anything starts."""
    address = config.ray_address or os.environ.get("RAY_ADDRESS", "")
    if address.startswith("ray://"):
        raise ConfigError(
            f"Ray Client ({address}) cannot run Ray Data jobs: submit the run as a job instead, "
            "ray job submit --address http://HEAD:8265 -- trajectory-compressor compress ... --engine ray "
            "(README: Running on Ray)"
        )


def output_lock(layout: RayOutputLayout) -> contextlib.AbstractContextManager[Any]:
    """One run per output, as the local engine's (`write.lock`): the locks beside a local output's
    folders and report, held by the driver from before Ray starts to the end (none for a URI)."""
    if is_uri(layout.data):
        return contextlib.nullcontext()
    data, metrics, over_limit, rejects, report = (
        Path(getattr(layout, name)) for name in ("data", "metrics", "over_limit", "rejects", "report")
    )
    return OutputLock(OutputPaths(data, metrics, report, over_limit, rejects))


def on_local_disk(path: str) -> str | None:
    """The local path `path` names: itself, or a `file://` URI's path; None for an object store's URI."""
    if not is_uri(path):
        return path
    return filesystem_of(path)[1] if path.startswith("file:") else None


def refuse_local_collisions(output: str, sources: list[InputSource], overwrite: bool) -> None:
    """On the local disk (a path or a `file://` URI), as the local engine: no output folder is an
    input file or holds one (the run would delete it as an old part), and no report beside them is
    a user's own file (unless `overwrite`). Only for a local path, once: a `file://` output's run
    counted an input in its own folders, deleted it, then stopped, the file gone."""
    local = on_local_disk(output)
    if local is None:
        return
    layout = RayOutputLayout.beside(local)
    refuse_overwrites(run_outputs(layout.as_dict()), input_files(sources))
    if not overwrite:
        refuse_foreign_report(Path(layout.report))  # beside the folders: a user's own file replaced
    elif os.path.isdir(layout.report):  # --overwrite replaces a file; a folder failed the run's last step
        raise OutputError(f"{layout.report} is a folder; the run's report is written there: choose another -o")


def cache_folder_of(config: RunConfig, output: str, say: Callable[[str], None]) -> str | None:
    """The folder of the workers' summary cache files: `--cache PATH`'s folder, else
    `.<stem>.ray-cache/` beside a local output; None for a URI output without `--cache` (said).

    A folder that is, or lies in, one of the run's own folders is refused (exit 2): the workers'
    `worker-*.sqlite3` files landed in the dataset folder (`--cache out/x.jsonl/s.sqlite3`), the
    run said `completed`, and its same command was then refused, the folder holding files this
    tool does not write as parts."""
    given = config.llm.cache_path
    folder = os.path.dirname(os.path.abspath(given)) if given else default_cache_folder(output)
    if folder is None:
        say("warning: no --cache folder for a remote output: summaries will not be cached")
        return None
    local = on_local_disk(output)
    if local is not None:
        real = os.path.realpath(folder)
        for own in RayOutputLayout.beside(os.path.abspath(local)).folders().values():
            if os.path.commonpath([real, os.path.realpath(own)]) == os.path.realpath(own):
                raise OutputError(
                    f"--cache {given} would put the workers' cache files in the run's own folder {own}: "
                    "choose a --cache outside the output's folders"
                )
    return folder
