"""The summary cache, called from the event loop: every SQLite call on one worker thread.

A writer waiting on another process's lock (`busy_timeout`) blocks that thread, never the event
loop; a cache that fails (disk full, a damaged file) degrades to no cache, said once, and the run
goes on asking the endpoint. The summarizer, the batch answers and the probe answers share this.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.cache import CachedSummary, SummaryCache

logger = logging.getLogger(__name__)


class CacheStore(Protocol):
    """What a cache offers: `SummaryCache`, or the Ray engine's `SharedFolderCache`."""

    path: Path

    def get(self, key: str) -> CachedSummary | None: ...

    def put(self, key: str, summary: CachedSummary, *, model: str) -> None: ...

    def close(self) -> None: ...


def open_cache(config: LLMConfig, what: str = "summaries") -> SummaryCache | None:
    """The configured cache, or None (turned off, or it cannot be opened: said, then no cache)."""
    if not config.use_cache:
        return None
    try:
        return SummaryCache(config.cache_path)
    except (sqlite3.Error, OSError) as exc:
        logger.warning("cannot open the summary cache (%s); %s will not be cached", exc, what)
        return None


class CacheThread:
    """A cache (or none) with async `get` / `put` on one worker thread; `aclose` closes both."""

    def __init__(self, cache: CacheStore | None, *, model: str, name: str = "summary-cache") -> None:
        self.cache = cache
        self.model = model
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._warned = False

    @property
    def path(self) -> Path | None:
        return self.cache.path if self.cache is not None else None

    async def get(self, key: str) -> CachedSummary | None:
        return await self._call(_get, key)

    async def put(self, key: str, summary: CachedSummary) -> None:
        await self._call(_put, key, summary, self.model)

    async def aclose(self) -> None:
        """Pending writes finish first."""
        cache, self.cache = self.cache, None
        if cache is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, cache.close)
        self._thread.shutdown(wait=True)

    async def _call(self, method: Any, *args: Any) -> Any:
        cache = self.cache
        if cache is None:
            return None
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, method, cache, *args)
        except sqlite3.Error as exc:
            if not self._warned:
                self._warned = True
                logger.warning("summary cache %s failed (%s); continuing without it for now", cache.path, exc)
            return None


def _get(cache: CacheStore, key: str) -> CachedSummary | None:
    """`cache.get`, looked up on the object: a cache given in (a `SharedFolderCache`) has its own."""
    return cache.get(key)


def _put(cache: CacheStore, key: str, summary: CachedSummary, model: str) -> None:
    cache.put(key, summary, model=model)
