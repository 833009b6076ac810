"""A claim as it is stored: `<stem>.part_records/claim.json`, this version's (`Claim`) or another's (`ForeignClaim`).

What the claim means, and how a run holds it, is `claim`'s; this is its file: the fields, the
lease they are read against (`TC_RAY_CLAIM_SECONDS`), the read the store may refuse for a
moment (tried again, never taken for "no claim"), and the write (whole, under a temporary name
of the writer's own). A claim this version cannot read as its own is not "no claim": it may be
a newer driver's, and holds by its file's modification time. No Ray here.
"""

from __future__ import annotations

import math
import os
import posixpath
import secrets
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from trajectory_compressor.ray.environment import positive_setting
from trajectory_compressor.ray.layout import CLAIM, MARKER, MARKER_TEXT, RayOutputLayout, filesystem_of
from trajectory_compressor.ray.layout import write_whole as _write_whole

LEASE_VARIABLE = "TC_RAY_CLAIM_SECONDS"
LEASE_DEFAULT_SECONDS = 120.0
CLAIM_VERSION = 1


def lease_seconds() -> float:
    """The claim's lease from the driver's environment (`TC_RAY_CLAIM_SECONDS`, default 120): a positive,
    finite number, else one line naming it (exit 2) before anything is written.

    Read when a run starts, not at import: a value that is no number raised ValueError on import,
    an internal error; 0 made every claim stale at once (any second run took the output over) and
    the renewal thread renew without a pause."""
    return positive_setting(LEASE_VARIABLE, LEASE_DEFAULT_SECONDS, "the claim's lease")


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
