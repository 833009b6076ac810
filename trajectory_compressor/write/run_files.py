"""The files a run writes, committed in checkpoints so a killed run resumes byte-identically.

Every output is first appended to a file in a hidden work folder beside the output
(`.<name>.work/`). A checkpoint flushes and fsyncs those files, then atomically replaces
`state.json` with the number of input rows committed and, for each file, its committed length,
line count and the sha256 of those bytes (hashed as they are written, so a checkpoint costs no
re-read), and the run's fingerprint (its inputs and settings) with the parts it hashed, so that a
re-run with other inputs or settings is refused naming what differs (`run_fingerprint.py`; a
state written before the parts were kept has none, and is read as before). The state carries a
checksum of itself. A resumed run checks all of that (a damaged work folder is started over
with a warning, never trusted), truncates each file back to its committed length and skips that
many input rows, so rows written after the last checkpoint are simply written again, identically.

Finishing is a phase of its own: the last checkpoint says `finalizing`, then the files are moved
to their final names one by one, the report is written and the work folder removed. A run that
dies anywhere in there is finished by the next run of the same command: a file still in the
work folder is moved, a file already moved is checked against its recorded hash. So a partial
output never looks complete, and a complete one is never overwritten by a partial one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from trajectory_compressor.errors import UsageError
from trajectory_compressor.faults import boundary
from trajectory_compressor.messages import quoted
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.run_fingerprint import RunFingerprint, refusal

STATE_VERSION = 2
PART_NAMES = ("data", "metrics", "over_limit", "rejects")
_HASH_CHUNK = 1 << 20


class ResumeMismatchError(UsageError, RuntimeError):
    """An unfinished run with other inputs or settings left its work folder here."""


class OutputError(UsageError, RuntimeError):
    """An output cannot be written: permissions, a full disk, a path collision, another run on it."""


def fsync_dir(path: Path) -> None:
    """Make the renames inside `path` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def new_file_beside(target: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new file under a unique hidden name beside `target`, open for writing (fd, path).

    Its mode is what `open` gives any new file (0666 less the umask), so the output it is renamed
    into gets the same mode as the side files; `tempfile.mkstemp` would make it 0600.
    """
    while True:
        path = target.parent / f".{target.name}.{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


def write_json_atomically(path: Path, value: Any, *, durable: bool = False, hook: str | None = None) -> None:
    """Write `value` as JSON to a temporary name beside `path`, then rename it into place.

    A reader never sees a half-written file; `durable` also fsyncs it before the rename and the
    folder after it (for the checkpoint that a resumed run trusts). `hook` names the test
    boundaries before (`<hook>-write`) and after (`<hook>-renamed`) the rename.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=None if durable else 2, ensure_ascii=False)
        handle.write("\n")
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    if hook:
        boundary(f"{hook}-write")
    os.replace(temporary, path)
    if durable:
        fsync_dir(path.parent)
    if hook:
        boundary(f"{hook}-renamed")


def file_record(path: Path, limit: int | None = None) -> tuple[Any, int, int]:
    """(sha256 object, bytes, lines) of the first `limit` bytes of `path` (all of it without one)."""
    digest = hashlib.sha256()
    size = lines = 0
    with open(path, "rb") as handle:
        while limit is None or size < limit:
            chunk = handle.read(_HASH_CHUNK if limit is None else min(_HASH_CHUNK, limit - size))
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
            lines += chunk.count(b"\n")
    return digest, size, lines


