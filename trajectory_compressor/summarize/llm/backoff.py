"""How long to wait before the next attempt: full jitter, Retry-After, and a client-wide pause.

Shared by the live client and the batch calls. A retry sleeps uniform(0, min(cap, base * 2**attempt))
(full jitter: retries of many requests spread out instead of arriving together), but at least
what the server's Retry-After asked, capped so a hostile header cannot stall the run. A 429 (or
any Retry-After) pauses every request of the client, not just the one that got it, since each
would hit the same limit; without Retry-After the pause grows with the 429s seen in a row and
resets on the next success, so a sustained overload slows the whole run down.
"""

from __future__ import annotations

import asyncio
import random
import time

from trajectory_compressor.summarize.llm.usage import UsageTracker


class Backoff:
    """Retry sleeps and the pause after a 429, for one client (all calls on one event loop)."""

    def __init__(
        self,
        base: float,
        cap: float,
        *,
        retry_after_cap: float,
        rng: random.Random | None = None,
        usage: UsageTracker | None = None,
    ) -> None:
        self.base = base
        self.cap = cap
        self.retry_after_cap = retry_after_cap
        self._rng = rng or random.Random()
        self._usage = usage
        self._not_before = 0.0  # monotonic time before which no request is sent (after a 429)
        self._consecutive_429 = 0

    def capped(self, retry_after: float | None) -> float | None:
        """A server's Retry-After, within [0, retry_after_cap]."""
        return None if retry_after is None else min(max(0.0, retry_after), self.retry_after_cap)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Full jitter: uniform(0, min(cap, base * 2**attempt)), but at least Retry-After."""
        delay = self._rng.uniform(0.0, min(self.cap, self.base * 2**attempt))
        waited = self.capped(retry_after)
        return delay if waited is None else max(delay, waited)

    def throttled(self, cause: str, retry_after: float | None) -> None:
        """An attempt failed with `cause`: after a 429 or any Retry-After, pause the whole client."""
        pause = self.capped(retry_after)
        if cause == "429":
            self._consecutive_429 += 1
            if pause is None:
                pause = min(self.cap, self.base * 2 ** (self._consecutive_429 - 1))
        if pause is not None:
            self._not_before = max(self._not_before, time.monotonic() + pause)

    def succeeded(self) -> None:
        """A usable reply: the next 429 starts the pause small again."""
        self._consecutive_429 = 0

    async def wait_not_before(self) -> None:
        """Sleep until the client-wide pause is over, plus a little jitter."""
        paused = False
        while (remaining := self._not_before - time.monotonic()) > 0:
            paused = True
            if self._usage is not None:
                self._usage.backoff_seconds += remaining
            await asyncio.sleep(remaining)
        if paused:  # spread the herd released at the same instant
            await asyncio.sleep(self._rng.uniform(0.0, min(self.base, self.cap)))
