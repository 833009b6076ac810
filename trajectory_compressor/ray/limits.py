"""Limits for the whole cluster: one async actor hands out request slots and rate, and sums usage.

`--max-concurrency`, `--rpm` and `--tpm` are promises to an endpoint, not to a process: with N
workers each applying them alone the endpoint would see N times the limit. So every worker's
HTTP client asks `RunLimits` before each request (`ClusterGate`, the client's `RequestGate`)
and tells it when the request is over. The buckets are the local engine's own `RateLimiter`.

A worker killed while its requests are in flight never says they are over. Each worker
therefore sends a heartbeat while it holds slots, and the slots of a worker silent for
a lease (`TC_RAY_LEASE_SECONDS`, 10 s) are taken back (a restarted worker is a new worker: new id, new slots).
The actor also keeps each worker's latest usage counters (`UsageTracker.stats()`), so the
run report adds up every worker's requests, retries and tokens, killed ones included.

The actor lives on the driver's node (node affinity, not soft): every worker's requests go
through it, so on any other node the loss of that node (a spot preemption, a scale-down) would
end the run; the driver's node is the one whose loss ends it anyway. Its process may still die
(an OOM kill): Ray restarts it and retries the calls in flight, and it starts empty, which the
workers tolerate (a slot released that the new actor never granted is ignored; usage is
reported again, whole, after each batch). A worker whose call fails all the same stops the run
with `RunAborted` (exit `LOST`), never a row's summary failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from typing import Any

from trajectory_compressor.errors import RunAborted
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.summarize.llm.ratelimit import RateLimiter
from trajectory_compressor.summarize.llm.usage import merge_usage

LEASE_SECONDS = 10.0  # the default; a run's comes from `TC_RAY_LEASE_SECONDS` (`environment`), handed to the actor
HEARTBEAT_SECONDS = LEASE_SECONDS / 4  # a worker's first beat; the actor's answer sets the next ones (`lease / 4`)
REPORT_SECONDS = 30  # a worker's figures handed to the actor: never waited on longer


class RunLimits:
    """The run's cluster-wide admission (an async Ray actor: one event loop serves every worker)."""

    def __init__(
        self, max_concurrency: int, rpm: float | None = None, tpm: float | None = None, lease: float | None = None
    ) -> None:
        self.max_concurrency = max_concurrency
        self.lease = lease or LEASE_SECONDS  # the driver's, read at the run's start (the actor's env may differ)
        self.rates = RateLimiter(rpm, tpm)
        self.in_flight = 0
        self.max_in_flight = 0
        self.granted = 0
        self.reclaimed = 0
        self._held: Counter[str] = Counter()  # worker id -> slots held
        self._seen: dict[str, float] = {}  # worker id -> monotonic time of its last word
        self._stats: dict[str, dict[str, Any]] = {}
        self._counting: dict[str, dict[str, Any]] = {}  # each worker's exactness guard
        self._actors: dict[str, Any] = {}
        self._aborted: tuple[str, int] | None = None
        self._changed: asyncio.Condition | None = None
        self._reaper: asyncio.Task[None] | None = None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        return self._changed

    async def acquire(self, worker: str, estimated_tokens: int) -> float:
        """Wait for a slot under `max_concurrency`, then for the rate; returns the seconds waited."""
        started = time.monotonic()
        changed = self._condition()
        self._seen[worker] = started
        async with changed:
            await changed.wait_for(lambda: self.in_flight < self.max_concurrency)
            self.in_flight += 1
        self._held[worker] += 1
        self.granted += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.rates.enabled:
            await self.rates.acquire(estimated_tokens)
        self._seen[worker] = time.monotonic()
        return time.monotonic() - started

    async def release(self, worker: str) -> None:
        """One request of `worker` is over."""
        self._seen[worker] = time.monotonic()
        if self._held[worker] > 0:
            self._held[worker] -= 1
            await self._free(1)

    def register(self, worker: str, actor: Any) -> None:
        """A worker's actor handle, so a test can find (and kill) the pool's actors."""
        self._actors[worker] = actor

    def actors(self) -> list[Any]:
        return list(self._actors.values())

    def holders(self) -> list[tuple[Any, int]]:
        """(actor handle, slots held) of each registered worker: a test kills one mid-request."""
        return [(actor, self._held[worker]) for worker, actor in self._actors.items()]

    def abort(self, message: str, exit_code: int) -> None:
        """A worker stopped the run (`RunAborted`: a refused key, `--on-summary-failure fail`).

        Kept here because the exception reaches the driver only as text, inside Ray's wrappers.
        """
        if self._aborted is None:
            self._aborted = (message, exit_code)

    def aborted(self) -> tuple[str, int] | None:
        return self._aborted

    def heartbeat(self, worker: str) -> float:
        """A worker's word that it lives; the answer is when to say it next (a quarter of the lease)."""
        self._seen[worker] = time.monotonic()
        return self.lease / 4

    def report(self, worker: str, stats: dict[str, Any] | None, counting: dict[str, Any]) -> None:
        """The worker's usage counters and exactness guard so far (`UsageTracker.stats()`,
        `GuardResult.to_dict`): both only grow, so the latest replaces the last."""
        self._seen[worker] = time.monotonic()
        if stats is not None:
            self._stats[worker] = stats
        self._counting[worker] = counting

    def counting(self) -> list[dict[str, Any]]:
        """Every worker's guard, for the driver to add up into the report."""
        return list(self._counting.values())

    def usage(self) -> dict[str, Any]:
        """Every worker's counters added up; `max_in_flight` is the cluster's, seen here."""
        total = merge_usage(list(self._stats.values()))
        if self.granted:
            total["max_in_flight"] = self.max_in_flight
        total["workers"] = len(self._stats)
        total["slots_reclaimed"] = self.reclaimed
        return total

    def state(self) -> dict[str, int]:
        """For tests: slots in flight now and at most, and how many were taken back."""
        return {"in_flight": self.in_flight, "max_in_flight": self.max_in_flight, "reclaimed": self.reclaimed}

    async def _free(self, slots: int) -> None:
        changed = self._condition()
        async with changed:
            self.in_flight -= slots
            changed.notify_all()

    async def _reap(self) -> None:
        """Take back the slots of workers silent for longer than a lease (killed mid-request)."""
        while True:
            await asyncio.sleep(min(1.0, self.lease / 4))
            now = time.monotonic()
            for worker, held in list(self._held.items()):
                if held and now - self._seen.get(worker, now) > self.lease:
                    self._held[worker] = 0
                    self.reclaimed += held
                    await self._free(held)


