"""Where a Ray run's outputs go, and which files in them this tool wrote: only those are ever deleted.

A Ray run writes four folders of part files, a folder of the parts' records (`parts`) and a
report beside them (see `write`). A re-run must clear the parts it does not keep (a resume keeps
those whose records verify), but a folder may hold anything: a Spark job's
`part-00000-<uuid>.snappy.parquet` looks like a part too. So a folder this tool writes into
carries a marker file, put there when the folder was empty, and a file counts as the run's own
only in a marked folder and only under a name this tool gives (`part-<12 digits>.jsonl|parquet|json`,
or that name's temporary `.part-….tmp`; in the records folder, the run's `run.json` and `claim.json` too). A
folder holding anything else is refused before a byte is written (`check_output_folders`). The
storage check's probe (`.trajectory-compressor-probe-<32 hex>`), which a driver killed during the
check leaves behind, is ours by its name alone, marker or not: the next run deletes it, where it
was refused over it.

No Ray here: `eval` reads a Ray run's folders with it, with or without the `[ray]` extra.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajectory_compressor.errors import UsageError
from trajectory_compressor.write.paths import output_stem

MARKER = ".trajectory-compressor-ray"  # hidden: Ray Data, pyarrow and this tool's readers skip it
MARKER_TEXT = b"Part files written by trajectory-compressor --engine ray; a re-run replaces them.\n"
RUN_RECORD = "run.json"  # in the records folder: the run's fingerprint and what it hashed (`parts.RunRecord`)
CLAIM = "claim.json"  # in the records folder: which run holds the output (`claim`); never deleted by a claiming run
_RUN_FILE = re.compile(r"(part-\d{12}\.(?:jsonl|parquet|json))|(\.part-\d{12}\.(?:jsonl|parquet|json)\.tmp)")
# A claim's temporary name is its writer's own (`claim.write_claim`): `.claim.json.<run id>.tmp`.
_RECORDS_FILE = re.compile(
    rf"{_RUN_FILE.pattern}|(\.?(?:{re.escape(RUN_RECORD)}|{re.escape(CLAIM)})(?:\.tmp)?)"
    rf"|(\.{re.escape(CLAIM)}\.[0-9a-f]{{16}}\.tmp)"
)
_PART = re.compile(r"part-\d{12}\.(?:jsonl|parquet)")
# The multinode storage check's probe file (`storage`): ours by its name, in any folder of the run.
PROBE_PREFIX = ".trajectory-compressor-probe-"
_PROBE = re.compile(rf"{re.escape(PROBE_PREFIX)}[0-9a-f]{{32}}")


class OutputFolderError(UsageError):
    """An output folder this run cannot write into without touching files it did not write."""


@dataclass(frozen=True)
class RayOutputLayout:
    """Where a Ray run's outputs go, on any filesystem pyarrow supports."""

    data: str  # the dataset folder
    metrics: str
    over_limit: str
    rejects: str
    records: str  # the record of each part written (`parts`): a resume keeps the parts that verify
    report: str

    @classmethod
    def beside(cls, output: str) -> RayOutputLayout:
        output = output.rstrip("/")
        parent, name = posixpath.split(output)
        stem = output_stem(Path(name))
        side = (lambda suffix: posixpath.join(parent, f"{stem}.{suffix}")) if parent else (lambda s: f"{stem}.{s}")
        return cls(
            output, side("metrics"), side("over_limit"), side("rejects"), side("part_records"), side("report.json")
        )

    def outputs(self) -> dict[str, str]:
        """The folders of part files, by the names of the local engine's outputs."""
        return {"data": self.data, "metrics": self.metrics, "over_limit": self.over_limit, "rejects": self.rejects}

    def folders(self) -> dict[str, str]:
        """Every folder the run writes into (and marks as its own)."""
        return {**self.outputs(), "part_records": self.records}

    def as_dict(self) -> dict[str, str]:
        return {**self.folders(), "report": self.report}


def filesystem_of(path: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path on it) for a local path or a URI."""
    import pyarrow.fs as pafs

    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def write_whole(folder: str, name: str, data: bytes, writer: str = "") -> None:
    """Write `folder/name` under a temporary name, then move it: a file there is whole.

    A retried task writes the same name again, and the move replaces the first one. `writer`
    makes the temporary name that writer's own, for a file several processes write (the claim:
    with one name, one run's move took another's file away, and that run's move failed).
    """
    from trajectory_compressor.faults import boundary

    filesystem, path = filesystem_of(folder)
    temporary = posixpath.join(path, f".{name}.{writer}.tmp" if writer else f".{name}.tmp")
    with filesystem.open_output_stream(temporary) as stream:
        stream.write(data)
    boundary("ray-file-written")  # where a test holds a write task, its file not yet moved into place
    filesystem.move(temporary, posixpath.join(path, name))


def delete_if_present(folder: str, name: str) -> None:
    """Delete `folder/name` when it is there: a part file an earlier attempt of a write task left,
    which this attempt does not write (a side output its rows no longer have)."""
    filesystem, path = filesystem_of(folder)
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_file(posixpath.join(path, name))


def part_stem(first_row: int) -> str:
    """A part's name without its suffix: the input-stream index of its first row, so names sort in input order."""
    return f"part-{first_row:012d}"


