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
from pathlib import Path
from types import TracebackType

from trajectory_compressor.messages import quoted
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.run_files import OutputError


class OutputLockedError(OutputError):
    """Another run is writing the same output."""


class OutputLock:
    """`with OutputLock(paths):` holds the lock on output `paths.data` and on each of its side files.

    Side files are named from the dataset's stem, so `-o x.jsonl` and `-o x.parquet` (or a
    `--metrics` path two runs share) write the same metrics and report: each written file has
    its own `.<name>.lock`, and a second run that would touch any of them stops at once.
    """

    def __init__(self, paths: OutputPaths) -> None:
        self.data = paths.data
        self.path = paths.lock
        self.paths = [self.path, *sorted(paths.side_locks)]
        self._fds: list[tuple[Path, int]] = []

    def __enter__(self) -> OutputLock:
        try:
            for path in self.paths:
                self._fds.append((path, self._take(path)))
        except BaseException:
            self._release()
            raise
        return self

    def _take(self, path: Path) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise OutputLockedError(
                    f"another run is writing {quoted(self.data)} or a file beside it (it holds {quoted(path)}); "
                    "wait for it to finish or choose another -o"
                ) from None
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            held = os.fstat(fd)
            if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                return fd
            os.close(fd)  # the previous holder removed the file after we opened it: take the new one

    def _release(self) -> None:
        while self._fds:
            path, fd = self._fds.pop()
            try:
                path.unlink(missing_ok=True)
            finally:
                os.close(fd)

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._release()
