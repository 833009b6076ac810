"""What a compress invocation writes: one job per output, and the checks that no two outputs collide.

An output file takes every input in order (one job); an output directory mirrors each input
file to the same relative name under it (one job each). Every path a job writes is compared,
resolved, with the inputs and with every other job's paths before anything is written
(`write.collisions`, the guard every command shares).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import ConfigError, OutputConfig, RunConfig, SelectConfig
from trajectory_compressor.write.collisions import (
    NamedFile,
    html_report_file,
    input_files,
    refuse_dry_run_over_dataset,
    refuse_foreign_outputs,
    refuse_overwrites,
    run_outputs,
)
from trajectory_compressor.write.output_format import ConversionError, output_format_for
from trajectory_compressor.write.paths import OutputPaths, mirrored_name, shard_path


@dataclass(frozen=True)
class CompressJob:
    """One output of a run: the sources it takes, and where its files go (its format resolved)."""

    sources: list[InputSource]
    output: Path
    output_format: str = "jsonl"
    metrics: Path | None = None
    html_report: Path | None = None


def refuse_empty_output(output_arg: str) -> None:
    """An empty `-o` (an unset shell variable: `-o "$OUT"`) is refused: as a path it is the
    current folder, which the run would fill with its inputs' mirrors."""
    if not output_arg:
        raise ConfigError("-o is an empty path: name an output file, or a folder ending with /")


def plan_jobs(
    inputs: Sequence[str], sources: list[InputSource], output_arg: str, outputs: OutputConfig, select: SelectConfig
) -> list[CompressJob]:
    """One job for an output file; one per input file for an output directory (names mirrored).

    An output is a directory to mirror into when it ends with "/" or already is a directory,
    unless `--output-format hf` asks for a Hugging Face dataset directory there.
    """
    refuse_empty_output(output_arg)
    output = Path(output_arg)
    mirror = outputs.output_format != "hf" and (output_arg.endswith(("/", os.sep)) or output.is_dir())
    if mirror and outputs.html_report:
        # One page shows one run; a folder output is one run per input file, each with its own
        # report, and a page merging them would show none of them as it ran.
        raise ConfigError(
            f"--html-report needs an output file: -o {quoted(output_arg)} is a folder, written as one run per "
            "input file; give a file (all inputs in one run) or run each input with its own --html-report"
        )

    def job(sources_: list[InputSource], path: Path) -> CompressJob:
        try:
            fmt = output_format_for(str(path), outputs.output_format)
        except ConversionError as exc:
            raise ConfigError(str(exc)) from None
        if select.num_shards > 1:
            path = shard_path(path, fmt, select.shard_index, select.num_shards)
        return CompressJob(
            sources=sources_,
            output=path,
            output_format=fmt,
            metrics=Path(outputs.metrics) if outputs.metrics and not mirror else None,
            html_report=Path(outputs.html_report) if outputs.html_report and not mirror else None,
        )

    if not mirror:
        if output.exists() and output.is_dir() and outputs.output_format != "hf":
            raise ConfigError(f"output {quoted(output)} is a directory")
        return [job(sources, output)]
    roots = [Path(arg) for arg in inputs if not arg.startswith("hf:") and Path(arg).is_dir()]
    jobs = []
    named: dict[Path, InputSource] = {}
    for source in sources:
        if source.path is None:
            raise ConfigError(f"{quoted(source.name)}: a dataset source needs an output file, not a directory")
        name = mirrored_name(Path(source.path), roots)
        if name in named:
            raise ConfigError(_same_name(named[name], source, output / name))
        named[name] = source
        jobs.append(job([source], output / name))
    return jobs


def _same_name(first: InputSource, second: InputSource, output: Path) -> str:
    """Why two inputs cannot share a folder output, and what works instead: files of one folder
    whose formats write one name (`a.json`, `a.jsonl`) need a rename; files named on the
    command line from two folders keep apart when their common folder is named (its files keep
    their paths below it); and a file output takes every input."""
    both = f"{quoted(first.name)} and {quoted(second.name)} would both be written to {quoted(output)}"
    one_file = f"write one file (-o {quoted(output.parent / ('all' + ''.join(output.suffixes)))})"
    if Path(first.path or "").resolve().parent == Path(second.path or "").resolve().parent:
        return f"{both} (both are written as JSON Lines); rename one, or {one_file}"
    return (
        f"{both}: a folder output names a file by its path below the input folder named, else by its file "
        f"name; name a folder holding both (its files keep their paths below it), or {one_file}"
    )


def check_output_paths(jobs: Sequence[CompressJob], sources: Sequence[InputSource], config: RunConfig) -> None:
    """Refuse outputs that would overwrite an input, the responses file, or one another, and
    (unless `--overwrite`) outputs onto existing files this tool did not write.

    Every file a run writes counts: the dataset, the metrics, the report, the over-limit list,
    the rejects and the HTML report (`write.collisions` compares them resolved).
    """
    reads = input_files(sources)
    if config.llm.responses:
        reads.append(NamedFile("the responses file", config.llm.responses))
    refuse_overwrites((named for job in jobs for named in _written_by(job)), reads)
    if not config.output.overwrite:
        for job in jobs:
            paths = OutputPaths.beside(job.output, job.metrics)
            if config.dry_run:
                refuse_dry_run_over_dataset(paths.data, held=os.path.lexists(paths.data))
            refuse_foreign_outputs(paths, _origin(job), data=not config.dry_run)


def _origin(job: CompressJob) -> str:
    return f" (from {quoted(job.sources[0].name)})" if len(job.sources) == 1 else ""


def _written_by(job: CompressJob) -> list[NamedFile]:
    origin = _origin(job)
    named = run_outputs(OutputPaths.beside(job.output, job.metrics).as_dict(), origin)
    if job.html_report is not None:
        named.append(html_report_file(job.html_report, origin))
    return named
