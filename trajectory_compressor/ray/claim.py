"""One run per output on object storage: a claim with a run id, renewed, and every part checked as this run's.

A local output is kept to one run by `flock` beside it (`write.lock`). `s3://` and `gs://` have
no lock, and pyarrow's filesystems expose no conditional put (S3's `If-None-Match`), so two runs
on one output once deleted each other's parts, wrote their own, and both said `completed`. What
object-store writers without an atomic commit do (Spark's S3A committers: a job UUID in every
file and in the `_SUCCESS` manifest; Delta: optimistic concurrency checked at commit) is done here
with plain puts and reads, and checked before `completed` rather than trusted:

* **A claim.** Before Ray starts, the driver writes `<stem>.part_records/claim.json`: a run id
  (random, new for every run), host, pid, when it started and when it last renewed the claim.
  A run that finds another run's claim neither ended nor stale refuses in one line (exit 2,
  naming it) and touches nothing. The driver renews it every quarter of the lease (a thread;
  the lease: `TC_RAY_CLAIM_SECONDS`, 120 s); a claim not renewed for a lease is a lost driver's,
  and is taken over. A claim another version of this tool wrote (another `version`, other
  fields) holds the same way, by its file's modification time. A run that ends
  (any status, Ctrl-C, exit 69, an error) marks its claim ended, so its re-run resumes at once;
  only a driver lost without a word (SIGKILL, its node) leaves a claim that holds the output for
  up to a lease. Beside a local output the flock is held first, so a claim found there that
  says its driver held the flock too is a gone run's whatever its age: taken over at once (local
  resume is as it was); a `file://` output's run, which holds no flock, is not.
* **Fencing by reading.** Every part record carries the run id that wrote it. Each write task
  reads the claim before a part's files and before its record, and stops (`ClaimLostError`)
  when it is another run's, or ended: a worker of a run whose claim was taken over, or one still
  running after its driver stopped, writes no more parts.
  The driver reads it again before it deletes anything and before its report.
* **The check before `completed`** (`own_parts_problem`): the claim is still this run's; every
  record in the records folder is one this run counted, byte for byte (its own parts, with its
  run id, or the parts its resume kept); no part file in any output folder is outside them.
  With the parts' hashes (`parts.check_parts`) and the rows' coverage (`coverage`), a part lost
  or replaced by another writer ends the run in one line instead of `completed`. A run whose
  claim was taken over stops without writing a report: the report is the new owner's.

Plain puts leave windows this cannot close: two runs that claim within one read of each other
both start (the final check of the one whose claim was overwritten fails), and a part a worker
was already writing when the claim changed hands lands after that check (one part's write).
No Ray here: the files are read through pyarrow's filesystems.
"""

from __future__ import annotations

import contextlib
import math
import os
import posixpath
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from types import TracebackType
from typing import Any

import orjson

from trajectory_compressor.errors import RunAborted, UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.layout import CLAIM, MARKER, MARKER_TEXT, RayOutputLayout, filesystem_of, is_part
from trajectory_compressor.ray.layout import write_whole as _write_whole
from trajectory_compressor.ray.parts import OUTPUTS, PartRecord, read_records
from trajectory_compressor.ray.preflight import on_local_disk, output_lock
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.write.run_files import OutputError

LEASE_VARIABLE = "TC_RAY_CLAIM_SECONDS"
CLAIM_VERSION = 1


def lease_seconds() -> float:
    """The claim's lease from the driver's environment (`TC_RAY_CLAIM_SECONDS`, default 120): a positive,
    finite number, else one line naming it (exit 2) before anything is written.

    Read when a run starts, not at import: a value that is no number raised ValueError on import,
    an internal error; 0 made every claim stale at once (any second run took the output over) and
    the renewal thread renew without a pause."""
    text = os.environ.get(LEASE_VARIABLE) or "120"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"{LEASE_VARIABLE} must be a positive number of seconds (the claim's lease), got {text!r}")
    return value


class OutputClaimedError(UsageError):
    """Another run holds the output's claim (exit 2, as the local lock's refusal)."""


class ClaimLostError(RunAborted):
    """This run's claim was taken over: it stops, writes nothing more, and leaves the report to the new owner."""

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(message, exit_code)  # `RunAborted.__reduce__`: it crosses Ray's task boundary whole


