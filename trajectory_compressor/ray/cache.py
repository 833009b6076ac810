"""The summary cache on a shared folder: one SQLite file per worker, every file read on a miss.

Many writers on one SQLite file over a network filesystem is where SQLite's locking is least
dependable; one writer per file is not. So each worker (a Ray actor, on any machine) writes
only its own file, `worker-<host>-<pid>-<random>.sqlite3`, and on a miss looks in every other
`*.sqlite3` file of the folder: those of workers that died, of earlier runs and of the driver
that crashed, and a local run's cache file kept there (`--cache folder/summaries.sqlite3`).
A summary received once is then never asked for again by any worker of any re-run that
shares the folder. Each file is a plain `SummaryCache` (same schema, same keys), written with
a rollback journal: SQLite's WAL mode needs memory shared by every reader, which machines on a
network filesystem do not have.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path

from trajectory_compressor.summarize.llm.cache import CachedSummary, SummaryCache

CACHE_GLOB = "*.sqlite3"  # every cache file of the folder: the workers', and a local run's


class SharedFolderCache:
    """`SummaryCache`'s get / put / close / len over a folder of per-worker files."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"worker-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.sqlite3"
        # Rollback journal, not WAL: WAL's index lives in shared memory, which a network
        # filesystem does not share between machines; one writer per file needs no more.
        self.own = SummaryCache(self.folder / name, journal_mode="DELETE")
        self.path = self.folder  # what reports show
        self._others: dict[Path, SummaryCache] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedSummary | None:
        found = self.own.get(key)
        if found is not None:
            return found
        with self._lock:
            self._open_new_files()
            others = list(self._others.values())
        for cache in others:
            found = cache.get(key)
            if found is not None:
                return found
        return None

    def put(self, key: str, summary: CachedSummary, *, model: str) -> None:
        self.own.put(key, summary, model=model)

    def __len__(self) -> int:
        """Distinct summaries in the whole folder."""
        with self._lock:
            self._open_new_files()
            caches = [self.own, *self._others.values()]
        keys: set[str] = set()
        for cache in caches:
            keys.update(cache.keys())
        return len(keys)

    def close(self) -> None:
        with self._lock:
            for cache in self._others.values():
                cache.close()
            self._others.clear()
        self.own.close()

    def _open_new_files(self) -> None:
        """Open the files other workers made since the last look (a listing per miss: cheap)."""
        for path in sorted(self.folder.glob(CACHE_GLOB)):
            if path != self.own.path and path not in self._others:
                self._others[path] = SummaryCache(path, journal_mode=None)  # read as its writer left it
