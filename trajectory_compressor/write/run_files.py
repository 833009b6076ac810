"""The files a run writes, committed in checkpoints so a killed run resumes byte-identically.

Every output is first appended to a file in a hidden work folder beside the output
(`.<name>.work/`). A checkpoint flushes and fsyncs those files, then atomically replaces
`state.json` with the number of input rows committed and each file's byte length. A resumed
run truncates each file back to its committed length and skips that many input rows, so rows
written after the last checkpoint are simply written again, identically. Only when the run
finishes are the files moved to their final names, so a partial output never looks complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

STATE_VERSION = 1
PART_NAMES = ("data", "metrics", "over_limit", "rejects")


class ResumeMismatchError(RuntimeError):
    """An unfinished run with other inputs or settings left its work folder here."""


@dataclass(frozen=True)
class OutputPaths:
    """Where each final file goes, derived from the dataset path unless the user moved it."""

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

    def as_dict(self) -> dict[str, str]:
        return {name: str(getattr(self, name)) for name in ("data", "metrics", "report", "over_limit", "rejects")}


def output_stem(path: Path) -> str:
    """`out/x.jsonl.gz` -> `x`; `out/x.parquet` -> `x`; `out/ds` (an HF dataset dir) -> `ds`."""
    name = path.name
    for suffix in (".jsonl.gz", ".jsonl", ".ndjson", ".json", ".parquet"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def write_json_atomically(path: Path, value: Any, *, durable: bool = False) -> None:
    """Write `value` as JSON to a temporary name beside `path`, then rename it into place.

    A reader never sees a half-written file; `durable` also fsyncs it before the rename (for
    the checkpoint that a resumed run trusts).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=None if durable else 2, ensure_ascii=False)
        handle.write("\n")
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temporary, path)


def fingerprint(parts: dict[str, Any]) -> str:
    """A stable hash of what determines the outputs (inputs and settings)."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


class RunFiles:
    """Append-only work files plus the checkpoint that says how much of them is committed."""

    def __init__(self, paths: OutputPaths, run_fingerprint: str, *, resume: bool = True) -> None:
        self.paths = paths
        self.fingerprint = run_fingerprint
        self.work_dir = paths.data.parent / f".{paths.data.name}.work"
        self.state_path = self.work_dir / "state.json"
        self._handles: dict[str, IO[bytes]] = {}
        self.rows_committed = 0
        self.resumed_state: dict[str, Any] | None = None
        self._open(resume)

    def _open(self, resume: bool) -> None:
        state = self._read_state() if resume else None
        if state is not None and state.get("fingerprint") != self.fingerprint:
            raise ResumeMismatchError(
                f"{self.work_dir} holds an unfinished run with other inputs or settings; "
                "re-run with the same command to resume it, or pass --no-resume to start over"
            )
        if state is None and self.work_dir.exists():
            shutil.rmtree(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        offsets: dict[str, int] = state["offsets"] if state else {}
        for name in PART_NAMES:
            path = self.part_path(name)
            handle = open(path, "r+b" if path.exists() and state else "w+b")  # noqa: SIM115 - kept open for the run
            handle.truncate(offsets.get(name, 0))
            handle.seek(0, os.SEEK_END)
            self._handles[name] = handle
        if state:
            self.rows_committed = int(state["rows_committed"])
            self.resumed_state = state

    def _read_state(self) -> dict[str, Any] | None:
        try:
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            return None
        return state

    def part_path(self, name: str) -> Path:
        return self.work_dir / f"{name}.jsonl"

    def write(self, name: str, line: bytes) -> None:
        """Append one JSON line (without its newline) to a work file."""
        handle = self._handles[name]
        handle.write(line)
        handle.write(b"\n")

    def checkpoint(self, rows_committed: int, extra: dict[str, Any]) -> None:
        """Make everything written so far durable and record how far it goes."""
        offsets = {}
        for name, handle in self._handles.items():
            handle.flush()
            os.fsync(handle.fileno())
            offsets[name] = handle.tell()
        state = {
            "version": STATE_VERSION,
            "fingerprint": self.fingerprint,
            "rows_committed": rows_committed,
            "offsets": offsets,
            "saved_at": time.time(),
            **extra,
        }
        write_json_atomically(self.state_path, state, durable=True)
        self.rows_committed = rows_committed

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()

    def finalize(self, convert_data: Any = None, *, write_data: bool = True) -> None:
        """Move the work files to their final names and remove the work folder.

        `convert_data(jsonl_path, final_path)` writes the dataset in another format; without it
        the JSONL work file is renamed into place. Side files are renamed, never rewritten.
        A dry run (`write_data=False`) writes no dataset.
        """
        self.close()
        for name in PART_NAMES:
            final = getattr(self.paths, name)
            if name == "data" and not write_data:
                continue
            final.parent.mkdir(parents=True, exist_ok=True)
            if name == "data" and convert_data is not None:
                convert_data(self.part_path(name), final)
            else:
                os.replace(self.part_path(name), final)
        shutil.rmtree(self.work_dir, ignore_errors=True)