@dataclass(frozen=True)
class Claim:
    """Who holds an output: the run id, where its driver runs, when it started and last renewed, ended or not."""

    run_id: str
    host: str
    pid: int
    started: float
    renewed: float
    ended: bool = False
    # False: a `file://` output's run, on the local disk but holding no lock beside it; taken for a gone run's
    # by a local run on the same folder (which holds the lock), it was taken over live. Written only when
    # False: every other claim stays the one schema earlier versions read (an unknown field is no claim to
    # them, and they took it over at once); a claim without it is taken as a lock holder's, as before.
    locked: bool = True

    @classmethod
    def new(cls, now: float, *, locked: bool) -> Claim:
        return cls(secrets.token_hex(8), socket.gethostname(), os.getpid(), now, now, locked=locked)

    def holds(self, now: float, lease: float) -> bool:
        """Whether it still keeps other runs out: not ended, and renewed within the lease."""
        return not self.ended and now - self.renewed < lease

    def describe(self, now: float) -> str:
        return f"run {self.run_id} (host {self.host}, pid {self.pid}; renewed {max(0.0, now - self.renewed):.0f} s ago)"

    def released(self, lease: float) -> str:
        return f"a run whose driver was lost stops holding it {lease:g} s after its last renewal"


@dataclass(frozen=True)
class ForeignClaim:
    """A claim.json this version cannot read as its own: another version's (another `version`, other
    fields or types), or a file written by hand or by another tool.

    It may be a live run's (a newer driver on the same output), so it holds as a claim does, not
    ended and written within the lease, by the time every version shares: the file's
    modification time, as the store gives it. Taken over at once, it let two drivers write one
    output. Its `ended`, when it says `true`, is taken at its word (an upgraded tool resuming).
    """

    version: object  # its `version` field, None without one
    run_id: str | None
    host: str | None
    pid: int | None
    written: float | None  # the file's modification time; None when the store gives none
    ended: bool
    locked: bool  # its driver held the lock beside a local output (`Claim.locked`), unless it says not

    @classmethod
    def of(cls, data: object, written: float | None) -> ForeignClaim:
        fields = data if isinstance(data, dict) else {}

        def field(key: str, kind: type) -> Any:
            value = fields.get(key)
            return value if isinstance(value, kind) and not isinstance(value, bool) else None

        return cls(fields.get("version"), field("run_id", str), field("host", str), field("pid", int), written,
                   fields.get("ended") is True, fields.get("locked") is not False)  # fmt: skip

    def holds(self, now: float, lease: float) -> bool:
        return not self.ended and (self.written is None or now - self.written < lease)

    def describe(self, now: float) -> str:
        who = f"run {self.run_id}" if self.run_id else "a run"
        which = "another version of this tool" if self.version is not None else "a writer this version cannot read"
        details = [f"claim version {orjson.dumps(self.version).decode()}" if self.version is not None else ""]
        details += [f"host {self.host}" if self.host else "", f"pid {self.pid}" if self.pid is not None else ""]
        said = ", ".join(detail for detail in details if detail)
        age = (
            f"written {max(0.0, now - self.written):.0f} s ago" if self.written is not None else "written when unknown"
        )
        return f"{who} of {which} ({said}; {age})" if said else f"{who} of {which} ({age})"

    def released(self, lease: float) -> str:
        if self.written is None:
            return "the store gives no time it was written: delete it once no run writes there"
        return f"a run whose driver was lost stops holding it {lease:g} s after its last write"


def is_run(claim: Claim | ForeignClaim | None, run_id: str) -> bool:
    """Whether `claim` is run `run_id`'s own (this version's, with that id)."""
    return isinstance(claim, Claim) and claim.run_id == run_id


def read_claim(layout: RayOutputLayout, attempts: int = 3) -> Claim | ForeignClaim | None:
    """The claim in the records folder; None when there is none; a `ForeignClaim` when it is not one
    this version wrote.

    A read that fails for another reason (the store refusing or unreachable for a moment) is
    tried `attempts` times, a second apart, then raised: taken for "no claim", it made a run
    whose claim is whole stop as taken over, and let a second run in.
    """
    filesystem, path = filesystem_of(layout.records)
    claim_path = posixpath.join(path, CLAIM)
    for attempt in range(attempts):
        try:
            with filesystem.open_input_stream(claim_path) as stream:
                text = stream.read()
            try:
                data = orjson.loads(text)
            except orjson.JSONDecodeError:
                data = None
            return _claim_of(data) or ForeignClaim.of(data, _written(filesystem, claim_path))
        except FileNotFoundError:
            return None
        except OSError:
            if attempt + 1 == attempts:
                raise
            time.sleep(1.0)
    return None  # not reached: the last attempt returns or raises


