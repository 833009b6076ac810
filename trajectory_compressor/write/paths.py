"""Every file name a run writes, decided in one place.

The dataset path is the user's; everything else is derived from it here: the side files
(metrics, report, over-limit list, rejects), the hidden work folder and the lock files, a
shard's own names, and the names an input gets when mirrored into an output directory. The
pipeline, `merge` and the collision checks all ask this module, so two of them never disagree.
The suffixes come from the two format tables, never from a list of this module's: the input
formats' (`read.readers.FILE_FORMATS`, with the suffix a format's file takes mirrored) and the
output formats' (`write.output_format.OUTPUT_SUFFIXES`), so a new reader's files are named too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trajectory_compressor.read.readers import FILE_FORMATS, format_of_file
from trajectory_compressor.write.output_format import OUTPUT_SUFFIXES

_WORK_PREFIX, _WORK_SUFFIX = ".", ".work"  # the hidden work folder beside the dataset: `.x.jsonl.work`


@dataclass(frozen=True)
class OutputPaths:
    """Where each final file goes, derived from the dataset path unless the user moved it.

    The one place that names the files beside an output (`beside`, `work_dir`, `lock`): the
    pipeline, `merge` and the collision checks all ask here.
    """

    data: Path
    metrics: Path
    report: Path
    over_limit: Path
    rejects: Path

    @classmethod
    def beside(cls, data: Path, metrics: Path | None = None) -> OutputPaths:
        stem = output_stem(data)
        parent = data.parent
        return cls(
            data=data,
            metrics=metrics or parent / f"{stem}.metrics.jsonl",
            report=parent / f"{stem}.report.json",
            over_limit=parent / f"{stem}.over_limit.jsonl",
            rejects=parent / f"{stem}.rejects.jsonl",
        )

    @property
    def work_dir(self) -> Path:
        return self.data.parent / f"{_WORK_PREFIX}{self.data.name}{_WORK_SUFFIX}"

    @staticmethod
    def dataset_of_work_dir(work_dir: Path) -> str | None:
        """The name of the dataset a work folder (`.x.jsonl.work`) belongs to; None for any other
        name (a report's `outputs.work_dir` is read back this way)."""
        dataset = work_dir.name.removeprefix(_WORK_PREFIX).removesuffix(_WORK_SUFFIX)
        return dataset if dataset and len(dataset) == len(work_dir.name) - len(_WORK_PREFIX + _WORK_SUFFIX) else None

    @property
    def batch_dir(self) -> Path:
        """The `--batch` folder: request files and the ids of what was uploaded and submitted.

        Apart from the work folder, which a run may start over: forgetting a batch already
        created would pay for it twice.
        """
        return self.data.parent / f".{self.data.name}.batches"

    @property
    def lock(self) -> Path:
        return lock_beside(self.data)

    @property
    def side_locks(self) -> set[Path]:
        """The locks of the side files (a second run may share them without sharing the dataset)."""
        return {lock_beside(path) for path in (self.metrics, self.report, self.over_limit, self.rejects)} - {self.lock}

    def as_dict(self) -> dict[str, str]:
        return {name: str(getattr(self, name)) for name in ("data", "metrics", "report", "over_limit", "rejects")}


def written_by_a_run(data: Path) -> bool:
    """Whether the data file `data` is an output of a run: its report lies beside it (a finished
    run), or its work folder (a run killed while moving its files into place, which the next run
    finishes). A file in an output folder with neither is the user's (`read.expand` refuses to
    hide it)."""
    paths = OutputPaths.beside(data)
    return paths.report.is_file() or paths.work_dir.is_dir()


def lock_beside(path: Path) -> Path:
    """The lock file that guards the output file `path`."""
    return path.parent / f".{path.name}.lock"


def data_suffixes() -> list[str]:
    """Every suffix a dataset file may end with, longest first: the output formats' and the input
    formats' (an output named like an input, with `--output-format`)."""
    output = (suffix for suffixes in OUTPUT_SUFFIXES.values() for suffix in suffixes)
    inputs = (suffix for entry in FILE_FORMATS.values() for suffix in entry.suffixes)
    return sorted({*output, *inputs}, key=len, reverse=True)


def output_stem(path: Path) -> str:
    """`out/x.jsonl.gz` -> `x`; `out/x.ndjson.gz` -> `x`; `out/x.parquet` -> `x`; `out/ds` -> `ds`."""
    name = path.name
    for suffix in data_suffixes():
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def mirrored_name(path: Path, roots: list[Path]) -> Path:
    """An input file's name under an output folder: its path below the input folder it was found
    in (or its name), with its format's `written_as` suffix (`written_name`)."""
    for root in roots:
        try:
            relative = path.resolve().relative_to(root.resolve())
        except ValueError:
            continue
        if str(relative) != ".":
            return written_name(relative)
    return written_name(Path(path.name))


def written_name(path: Path) -> Path:
    """`path` with the suffix its input format says its output takes (`FileFormat.written_as`: a
    JSON array, or a compressed file this tool does not write, becomes JSON Lines); else as it is."""
    entry = format_of_file(path.name)
    if entry is None or entry.written_as is None:
        return path
    lower = path.name.lower()
    suffix = max((suffix for suffix in entry.suffixes if lower.endswith(suffix)), key=len)
    return path.with_name(path.name[: -len(suffix)] + entry.written_as)


def shard_path(path: Path, fmt: str, index: int, count: int) -> Path:
    """`out/x.jsonl` -> `out/x.shard-00002-of-00008.jsonl`: each shard writes its own files."""
    stem = output_stem(path)
    suffix = path.name[len(stem) :]
    return path.with_name(f"{stem}.shard-{index:05d}-of-{count:05d}{suffix}")
