"""A bound on the one wait of a Ray run that no other bound ends: a cluster left unable to run its workers.

When a node is lost and the nodes left cannot hold the actor pool and the whole CPU Ray Data's
own tasks need beside it (`engine.default_workers`), Ray Data logs `Cluster resources are not
enough to run any task from ActorPoolMapOperator[MapBatches(CompressWorker)]. The job may hang
forever unless the cluster scales up` and waits for a node. On an autoscaling cluster one comes
(KubeRay replaces the pod) and the run finishes; on a fixed-size one (a CI data job) nothing
comes, and the driver waited until the job's own timeout killed it, saying nothing.

Ray's own bounds do not fit that wait: `DataContext.wait_for_min_actors_s` bounds only the
pool's start, not its recovery after a loss, and `execution_no_progress_timeout_s` (30 min by
default) stops any execution whose blocks stop moving, which a healthy run whose workers wait
on a slow or rate-limited endpoint does too. So the driver watches for exactly this case
(`StallWatch`): no part recorded while the alive nodes' CPUs are fewer than the pool needs, for
`--ray-stall-timeout` seconds on end; a new part, or a node joining that makes room, starts the
count again. It looks from Ray Data's own scheduling loop (an execution callback: the same
place Ray's no-progress guard raises from), so the run stops through Ray Data's failure path,
which shuts its executor down, with no signal and nothing of the driver's main thread touched.
The stop is resumable: the parts recorded so far are kept by the same command.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ray.data._internal.execution.execution_callback import ExecutionCallback

from trajectory_compressor.ray.layout import filesystem_of

RESUME = "re-run the same command to resume"
_CPU_UNIT = 1e-4  # Ray counts resources in ten-thousandths of a unit
_WATCHING: list[StallWatch] = []  # the driver's watch of the execution under way (the callback has no arguments)


class RayStalled(RuntimeError):
    """Raised in Ray Data's scheduling loop: it fails the execution, which Ray Data then shuts down."""


@dataclass
class StallWatch:
    """No part recorded while the cluster cannot hold the workers, for `seconds` on end: the run is stalled.

    `cpus` gives the alive nodes' CPUs (one call to the GCS), looked at every `poll` seconds at
    most, from `step`; `parts` counts the parts recorded so far (a listing of the records folder),
    looked at only when the cluster is short. `seconds` 0: never stalled (wait for a node forever).
    """

    seconds: float
    needed_cpus: float  # the actor pool's CPUs and one whole CPU for Ray Data's own tasks
    workers: int
    parts: Callable[[], int]
    cpus: Callable[[], float]
    clock: Callable[[], float] = time.monotonic
    fired: str | None = field(default=None, init=False)  # the message, once stalled
    _parts_seen: int | None = field(default=None, init=False)  # None: not listed since the cluster was whole
    _since: float | None = field(default=None, init=False)  # since when nothing was recorded and the cluster was short
    _next_look: float = field(default=float("-inf"), init=False)

    @property
    def poll(self) -> float:
        """Seconds between looks: a tenth of the bound, within [0.5, 10]."""
        return max(0.5, min(10.0, self.seconds / 10))

    def step(self) -> None:
        """Look at the cluster when due, and at the parts only when it is short; raise `RayStalled` once
        the bound is reached.

        The alive CPUs come first: a stall needs a short cluster, and a healthy one (every look of a
        run that loses no node) is one call to the GCS. The parts are a listing of the records
        folder, tens of thousands of objects on S3 for a big run, made from Ray Data's scheduling
        loop: only when the cluster is short. The count starts at the first look that finds it short;
        a part recorded since the look before starts it again at the next look.
        """
        if self.seconds <= 0 or self.fired is not None:
            return
        now = self.clock()
        if now < self._next_look:
            return
        self._next_look = now + self.poll
        try:
            cpus = self.cpus()
            # Within Ray's own unit of a resource: the pool's share summed in floats came to
            # 15.000000000000002 of a whole cluster's 15 CPUs (25 workers), short from the start.
            if cpus >= self.needed_cpus - _CPU_UNIT / 2:
                self._parts_seen, self._since = None, None
                return
            parts = self.parts()
        except Exception:  # a look that fails (the GCS busy, a listing refused) stops nothing: the next one decides
            return
        if self._parts_seen is not None and parts != self._parts_seen:
            self._parts_seen, self._since = parts, None
            return
        self._parts_seen = parts
        if self._since is None:
            self._since = now
        if now - self._since < self.seconds:
            return
        self.fired = (
            f"no part finished for {self.seconds:g} s while the cluster could not run the workers "
            f"({cpus:g} CPUs alive; the {self.workers} workers and Ray Data's own tasks need {self.needed_cpus:g}): "
            f"a node was lost and none replaced it; the parts written are kept: {RESUME} once the cluster has "
            "the CPUs again (--ray-stall-timeout waits longer, 0 forever)"
        )
        raise RayStalled(self.fired)

    def message(self, exc: BaseException) -> str | None:
        """The run's one line when `exc` ended a stalled execution: this watch's, or Ray Data's own no-progress
        guard's (`execution_no_progress_timeout_s`); None for any other error."""
        if self.fired is not None:
            return self.fired
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if type(current).__name__ == "ExecutionTimeoutError":
                return (
                    "Ray Data saw no progress for its execution_no_progress_timeout_s and stopped the run; "
                    f"the parts written are kept: {RESUME}"
                )
            current = getattr(current, "cause", None) or current.__cause__ or current.__context__
        return None

    @contextlib.contextmanager
    def watching(self, dataset: Any) -> Iterator[StallWatch]:
        """While `dataset` executes: this watch steps with Ray Data's scheduling loop, and Ray's own
        no-progress guard never stops the run before this bound does (0: it is off, as this one)."""
        context = dataset.context
        guard = context.execution_no_progress_timeout_s
        if self.seconds <= 0:
            context.execution_no_progress_timeout_s = -1
        elif guard > 0:
            context.execution_no_progress_timeout_s = max(guard, self.seconds)
        context.custom_execution_callback_classes.append(StallCallback)
        _WATCHING.append(self)
        try:
            yield self
        finally:
            _WATCHING.remove(self)
            context.custom_execution_callback_classes.remove(StallCallback)
            context.execution_no_progress_timeout_s = guard


class StallCallback(ExecutionCallback):
    """Ray Data's hook into its scheduling loop, made by its planner without arguments: steps the watch under way."""

    def on_execution_step(self, executor: Any) -> None:
        for watch in list(_WATCHING):
            watch.step()


def stall_watch(records_folder: str, seconds: float, workers: int) -> StallWatch:
    """The watch of a run whose parts are recorded in `records_folder`, with `workers` actors (`engine`)."""
    from trajectory_compressor.ray.engine import worker_cpus

    return StallWatch(
        seconds, workers * worker_cpus(workers) + 1.0, workers, lambda: recorded_parts(records_folder), alive_cpus
    )


def recorded_parts(folder: str) -> int:
    """How many part records the folder holds (a local path or a URI); 0 before it exists."""
    import pyarrow.fs as pafs

    filesystem, path = filesystem_of(folder)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError:
        return 0
    return sum(1 for info in infos if info.base_name.startswith("part-") and info.base_name.endswith(".json"))


def alive_cpus() -> float:
    """The CPUs of the cluster's alive nodes (Ray counts no dead node's)."""
    import ray

    return float(ray.cluster_resources().get("CPU", 0.0))