_FIELD_TYPES = {"run_id": str, "host": str, "pid": int, "started": float, "renewed": float, "ended": bool}


def _claim_of(data: object) -> Claim | None:
    """The claim `data` holds, or None when it is not one this version wrote: other keys, or a
    key of another type (a hand-written `"renewed": "soon"` raised TypeError in `holds`, an
    internal error; such a file is a `ForeignClaim`)."""
    if not isinstance(data, dict) or data.get("version") != CLAIM_VERSION:
        return None
    if set(data) - {"locked"} != {"version", *_FIELD_TYPES} or not isinstance(data.get("locked", True), bool):
        return None
    for key, kind in _FIELD_TYPES.items():
        value = data[key]
        if isinstance(value, bool) != (kind is bool):
            return None
        if kind is float and not (isinstance(value, int | float) and math.isfinite(value)):
            return None
        if kind is not float and not isinstance(value, kind):
            return None
    return Claim(**{key: data[key] for key in _FIELD_TYPES}, locked=data.get("locked", True))


def _written(filesystem: Any, path: str) -> float | None:
    """When the file was last written, by the store's clock (seconds since the epoch), if it says."""
    nanoseconds = filesystem.get_file_info(path).mtime_ns
    return None if nanoseconds is None else nanoseconds / 1e9


def write_claim(layout: RayOutputLayout, claim: Claim) -> None:
    """The claim, whole (a temporary name of this run's own, then moved), in the records folder, made
    and marked if new."""
    import pyarrow.fs as pafs

    filesystem, path = filesystem_of(layout.records)
    filesystem.create_dir(path, recursive=True)
    marker = posixpath.join(path, MARKER)
    if filesystem.get_file_info(marker).type == pafs.FileType.NotFound:  # `check_output_folders` found it empty
        with filesystem.open_output_stream(marker) as stream:
            stream.write(MARKER_TEXT)
    body = {"version": CLAIM_VERSION, **asdict(claim)}
    if claim.locked:
        del body["locked"]  # see `Claim.locked`
    _write_whole(layout.records, CLAIM, orjson.dumps(body), claim.run_id)


def check_owner(layout: RayOutputLayout, run_id: str) -> None:
    """Raise `ClaimLostError` unless the output's claim is run `run_id`'s, not ended: what a write task
    and the driver ask before they change anything in the output. Ended too: a write task Ray did
    not stop with its driver (cancelled without a wait, an external cluster's) wrote a part the
    re-run did not count."""
    claim = read_claim(layout)
    if (
        isinstance(claim, Claim) and claim.run_id == run_id and claim.ended
    ):  # a task still running after its run stopped
        raise ClaimLostError(
            f"run {run_id} has ended (stopped or interrupted): a write task still running wrote nothing more "
            f"to {quoted(layout.data)}"
        )
    if not is_run(claim, run_id):
        taker = claim.describe(time.time()) if claim is not None else "none (deleted)"
        raise ClaimLostError(
            f"another run took over {quoted(layout.data)} (its claim now: {taker}); this run {run_id} stopped "
            "writing and wrote no report: the output is the other run's"
        )


