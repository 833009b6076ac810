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
The claim's file (its fields, read and write, the lease) is `claim_file`. No Ray here: the
files are read through pyarrow's filesystems.
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from types import TracebackType

from trajectory_compressor.errors import RunAborted, UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.claim_file import (
    Claim,
    ForeignClaim,
    is_run,
    lease_seconds,
    read_claim,
    write_claim,
)
from trajectory_compressor.ray.layout import CLAIM, MARKER, RayOutputLayout, filesystem_of, is_part
from trajectory_compressor.ray.parts import OUTPUTS, PartRecord, read_records
from trajectory_compressor.ray.preflight import on_local_disk, output_lock
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.write.run_files import OutputError


class OutputClaimedError(UsageError):
    """Another run holds the output's claim (exit 2, as the local lock's refusal)."""


class ClaimLostError(RunAborted):
    """This run's claim was taken over: it stops, writes nothing more, and leaves the report to the new owner."""

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(message, exit_code)  # `RunAborted.__reduce__`: it crosses Ray's task boundary whole


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


def own_parts_problem(layout: RayOutputLayout, records: Sequence[PartRecord], *, dataset: bool = True) -> str | None:
    """What in the output is not the parts this run counted (`records`: its own and those it kept);
    None when the records folder and every output folder hold exactly them. `dataset=False`: a dry
    run's, which leaves the dataset folder as it found it (an `--overwrite` dry run keeps its parts)."""
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
    for output in (name for name in OUTPUTS if dataset or name != "data"):
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