def is_part(name: str) -> bool:
    """A finished part file's name (not its temporary name, not the marker)."""
    return _PART.fullmatch(name) is not None


def _own_names(key: str) -> re.Pattern[str]:
    """The names of the files this tool writes in the folder `key` of `RayOutputLayout.folders()`."""
    return _RECORDS_FILE if key == "part_records" else _RUN_FILE


def foreign_file(folder: str, own: re.Pattern[str] = _RUN_FILE) -> str | None:
    """The first file (by name) in `folder` that this tool did not write; None if there is none.

    A missing or empty folder holds none. In a folder without the marker every file is foreign
    (nothing proves this tool wrote it) but the storage check's probe, ours by its name; in a
    marked one, any file or folder not named as a part, a part's temporary file or a probe is
    (`own`: the records folder holds the run's `RUN_RECORD` too).
    `folder` itself being a file is foreign too.
    """
    import pyarrow.fs as pafs

    filesystem, path = filesystem_of(folder)
    kind = filesystem.get_file_info(path).type
    if kind == pafs.FileType.NotFound:
        return None
    if kind != pafs.FileType.Directory:
        return folder
    entries = sorted(filesystem.get_file_info(pafs.FileSelector(path)), key=lambda info: info.base_name)
    marked = any(info.base_name == MARKER for info in entries)
    for info in entries:
        if info.base_name == MARKER:
            continue
        named = _PROBE.fullmatch(info.base_name) is not None or (marked and own.fullmatch(info.base_name) is not None)
        ours = info.type == pafs.FileType.File and named
        if not ours:
            return posixpath.join(folder.rstrip("/"), info.base_name)
    return None


def check_output_folders(layout: RayOutputLayout) -> None:
    """Refuse, in one line, output folders holding anything this tool did not write (nothing is touched)."""
    for key, folder in layout.folders().items():
        try:
            found = foreign_file(folder, _own_names(key))
        except (OSError, ValueError) as exc:  # no access, or a URI pyarrow has no filesystem for
            raise OutputFolderError(f"cannot list the output folder {folder}: {exc}") from None
        if found == folder:
            raise OutputFolderError(
                f"{folder} is a file; --engine ray writes a folder of part files there: choose another -o"
            )
        if found is not None:
            raise OutputFolderError(
                f"the output folder {folder} holds {found}, which this tool did not write; --engine ray replaces "
                "only its own part files: choose an empty or new folder for -o"
            )


def claim_output_folders(
    layout: RayOutputLayout, keep: Mapping[str, Collection[str]] | None = None, *, dataset: bool = True
) -> None:
    """Make the run's folders, mark them as this tool's, and delete the parts an earlier run left,
    but those a resume keeps (`keep`: folder key of `layout.folders()` -> file names).

    `dataset=False` (a dry run, which writes no dataset): the dataset folder is neither made nor
    touched. A dry run over a completed output once deleted every part of its dataset here.
    Checked again first: a file that appeared since the run started stops it here, untouched.
    """
    check_output_folders(layout)
    import pyarrow.fs as pafs

    for key, folder in layout.folders().items():
        if key == "data" and not dataset:
            continue
        kept = (keep or {}).get(key, ())
        filesystem, path = filesystem_of(folder)
        filesystem.create_dir(path, recursive=True)
        entries = filesystem.get_file_info(pafs.FileSelector(path))
        if not any(info.base_name == MARKER for info in entries):
            with filesystem.open_output_stream(posixpath.join(path, MARKER)) as stream:
                stream.write(MARKER_TEXT)
        for info in entries:
            name = info.base_name
            if _PROBE.fullmatch(name) or (_own_names(key).fullmatch(name) and name not in kept and CLAIM not in name):
                filesystem.delete_file(info.path)  # a probe: a driver killed during the storage check left it


def holds_parts(folder: str) -> bool:
    """Whether `folder` (a local path or a URI) holds a finished part file: a dataset, whole or not."""
    import pyarrow.fs as pafs

    filesystem, path = filesystem_of(folder)
    entries = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return any(info.type == pafs.FileType.File and is_part(info.base_name) for info in entries)


def part_files(folder: str | Path) -> list[Path]:
    """A local Ray output folder's finished parts, in input order (their names sort so)."""
    return sorted(path for path in Path(folder).iterdir() if path.is_file() and is_part(path.name))


def is_ray_output_folder(path: str | Path) -> bool:
    """Whether `path` is a folder a Ray run of this tool wrote (it holds the marker)."""
    return (Path(path) / MARKER).is_file()
