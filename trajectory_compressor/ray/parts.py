"""The record of every part a Ray run writes, checked on the driver; the parts a resume keeps.

A part a worker wrote is only a promise until the driver has read it: on a cluster whose nodes
do not share the output folder, a run once said `completed` while most of its rows sat on other
machines' disks. So each write task, after its part files (dataset, metrics, over-limit,
rejects: the same input rows), writes their record, `<stem>.part_records/part-<first row>.json`:
each file's name, lines, bytes and sha256, the input rows the part holds (runs of row indexes),
their totals and first bad records, the run's fingerprint (settings and inputs) and the id of
the run that wrote it (`claim`: the driver counts only its own parts and those it kept). The record
is written last and whole (a temporary name, then moved), so a part without one is unfinished.

Beside them, the driver writes the run's own record before any part (`run.json`,
`write_run_record`): the fingerprint and the parts it hashed (`write/run_fingerprint.py`), so
that a re-run with other inputs or settings is refused naming what differs, as the local engine's.
Parts written before it was kept have none: they are refused as they always were.

The driver uses the parts' records twice:

* before the run (`kept_parts`), when an unfinished run of the same command left parts: the
  parts whose files verify (size and sha256) are kept and their rows are not read again; the
  others are deleted and their rows computed again. A lost driver costs only the parts it had
  not yet written;
* after the run (`check_parts`): every part of every output is read in name order (the input
  order), checked against its record, and the report gets its `files` section, as the local
  engine's: per output, its folder, bytes, lines, and the sha256 of the parts concatenated in
  order (for the dataset, the sha256 of the local engine's file for the same rows).

No Ray here: the files are read through pyarrow's filesystems (a local folder or a URI).
"""

from __future__ import annotations

import bisect
import builtins
import hashlib
import posixpath
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson

from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.layout import RUN_RECORD, RayOutputLayout, filesystem_of, part_stem, write_whole
from trajectory_compressor.write.report import RunTotals
from trajectory_compressor.write.run_files import ResumeMismatchError
from trajectory_compressor.write.run_fingerprint import RunFingerprint, refusal

RECORD_VERSION = 1
OUTPUTS = ("data", "metrics", "over_limit", "rejects")
_CHUNK = 1 << 20
Runs = tuple[tuple[int, int], ...]  # sorted, disjoint [start, end) runs of input-stream row indexes


