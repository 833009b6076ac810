"""The one guard every command that writes files passes first: no output lands on a file it reads
or on another of its own outputs.

`compress` (both engines), `eval`, `analyze`, `requests` and `merge` each name the files they
will write and the files they read (inputs, metrics, reports, shard files, a responses file),
and call `refuse_overwrites` before anything is written. Paths are compared resolved (symlinks followed),
and an output that is a directory holding a file read counts too (a `datasets` output directory
is replaced whole). A collision is one line and exit 2 (`OutputError`), and nothing is touched.

An HTML page is also refused onto an existing file that is not one of our pages: a command knows
the files it reads, not the dataset or metrics of another run a user may aim `--html-report` at
by mistake (`analyze in.jsonl --html-report out/x.metrics.jsonl`), nor a site's own `index.html`.
Pages are written anew on every run, so overwriting an older page of ours (it carries `PAGE_MARK`;
those written before the mark, their stylesheet) or an empty file is fine; anything else is
somebody's data.

And `compress` never replaces a file it did not write (`refuse_foreign_outputs`): `-o out/` over
a folder that already holds an unrelated `agent_runs.jsonl` (not an input, so the guard above
lets it pass) would replace 250 rows of somebody's data with the run's 3. A run's files are
known by what a run leaves beside them: its report (`<stem>.report.json`, our JSON), its work
folder (an interrupted run) or its batch folder; an existing file with none of these beside it
is refused, one line naming it and `--overwrite`, the flag that allows it. `merge -o` asks the
same of the merged run's files, and `requests -o` of its batch file (`refuse_foreign_file`: an
existing file is replaced only if its first line is one of our request lines).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.write.html_report import PAGE_MARK
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.run_files import OutputError

# Pages written before the mark: their stylesheet's first rule, in their first kilobyte.
_OLDER_PAGE_STYLE = b"color: #1d2433;\n         background: #f6f7f9;"
_PAGE_HEAD_BYTES = 4096

# A run's report is a few kB; a larger file at its name is not one.
_REPORT_MAX_BYTES = 64 << 20

_ROLES = {
    "data": "the output",
    "metrics": "the metrics file",
    "report": "the report",
    "over_limit": "the over-limit list",
    "rejects": "the rejects file",
    "part_records": "the parts' records",  # --engine ray
}


@dataclass(frozen=True)
class NamedFile:
    """A file a command reads or writes, with what it is to the user ("the metrics file")."""

    role: str
    path: str | os.PathLike[str]
    note: str = ""  # e.g. " (from in/a.jsonl)": which of several outputs
    html_page: bool = False  # written only over nothing, or over an older HTML page

    def __str__(self) -> str:
        return f"{self.role} {quoted(self.path)}{self.note}"


def html_report_file(path: str | os.PathLike[str], note: str = "") -> NamedFile:
    """A command's `--html-report` page: it may replace an older page, never other data."""
    return NamedFile("the HTML report", path, note, html_page=True)


def input_files(sources: Iterable[InputSource]) -> list[NamedFile]:
    """The local files among a command's inputs (an `hf:` dataset or a URI is no file here)."""
    return [NamedFile("the input", s.path) for s in sources if s.path is not None and "://" not in s.path]


def run_outputs(paths: Mapping[str, str], note: str = "") -> list[NamedFile]:
    """The files of a run's output set (`OutputPaths.as_dict()`, a Ray layout's), each with its role."""
    return [NamedFile(_ROLES[name], path, note) for name, path in paths.items()]


def refuse_overwrites(writes: Iterable[NamedFile], reads: Iterable[NamedFile] = ()) -> None:
    """Raise `OutputError` naming the first file written that is a file read, or that two outputs share."""
    read_at: dict[Path, NamedFile] = {}
    for named in reads:
        read_at.setdefault(_real(named.path), named)
    holding: dict[Path, NamedFile] = {}  # the folders holding a file read
    for real, named in read_at.items():
        for folder in real.parents:
            holding.setdefault(folder, named)
    written: dict[Path, NamedFile] = {}
    for named in writes:
        real = _real(named.path)
        read = read_at.get(real) or holding.get(real)
        if read is not None:
            raise OutputError(f"{named} would overwrite {read}; choose another path")
        if real in written:
            raise OutputError(f"{named} would overwrite {written[real]}; choose distinct output paths")
        if named.html_page and real.exists() and not _is_our_page(real):
            raise OutputError(f"{named} would overwrite a file that is not a page of this tool; choose another path")
        written[real] = named


def refuse_foreign_outputs(paths: OutputPaths, note: str = "", *, data: bool = True) -> None:
    """Raise `OutputError` naming the first existing file of `paths` this tool did not write.

    `data`: whether the dataset path is written (not by a dry run). A folder at a file's path
    (an `--output-format hf` dataset, or anything else) counts as a file there. A side file at a
    path of its own (`--metrics PATH`) is this run's only when the report beside the dataset
    lists it there."""
    report = _report_beside(paths)
    why = _not_ours(paths, report)
    listed = report.get("outputs", {}) if report is not None else {}
    for name, path in paths.as_dict().items():
        if (name != "data" or data) and os.path.lexists(path):
            if why is None and (name == "data" or _listed_as(listed.get(name), path)):
                continue
            raise _foreign(
                NamedFile(_ROLES[name], path, note), why or "is not this output's (its report lists another)"
            )


