"""One run per output: an exclusive lock beside the dataset, held from start to finish.

Two runs writing the same `-o` would interleave their work files, their checkpoints and their
final renames. `fcntl.flock` on `.<name>.lock` makes the second run stop at once with one
line. The kernel drops the lock when its holder dies (even by SIGKILL), so a killed run never
blocks the next one; the file is removed at the end of a run, with care that a run which
opened it just before the removal does not go on holding a lock on a deleted file.
"""

from __future__ import annotations

import fcntl
import os
from types import TracebackType

from trajectory_compressor.write.run_files import OutputError, OutputPaths


class OutputLockedError(OutputError):
    """Another run is writing the same output."""


class OutputLock:
    """`with OutputLock(paths):` holds the lock on output `paths.data` for the block."""

    def __init__(self, paths: OutputPaths) -> None:
        self.data = paths.data
        self.path = paths.lock
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise OutputLockedError(
                    f"another run is writing {self.data} (it holds {self.path}); "
                    "wait for it to finish or choose another -o"
                ) from None
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            held = os.fstat(fd)
            if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                self._fd = fd
                return self
            os.close(fd)  # the previous holder removed the file after we opened it: take the new one

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None
