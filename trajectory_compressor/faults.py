"""Test hooks at the durable-write boundaries of a run: crash, pause or record there.

Durability is only as good as the worst moment to die. Every place where the files on disk
change in a way a resumed run relies on (a checkpoint before and after its rename, each
truncate on resume, each move of a finished file) calls `boundary(name)`, and so does a
`--num-workers` worker process before each row it finishes (`worker-row`). Unset, the hooks
cost one dictionary lookup. Tests set them in a child process's environment:

- `TC_CRASH_LOG=<file>`: append each boundary's name to `<file>` (to enumerate them).
- `TC_CRASH_AT=<name>:<n>`: SIGKILL this process at the n-th (1-based) boundary `name`.
- `TC_PAUSE_AT=<name>:<n>` with `TC_PAUSE_FILE=<file>`: at that boundary create `<file>` and
  wait until `<file>.release` exists, so a test can signal the run at a known point.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

_seen: Counter[str] = Counter()


def _matches(variable: str, name: str, count: int) -> bool:
    wanted = os.environ.get(variable)
    if not wanted:
        return False
    wanted_name, _, wanted_count = wanted.rpartition(":")
    return wanted_name == name and wanted_count.isdigit() and int(wanted_count) == count


def boundary(name: str) -> None:
    """Mark one durable-write boundary; does nothing unless a test hook asks for it."""
    if not (os.environ.get("TC_CRASH_LOG") or os.environ.get("TC_CRASH_AT") or os.environ.get("TC_PAUSE_AT")):
        return
    _seen[name] += 1
    count = _seen[name]
    log = os.environ.get("TC_CRASH_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{name}:{count}\n")
    if _matches("TC_CRASH_AT", name, count):
        os.kill(os.getpid(), signal.SIGKILL)
    if _matches("TC_PAUSE_AT", name, count):
        marker = Path(os.environ["TC_PAUSE_FILE"])
        marker.write_text(str(os.getpid()), encoding="utf-8")
        release = marker.with_name(marker.name + ".release")
        while not release.exists():  # a signal (SIGINT, SIGTERM) arriving here interrupts the wait
            time.sleep(0.01)


def reset() -> None:
    """Forget the counts (a forked test child starts from zero)."""
    _seen.clear()
