"""Client-side request and token rate limits (`--rpm`, `--tpm`).

Providers publish limits per minute; staying under them avoids 429 storms, which cost a
round trip each and slow the whole run down. A token bucket per limit, refilled continuously,
with a small burst so the first requests are not spread out needlessly.

A request larger than the bucket (a 30k-token prompt against a 20k burst) is let through when
the bucket is full and leaves it in debt; later requests wait for the debt to be repaid. So any
request size works and the long-run rate still holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

CHARS_PER_TOKEN = 4.0  # rough estimate for the prompt side of `tpm`
BURST_SECONDS = 10.0  # a full bucket holds this many seconds of the limit


class TokenBucket:
    """An async token bucket: `await bucket.acquire(n)` returns once `n` units may be spent."""

    def __init__(
        self,
        per_minute: float,
        *,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.rate = per_minute / 60.0  # units per second
        self.capacity = float(burst) if burst is not None else max(1.0, self.rate * BURST_SECONDS)
        self._clock = clock
        self._sleep = sleep  # with `clock`, lets a test run the bucket on simulated time
        self._level = self.capacity
        self._updated = clock()
        self._lock = asyncio.Lock()  # FIFO: waiters are served in arrival order

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._updated) * self.rate)
        self._updated = now

    async def acquire(self, amount: float = 1.0) -> float:
        """Wait until `amount` units are available (or the bucket is full), then spend them.

        Returns the seconds waited, for tests and metrics.
        """
        waited = 0.0
        need = min(float(amount), self.capacity)
        async with self._lock:
            while True:
                self._refill()
                if self._level >= need:
                    self._level -= amount  # may go negative: debt for oversized requests
                    return waited
                delay = (need - self._level) / self.rate
                await self._sleep(delay)
                waited += delay


class RateLimiter:
    """The `rpm` and `tpm` buckets together; either may be absent."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        self.requests = TokenBucket(rpm) if rpm else None
        self.tokens = TokenBucket(tpm) if tpm else None

    @property
    def enabled(self) -> bool:
        return self.requests is not None or self.tokens is not None

    async def acquire(self, estimated_tokens: int) -> float:
        """Wait for one request slot and `estimated_tokens` tokens; returns seconds waited."""
        waited = 0.0
        if self.requests is not None:
            waited += await self.requests.acquire(1)
        if self.tokens is not None:
            waited += await self.tokens.acquire(max(1, estimated_tokens))
        return waited


def estimate_request_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """Tokens a request may count against `tpm`: prompt characters / 4 plus `max_tokens`.

    Providers count the requested `max_tokens` against the limit up front, so it belongs in
    the estimate even though the reply is usually shorter.
    """
    chars = sum(len(message.get("content") or "") for message in messages)
    return int(chars / CHARS_PER_TOKEN) + max_tokens


class RequestGate(Protocol):
    """Admission shared beyond one client: requests in flight and rate limits for many processes.

    A `ChatClient` given a gate asks it before each request (after its own concurrency cap)
    instead of its local `rpm` / `tpm` buckets, and tells it when the request is over, so
    `--max-concurrency`, `--rpm` and `--tpm` hold for every client behind the gate together
    (the Ray engine's workers: `trajectory_compressor.ray.limits`).
    """

    async def acquire(self, estimated_tokens: int) -> float:
        """Wait for a slot and the rate; returns the seconds waited."""
        ...

    def release(self) -> None:
        """The request that took a slot is over (answered, failed or cancelled); never blocks."""
        ...