def refuse_dry_run_over_dataset(dataset: str | os.PathLike[str], *, held: bool) -> None:
    """Raise `OutputError` when a dry run (without `--overwrite`) is pointed at a dataset (`held`).

    A dry run writes no dataset, but its metrics and report go beside it: over a finished run's
    they replaced the ones describing its dataset (the local engine), or the run deleted the
    dataset's parts with the rest (`--engine ray`). Both engines refuse it alike; `--overwrite`
    lets the plan's metrics and report replace them, the dataset kept as it is."""
    if held:
        raise OutputError(
            f"{quoted(dataset)} holds a dataset: a dry run writes none, and its metrics and report would replace "
            "the ones describing it; choose another -o for the dry run, or pass --overwrite (the dataset is kept)"
        )


def refuse_foreign_file(named: NamedFile, ours: Callable[[Path], bool]) -> None:
    """Raise `OutputError` if `named` exists and `ours` does not recognise it as this tool's
    (a `requests` batch file: its first line is one of our request lines)."""
    path = Path(named.path)
    if os.path.lexists(path) and not (path.is_file() and ours(path)):
        raise _foreign(named)


def _foreign(named: NamedFile, whose: str = "was not written by this tool") -> OutputError:
    """The one-line error for an existing file this run may not replace; `whose`: why, as far as
    it can tell."""
    return OutputError(f"{named} exists and {whose}: choose another -o, or pass --overwrite to replace it")


def _listed_as(listed: Any, path: str) -> bool:
    """Whether a report's path for a file (`listed`; None: it lists none) is `path`: the same file
    when the report's path is absolute, the same name when it is relative (to a directory the
    report does not record)."""
    if not isinstance(listed, str):
        return True
    if os.path.isabs(listed):
        return _real(listed) == _real(path)
    return Path(listed).name == Path(path).name


def written_by_this_tool(paths: OutputPaths) -> bool:
    """Whether `paths` are a run's own: its report beside them, or its work or batch folder."""
    return _not_ours(paths, _report_beside(paths)) is None


def refuse_foreign_report(path: Path) -> None:
    """Raise `OutputError` if a file at `path`, where a run writes its report, is not a run's report
    (`--engine ray`, whose folders `ray.layout` checks, writes its report beside them)."""
    if os.path.lexists(path) and _run_report(path) is None:
        raise _foreign(NamedFile(_ROLES["report"], path))


def _report_beside(paths: OutputPaths) -> dict[str, Any] | None:
    """The report at `paths.report` when it is one of a run's (a status and its outputs), else None."""
    return _run_report(paths.report)


def _run_report(path: Path) -> dict[str, Any] | None:
    """The report at `path` when it is one of a run's (a status and its outputs), else None."""
    try:
        if not path.is_file() or path.stat().st_size > _REPORT_MAX_BYTES:
            return None
        report = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if isinstance(report, dict) and isinstance(report.get("status"), str) and isinstance(report.get("outputs"), dict):
        return report
    return None


def _not_ours(paths: OutputPaths, report: dict[str, Any] | None) -> str | None:
    """None when `paths` are a run's own, else whose they are as far as can be told.

    Its own: the report beside them names this dataset (written, or being written: an
    interrupted run's work folder) or none (a dry run's); with no report, its work or batch
    folder is there. The side files are named by the dataset's stem, so `x.parquet` and
    `x.jsonl` share them: a report of `x.parquet`'s run does not make `x.metrics.jsonl` this
    `x.jsonl` run's to replace, whether that run finished or was interrupted."""
    if report is not None:
        owner = _dataset_of(report["outputs"])
        if owner is not None and owner != paths.data.name:
            return f"belongs to the run that wrote {quoted(owner)} (the report beside it says so)"
        return None
    if paths.work_dir.is_dir() or paths.batch_dir.is_dir():
        return None
    return "was not written by this tool (no report or work folder of a run beside it)"


def _dataset_of(outputs: dict[str, Any]) -> str | None:
    """The name of the dataset a report's run wrote (`data`) or was writing (its work folder,
    `.x.jsonl.work`); None for a dry run's, which writes none."""
    data, work = outputs.get("data"), outputs.get("work_dir")
    if isinstance(data, str):
        return Path(data).name
    return OutputPaths.dataset_of_work_dir(Path(work)) if isinstance(work, str) else None


def _is_our_page(path: Path) -> bool:
    """An existing regular file that is empty or blank (no data; shorter than the bytes read, so
    seen whole) or an HTML page this tool wrote: its head holds `PAGE_MARK`, or (a page of a
    version before the mark) it starts as an HTML document with our stylesheet."""
    if not path.is_file():
        return False  # a folder, a device, a socket: never replaced by a page
    with open(path, "rb") as handle:
        head = handle.read(_PAGE_HEAD_BYTES)
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    if not start:  # blank: empty only when read whole (blank lines first, then data, are data)
        return len(head) < _PAGE_HEAD_BYTES
    if not start.startswith((b"<!doctype html", b"<html")):
        return False
    return PAGE_MARK.encode() in head or _OLDER_PAGE_STYLE in head


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))