class OutputClaim:
    """`with OutputClaim(layout, locked=...) as claim:` holds the output's claim (see the module docstring).

    `locked`: the driver already holds the local lock beside the output, so a claim found that
    says its driver held it too is a gone run's (a `file://` output's run holds no lock).
    `clock` and `lease` are the tests' way to age a claim without waiting (the lease:
    `lease_seconds()` without one).
    """

    def __init__(
        self,
        layout: RayOutputLayout,
        *,
        locked: bool,
        lease: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.layout = layout
        self.locked = locked
        self.lease = lease_seconds() if lease is None else lease
        self.clock = clock
        # Lockless only on the local disk (`file://`): no run can hold a lock beside an `s3://` output.
        self.claim = Claim.new(clock(), locked=locked or on_local_disk(layout.data) is None)
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._made_folder = False  # the records folder was made by this claim

    @property
    def run_id(self) -> str:
        return self.claim.run_id

    def __enter__(self) -> OutputClaim:
        found = read_claim(self.layout)
        gone = self.locked and found is not None and found.locked  # the lock is ours: its holder is gone
        if found is not None and not gone and found.holds(self.clock(), self.lease):
            raise self._refusal(found)
        self._made_folder = _missing(self.layout.records)
        write_claim(self.layout, self.claim)
        found = read_claim(self.layout)  # another run's put in between: the last put holds
        if not is_run(found, self.run_id):
            raise self._refusal(found or self.claim)
        self._renewer = threading.Thread(target=self._renew_until_stopped, name="tc-claim", daemon=True)
        self._renewer.start()
        return self

    def _refusal(self, found: Claim | ForeignClaim) -> OutputClaimedError:
        return OutputClaimedError(
            f"another run is writing {quoted(self.layout.data)}: {found.describe(self.clock())} holds "
            f"{quoted(posixpath.join(self.layout.records, CLAIM))}; wait for it to finish or choose another -o "
            f"({found.released(self.lease)})"
        )

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.lease / 4):
            self.renew()

    def renew(self) -> bool:
        """Write the claim again with the time now, unless another run holds it; whether it is still ours."""
        try:
            found = read_claim(self.layout)
            if not is_run(found, self.run_id):
                return False
            self.claim = replace(self.claim, renewed=self.clock())
            write_claim(self.layout, self.claim)
        except OSError:
            return True  # storage unreachable for a moment: the next renewal tries again
        return True

    def check(self) -> None:
        check_owner(self.layout, self.run_id)

    def lost(self) -> str | None:
        """`check`'s line when the claim is another run's now, else None."""
        try:
            self.check()
        except ClaimLostError as exc:
            return str(exc)
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        # Unreachable (the read or the write): the claim goes stale after the lease instead; raised
        # here, the store's error replaced the run's own end (a completed run: an internal error).
        with contextlib.suppress(OSError):
            found = read_claim(self.layout)
            if not is_run(found, self.run_id):
                return
            if isinstance(error, UsageError) and self._made_folder and self._only_the_claim_in_records():
                # Refused before any work (a local -o a node does not share, say): nothing left behind.
                _remove_records_folder(self.layout.records)
            else:  # ended: its re-run resumes at once
                write_claim(self.layout, replace(self.claim, renewed=self.clock(), ended=True))

    def _only_the_claim_in_records(self) -> bool:
        import pyarrow.fs as pafs

        filesystem, path = filesystem_of(self.layout.records)
        names = {info.base_name for info in filesystem.get_file_info(pafs.FileSelector(path))}
        return names <= {CLAIM, MARKER}


def _missing(folder: str) -> bool:
    import pyarrow.fs as pafs

    filesystem, path = filesystem_of(folder)
    return filesystem.get_file_info(path).type == pafs.FileType.NotFound


def _remove_records_folder(folder: str) -> None:
    """The records folder a claim made, holding nothing but the claim and its marker."""
    filesystem, path = filesystem_of(folder)
    for name in (CLAIM, MARKER):
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_file(posixpath.join(path, name))
    filesystem.delete_dir(path)


@contextlib.contextmanager
def hold_output(layout: RayOutputLayout, lease: float | None = None) -> Iterator[OutputClaim]:
    """The local lock beside a local output (a claim found beside a held lock is a gone run's),
    then the claim, held to the end. An output the driver cannot write to (a folder it cannot
    make, a bucket it may not write) is one line, exit 2, naming it, as the local engine says it."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(output_lock(layout))
            claim = held.enter_context(OutputClaim(layout, locked=not is_uri(layout.data), lease=lease))
        except OSError as exc:
            raise OutputError(f"cannot write {quoted(layout.data)}: {exc.strerror or exc}") from None
        yield claim


def own_parts_problem(layout: RayOutputLayout, records: Sequence[PartRecord]) -> str | None:
    """What in the output is not the parts this run counted (`records`: its own and those it kept);
    None when the records folder and every output folder hold exactly them."""
    import pyarrow.fs as pafs

    counted = {record.name: record for record in records}
    stored, broken = read_records(layout)
    if broken:
        return f"{broken} part records in {quoted(layout.records)} are not whole"
    for record in sorted(stored, key=lambda record: record.first_row):
        mine = counted.pop(record.name, None)
        writer = f"written by run {record.run_id or 'of an earlier version'}"
        if mine is None:
            return f"{quoted(posixpath.join(layout.records, record.name))} ({writer}) is not a part of this run"
        if mine != record:
            return f"{quoted(posixpath.join(layout.records, record.name))} was replaced ({writer})"
    if counted:
        return f"{quoted(posixpath.join(layout.records, min(counted)))} is missing"
    for output in OUTPUTS:
        folder = layout.outputs()[output]
        names = {part.name for record in records for key, part in record.files.items() if key == output}
        filesystem, path = filesystem_of(folder)
        found = sorted(
            info.base_name for info in filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        )
        extra = [name for name in found if is_part(name) and name not in names]
        if extra:
            return f"{quoted(posixpath.join(folder, extra[0]))} is not a part of this run"
    return None