RESTARTS = 3  # the actor's process killed more often than this ends the run (exit LOST)
LOST_LIMITS = "the run's limits actor (RunLimits, on the driver's node) was lost"
RESUME = "re-run the same command to resume"


def start_limits(max_concurrency: int, rpm: float | None, tpm: float | None, lease: float = LEASE_SECONDS) -> Any:
    """The run's `RunLimits` actor, on this (the driver's) node; not detached: it ends with the driver."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
    actor = ray.remote(RunLimits).options(
        num_cpus=0,
        max_concurrency=10_000,
        name=f"trajectory-compressor-limits-{uuid.uuid4().hex[:12]}",
        scheduling_strategy=here,
        max_restarts=RESTARTS,
        max_task_retries=RESTARTS,
    )
    return actor.remote(max_concurrency, rpm, tpm, lease)


class ClusterGate:
    """A worker's `RequestGate`: its client's slots and rate come from the run's `RunLimits` actor."""

    def __init__(self, limits: Any) -> None:
        self.limits = limits
        self.worker = uuid.uuid4().hex
        self._heartbeat: asyncio.Task[None] | None = None

    async def acquire(self, estimated_tokens: int) -> float:
        from ray.exceptions import RayActorError

        self.start_heartbeat()
        ref = self.limits.acquire.remote(self.worker, estimated_tokens)
        try:
            waited = await ref
        except asyncio.CancelledError:  # the row gave up waiting; the slot may still come: return it
            asyncio.get_running_loop().create_task(self._release_when_granted(ref))
            raise
        except RayActorError as exc:  # restarted RESTARTS times already: the run cannot keep its limits
            message = (
                f"{LOST_LIMITS} ({type(exc).__name__}); the parts written are kept: re-run the same command to resume"
            )
            raise RunAborted(message, ExitCode.LOST) from None
        return float(waited)

    def release(self) -> None:
        self.limits.release.remote(self.worker)

    async def _release_when_granted(self, ref: Any) -> None:
        with contextlib.suppress(Exception):
            await ref
            self.limits.release.remote(self.worker)

    async def report(self, stats: dict[str, Any] | None, counting: dict[str, Any]) -> None:
        """Hand the actor this worker's figures, and wait until it holds them.

        Awaited before the batch goes back: Ray orders one caller's calls, not two callers'.
        Sent and forgotten, a worker's last report could reach the actor after the driver,
        done with every part, asked for the sum, and the report would count fewer requests
        and cache hits than the run made (seen on a loaded CI machine: 71 hits of 93).
        """
        with contextlib.suppress(Exception):  # the actor lost: the run learns it from `acquire` or the driver
            await asyncio.wait_for(self.limits.report.remote(self.worker, stats, counting), REPORT_SECONDS)

    def start_heartbeat(self) -> None:
        """Beat while this worker's loop runs (call on the loop): a killed worker falls silent."""
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat())

    async def _beat(self) -> None:
        """Beat every quarter of the run's lease, which the actor answers with (the worker's own
        environment may not hold the driver's `TC_RAY_LEASE_SECONDS`); never waits longer on it."""
        interval = HEARTBEAT_SECONDS
        while True:
            answer = self.limits.heartbeat.remote(self.worker)
            with contextlib.suppress(Exception):  # the actor lost or slow: the last interval
                interval = float(await asyncio.wait_for(answer, interval)) or interval
            await asyncio.sleep(interval)