def _state_checksum(state: dict[str, Any]) -> str:
    body = {key: value for key, value in state.items() if key != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


class RunFiles:
    """Append-only work files plus the checkpoint that says how much of them is committed."""

    def __init__(
        self,
        paths: OutputPaths,
        run_fingerprint: RunFingerprint | Callable[[], RunFingerprint],
        *,
        resume: bool = True,
        on_message: Callable[[str], None] | None = None,
    ) -> None:
        """`run_fingerprint`, or a function giving it, called once when first needed: at once
        to check a run to resume, else at the first checkpoint (so inputs can be hashed while
        the run starts)."""
        self.paths = paths
        self._fingerprint = run_fingerprint
        self.work_dir = paths.work_dir
        self.state_path = self.work_dir / "state.json"
        self._say = on_message or (lambda text: None)
        self._handles: dict[str, IO[bytes]] = {}
        self._hashes: dict[str, Any] = {}
        self._lines: dict[str, int] = {}
        self.rows_committed = 0
        self.resumed_state: dict[str, Any] | None = None
        self.phase = "running"
        self._state: dict[str, Any] | None = None
        self.files_written: dict[str, dict[str, Any]] = {}
        self._open(resume)

    @property
    def fingerprint(self) -> RunFingerprint:
        if callable(self._fingerprint):
            self._fingerprint = self._fingerprint()
        return self._fingerprint

    # ------------------------------------------------------------------ opening and checking
    def _open(self, resume: bool) -> None:
        state = self._trusted_state() if resume else None
        if state is None and self.work_dir.exists():
            shutil.rmtree(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        if state is not None and state["phase"] == "finalizing":
            self.phase = "finalizing"
        else:
            for name in PART_NAMES:
                path = self.part_path(name)
                handle = open(path, "r+b" if state else "w+b")  # noqa: SIM115 - kept open for the run
                if state:
                    handle.truncate(state["parts"][name]["bytes"])
                    boundary("truncate")
                handle.seek(0, os.SEEK_END)
                self._handles[name] = handle
                self._hashes.setdefault(name, hashlib.sha256())
                self._lines.setdefault(name, 0)
        if state is not None:
            self.rows_committed = state["rows_committed"]
            self.resumed_state = state
            self._state = state

    def _trusted_state(self) -> dict[str, Any] | None:
        """The checkpoint to resume from, or None to start over (a damaged one with a warning)."""
        if not self.state_path.exists():
            return None  # nothing committed yet
        try:
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            self._damaged(f"its state.json cannot be read ({exc})")
            return None
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            self._damaged("its state.json is from another version")
            return None
        if state.get("checksum") != _state_checksum(state):
            self._damaged("its state.json was changed after it was written")
            return None
        if state.get("fingerprint") != self.fingerprint.digest:
            # What differs, from the parts the checkpoint kept (none in one written before they were).
            changes = self.fingerprint.changed_since(state.get("fingerprint_parts"))
            raise ResumeMismatchError(refusal(f"{quoted(self.work_dir)} holds an unfinished run", changes))
        problem = self._problem(state)
        # A line per row, or per window with --windows (`metrics_lines`; a checkpoint written
        # before that count was kept holds one line per row).
        totals = state["totals"]
        expected_lines = totals.get("metrics_lines", totals.get("rows_selected"))
        if problem is None and state["parts"]["metrics"]["lines"] != expected_lines:
            problem = "its metrics file and its totals disagree"
        if problem:
            self._damaged(problem)
            return None
        return state

    def _damaged(self, reason: str) -> None:
        self._say(f"warning: the work folder {quoted(self.work_dir)} is damaged ({reason}); starting over")
        self._hashes.clear()
        self._lines.clear()

    def _problem(self, state: dict[str, Any]) -> str | None:
        """What is wrong with `state` or the files it describes, or None when a resume can trust it."""
        if not _is_count(state.get("rows_committed")):
            return "rows_committed is not a row count"
        if state.get("phase") not in ("running", "finalizing"):
            return "its phase is unknown"
        if not isinstance(state.get("totals"), dict):
            return "its totals are missing"
        parts = state.get("parts")
        if not isinstance(parts, dict) or set(parts) != set(PART_NAMES):
            return "its file records are missing"
        for name in PART_NAMES:
            record = parts[name]
            if not (
                isinstance(record, dict)
                and _is_count(record.get("bytes"))
                and _is_count(record.get("lines"))
                and _is_sha256(record.get("sha256"))
            ):
                return f"the record of its {name} file is malformed"
            problem = self._part_problem(name, record, finalizing=state["phase"] == "finalizing")
            if problem:
                return problem
        return None

    def _part_problem(self, name: str, record: dict[str, Any], *, finalizing: bool) -> str | None:
        path = self.part_path(name)
        if not path.is_file():
            final = getattr(self.paths, name)
            if finalizing and final.is_file() and final.stat().st_size == record["bytes"]:
                digest, _, _ = file_record(final)
                if digest.hexdigest() == record["sha256"]:
                    return None  # moved into place before the previous run stopped
            return f"{path.name} is missing"
        if path.stat().st_size < record["bytes"]:
            return f"{path.name} is shorter than its {record['bytes']} committed bytes"
        digest, _, lines = file_record(path, record["bytes"])
        if digest.hexdigest() != record["sha256"] or lines != record["lines"]:
            return f"{path.name} does not hold the bytes it committed"
        self._hashes[name], self._lines[name] = digest, lines
        return None

    def part_path(self, name: str) -> Path:
        return self.work_dir / f"{name}.jsonl"

    # ------------------------------------------------------------------ writing
    def write(self, name: str, line: bytes) -> None:
        """Append one JSON line (without its newline) to a work file."""
        line += b"\n"
        self._handles[name].write(line)
        self._hashes[name].update(line)
        self._lines[name] += 1

    def checkpoint(self, rows_committed: int, extra: dict[str, Any], *, phase: str = "running") -> None:
        """Make everything written so far durable and record how far it goes."""
        parts = {}
        for name, handle in self._handles.items():
            handle.flush()
            os.fsync(handle.fileno())
            parts[name] = {"bytes": handle.tell(), "lines": self._lines[name], "sha256": self._hashes[name].hexdigest()}
        state = {
            "version": STATE_VERSION,
            "fingerprint": self.fingerprint.digest,
            "fingerprint_parts": self.fingerprint.parts,  # what it hashed, so a refused resume says what differs
            "phase": phase,
            "rows_committed": rows_committed,
            "parts": parts,
            "saved_at": time.time(),
            **extra,
        }
        state["checksum"] = _state_checksum(state)
        write_json_atomically(self.state_path, state, durable=True, hook="checkpoint")
        self.rows_committed = rows_committed
        self._state = state

    def close(self) -> None:
        """Close the work files; bytes not yet checkpointed may be lost (a resume rewrites them)."""
        for handle in self._handles.values():
            with contextlib.suppress(OSError):  # a full disk: what was not checkpointed is cut on resume
                handle.close()
        self._handles.clear()

    # ------------------------------------------------------------------ finishing
    def finalize(
        self,
        rows_committed: int,
        extra: dict[str, Any],
        convert_data: Callable[[Path, Path], None] | None = None,
        *,
        write_data: bool = True,
    ) -> None:
        """Move the work files to their final names; safe to repeat after a crash at any point.

        `convert_data(jsonl_path, final_path)` writes the dataset in another format (recorded
        in `files_written` by its path, bytes and sha256, with no lines; an `hf` folder is not
        recorded); without it the JSONL work file is renamed into place. Side files are renamed,
        never rewritten. A dry run (`write_data=False`) writes no dataset. The work folder stays
        until `cleanup`.
        """
        if self.phase != "finalizing":
            self.checkpoint(rows_committed, extra, phase="finalizing")
            self.phase = "finalizing"
        self.close()
        assert self._state is not None
        records = self._state["parts"]
        folders = {self.work_dir}
        for name in PART_NAMES:
            if name == "data" and not write_data:
                continue
            final, part = getattr(self.paths, name), self.part_path(name)
            boundary("finalize-move")
            final.parent.mkdir(parents=True, exist_ok=True)
            folders.add(final.parent)
            if name == "data" and convert_data is not None:
                convert_data(part, final)  # the JSONL stays in the work folder: repeatable
                if final.is_file():  # what `merge` checks a shard's dataset against (an hf folder: none)
                    digest, size, _ = file_record(final)
                    self.files_written[name] = {"path": str(final), "bytes": size, "sha256": digest.hexdigest()}
                continue
            if part.exists():
                os.replace(part, final)
            # else: moved by the run that stopped, and checked against its hash when resuming
            self.files_written[name] = {"path": str(final), **records[name]}
        for folder in folders:
            fsync_dir(folder)
        boundary("finalize-done")

    def cleanup(self) -> None:
        """Remove the work folder: the run is complete and its report written."""
        boundary("cleanup")
        shutil.rmtree(self.work_dir, ignore_errors=True)
        fsync_dir(self.work_dir.parent)