@dataclass(frozen=True)
class PartFile:
    """One file of a part, as its write task wrote it."""

    name: str
    lines: int
    bytes: int
    sha256: str

    @classmethod
    def of(cls, name: str, data: builtins.bytes) -> PartFile:
        return cls(name, data.count(b"\n"), len(data), hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class PartRecord:
    """What one write task wrote for one run of input rows (see the module docstring)."""

    first_row: int
    rows: Runs
    files: dict[str, PartFile]  # output ("data", "metrics", ...) -> its file; an output with no line has none
    totals: dict[str, Any]  # `RunTotals.to_dict()` of the part's rows
    rejects: tuple[dict[str, Any], ...]  # its first bad records' reject lines, in input order
    fingerprint: str
    run_id: str = ""  # the run that wrote it (`claim`): the driver counts only its own and those it kept

    @property
    def name(self) -> str:
        return f"{part_stem(self.first_row)}.json"

    @property
    def row_count(self) -> int:
        return sum(end - start for start, end in self.rows)

    def to_dict(self) -> dict[str, Any]:
        body = {
            "version": RECORD_VERSION,
            "fingerprint": self.fingerprint,
            "first_row": self.first_row,
            "rows": [list(run) for run in self.rows],
            "files": {output: vars(part) for output, part in self.files.items()},
            "totals": self.totals,
            "rejects": list(self.rejects),
            **({"run_id": self.run_id} if self.run_id else {}),  # none in an earlier version's records
        }
        return {**body, "checksum": _checksum(body)}

    @classmethod
    def from_dict(cls, data: Any) -> PartRecord | None:
        """The record, or None when it is not one this version wrote whole (edited, cut, older)."""
        try:
            body = {key: value for key, value in data.items() if key != "checksum"}
            if data.get("version") != RECORD_VERSION or data.get("checksum") != _checksum(body):
                return None
            files = {output: PartFile(**entry) for output, entry in data["files"].items() if output in OUTPUTS}
            rows = tuple((int(start), int(end)) for start, end in data["rows"])
            return cls(int(data["first_row"]), rows, files, dict(data["totals"]), tuple(data["rejects"]),
                       str(data["fingerprint"]), str(data.get("run_id", "")))  # fmt: skip
        except (AttributeError, KeyError, TypeError, ValueError):
            return None


def _checksum(body: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def row_runs(indexes: Iterable[int]) -> Runs:
    """Sorted row indexes as [start, end) runs: `[3, 4, 5, 9]` -> `((3, 6), (9, 10))`."""
    runs: list[list[int]] = []
    for index in indexes:
        if runs and runs[-1][1] == index:
            runs[-1][1] += 1
        else:
            runs.append([index, index + 1])
    return tuple((start, end) for start, end in runs)


def write_record(layout: RayOutputLayout, record: PartRecord) -> None:
    """The record, whole, after its files: from then on the part counts as written."""
    write_whole(layout.records, record.name, orjson.dumps(record.to_dict()))


@dataclass(frozen=True)
class KeptParts:
    """The parts of an unfinished run a resume keeps, and the rows they hold."""

    records: tuple[PartRecord, ...] = ()
    runs: Runs = ()  # the rows they hold, merged
    starts: tuple[int, ...] = field(default=())  # their first rows, sorted

    @classmethod
    def of(cls, records: Sequence[PartRecord]) -> KeptParts:
        ordered = sorted(records, key=lambda record: record.first_row)
        merged: list[list[int]] = []
        for start, end in sorted(run for record in ordered for run in record.rows):
            if merged and merged[-1][1] >= start:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return cls(tuple(ordered), tuple((s, e) for s, e in merged), tuple(r.first_row for r in ordered))

    @property
    def row_count(self) -> int:
        return sum(record.row_count for record in self.records)

    def names(self) -> dict[str, set[str]]:
        """Folder key (`RayOutputLayout.folders`) -> the kept file names: what claiming leaves."""
        kept: dict[str, set[str]] = {key: set() for key in (*OUTPUTS, "part_records")}
        for record in self.records:
            kept["part_records"].add(record.name)
            for output, part in record.files.items():
                kept[output].add(part.name)
        return kept


def holds(runs: Sequence[tuple[int, int]], index: int) -> bool:
    """Whether row `index` is in one of the sorted, disjoint `runs`."""
    at = bisect.bisect_right(runs, (index, float("inf"))) - 1
    return at >= 0 and runs[at][0] <= index < runs[at][1]


def segment(starts: Sequence[int], index: int) -> int:
    """Which gap between kept parts row `index` lies in: a new part holds rows of one gap only,
    so the parts sorted by name stay in input order."""
    return bisect.bisect_right(starts, index)


def read_records(layout: RayOutputLayout) -> tuple[list[PartRecord], int]:
    """The records in the run's records folder, and how many files there were not whole records."""
    import pyarrow.fs as pafs

    filesystem, path = filesystem_of(layout.records)
    if filesystem.get_file_info(path).type != pafs.FileType.Directory:
        return [], 0
    records, broken = [], 0
    for info in filesystem.get_file_info(pafs.FileSelector(path)):
        if not (info.base_name.startswith("part-") and info.base_name.endswith(".json")):
            continue
        with filesystem.open_input_stream(info.path) as stream:
            data = stream.read()
        try:
            record = PartRecord.from_dict(orjson.loads(data))
        except orjson.JSONDecodeError:
            record = None
        if record is None or record.name != info.base_name:
            broken += 1
        else:
            records.append(record)
    return records, broken


def digest_of(folder: str, name: str) -> tuple[str, int, int]:
    """(sha256, bytes, lines) of a part file as this process reads it (`OSError` if it cannot)."""
    digest = hashlib.sha256()
    size = lines = 0
    filesystem, path = filesystem_of(folder)
    with filesystem.open_input_stream(posixpath.join(path, name)) as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            lines += chunk.count(b"\n")
    return digest.hexdigest(), size, lines


def file_problem(layout: RayOutputLayout, output: str, part: PartFile) -> str | None:
    """What is wrong with one part file, as the driver reads it; None when it is as recorded."""
    folder = layout.outputs()[output]
    try:
        found = digest_of(folder, part.name)
    except (OSError, FileNotFoundError) as exc:
        return f"{quoted(posixpath.join(folder, part.name))} cannot be read here ({type(exc).__name__})"
    if found != (part.sha256, part.bytes, part.lines):
        return f"{quoted(posixpath.join(folder, part.name))} does not hold the bytes its record names"
    return None


def record_problem(layout: RayOutputLayout, record: PartRecord) -> str | None:
    for output, part in record.files.items():
        problem = file_problem(layout, output, part)
        if problem:
            return problem
    return None


def write_run_record(layout: RayOutputLayout, run: RunFingerprint) -> None:
    """The run's fingerprint and the parts it hashed, whole, in the records folder (see the module docstring)."""
    body = {"version": RECORD_VERSION, "fingerprint": run.digest, "parts": run.parts}
    write_whole(layout.records, RUN_RECORD, orjson.dumps({**body, "checksum": _checksum(body)}))


def _run_parts(layout: RayOutputLayout, digest: str) -> Any:
    """The parts the run of fingerprint `digest` hashed, as its `run.json` kept them; None when it
    kept none (an earlier version's run), or another run's, or the file is not whole."""
    filesystem, path = filesystem_of(layout.records)
    try:
        with filesystem.open_input_stream(posixpath.join(path, RUN_RECORD)) as stream:
            data = orjson.loads(stream.read())
        body = {key: value for key, value in data.items() if key != "checksum"}
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    if data.get("checksum") != _checksum(body) or data.get("version") != RECORD_VERSION:
        return None
    return data.get("parts") if data.get("fingerprint") == digest else None


def kept_parts(layout: RayOutputLayout, run: RunFingerprint, say: Callable[[str], None]) -> KeptParts:
    """The parts an unfinished run of this command left that verify (see the module docstring).

    Parts of another command's unfinished run are not mixed in: `ResumeMismatchError` (exit 2,
    as the local engine's, naming what differs), unless `--no-resume`, which does not call this.
    """
    records, broken = read_records(layout)
    if not records:
        return KeptParts()
    others = {record.fingerprint for record in records} - {run.digest}
    if others:
        changes = run.changed_since(_run_parts(layout, others.pop())) if len(others) == 1 else None
        raise ResumeMismatchError(refusal(f"{quoted(layout.data)} holds the parts of an unfinished run", changes))
    records.sort(key=lambda record: record.first_row)
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="tc-verify") as pool:  # hashlib frees the GIL
        problems = list(pool.map(lambda record: record_problem(layout, record), records))
    kept: list[PartRecord] = []
    end = -1
    for record, problem in zip(records, problems, strict=True):
        if problem is None and record.rows and record.rows[0][0] >= end:  # overlapping parts: the first kept
            kept.append(record)
            end = record.rows[-1][1]
    dropped = len(records) - len(kept) + broken
    result = KeptParts.of(kept)
    if dropped:
        first = next((problem for problem in problems if problem), "a record that is not whole")
        say(f"resuming: {dropped} parts do not verify ({first}); their rows are computed again")
    say(f"resuming: {len(kept)} parts ({result.row_count} rows) kept from the unfinished run in {quoted(layout.data)}")
    return result


def merged_totals(records: Iterable[PartRecord]) -> RunTotals:
    totals = RunTotals()
    for record in records:
        totals.merge(RunTotals.from_dict(record.totals))
    return totals


def check_parts(layout: RayOutputLayout, records: Sequence[PartRecord]) -> tuple[dict[str, Any], list[str]]:
    """Every part read back on the driver, in order: the report's `files` section, and what is wrong.

    Per output: its folder, its parts, bytes and lines added up, and the sha256 of the parts
    concatenated in name order (`cat folder/part-*` hashed). An output's files are read in
    order on a thread of their own (hashlib frees the GIL).
    """
    ordered = sorted(records, key=lambda record: record.first_row)

    def check(output: str) -> tuple[dict[str, Any], list[str]]:
        folder = layout.outputs()[output]
        filesystem, path = filesystem_of(folder)
        whole = hashlib.sha256()
        size = lines = parts = 0
        problems = []
        for record in ordered:
            part = record.files.get(output)
            if part is None:
                continue
            digest = hashlib.sha256()
            found_bytes = found_lines = 0
            try:
                with filesystem.open_input_stream(posixpath.join(path, part.name)) as stream:
                    while chunk := stream.read(_CHUNK):
                        digest.update(chunk)
                        whole.update(chunk)
                        found_bytes += len(chunk)
                        found_lines += chunk.count(b"\n")
            except (OSError, FileNotFoundError) as exc:
                problems.append(
                    f"{quoted(posixpath.join(folder, part.name))} cannot be read here ({type(exc).__name__})"
                )
                continue
            if (digest.hexdigest(), found_bytes, found_lines) != (part.sha256, part.bytes, part.lines):
                problems.append(f"{quoted(posixpath.join(folder, part.name))} does not hold the bytes its record names")
            size, lines, parts = size + found_bytes, lines + found_lines, parts + 1
        entry = {"path": folder, "parts": parts, "bytes": size, "lines": lines, "sha256": whole.hexdigest()}
        return entry, problems

    with ThreadPoolExecutor(max_workers=len(OUTPUTS), thread_name_prefix="tc-verify") as pool:
        results = dict(zip(OUTPUTS, pool.map(check, OUTPUTS), strict=True))
    files = {output: entry for output, (entry, _) in results.items()}
    return files, [problem for _, problems in results.values() for problem in problems]
