"""`compress_dataset`: a Ray Dataset of trajectories in, a Dataset of compressed rows out.

For users who build their own Ray pipelines (read with Ray Data, compress, write or feed a
trainer) and for the CLI's driver (`ray.run`). The work happens in an actor pool of
`CompressWorker`s; the run's limits live in one `RunLimits` actor every worker consults.

Order: the input order is kept (`preserve_order` is set on the current `DataContext`), and
every output row carries `row_index`, its position in the input stream, for anyone who
reorders or writes the rows apart.
"""

from __future__ import annotations

import math
from typing import Any

from trajectory_compressor.ray.actor import CompressWorker
from trajectory_compressor.ray.limits import start_limits
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.summarize.choose import resolve_endpoint

# Rows per actor call: each call is a Ray task with a fixed cost (tens of ms), so not too few;
# several calls run on one actor at once (`calls_per_actor`), so requests stay in flight.
BATCH_ROWS = 64


def compress_dataset(
    dataset: Any,
    settings: RunConfig | None = None,
    *,
    num_workers: int | None = None,
    cache_folder: str | None = None,
    batch_size: int = BATCH_ROWS,
    keep_rejects_in_data: bool = True,
    limits: Any = None,
    source_name: str = "dataset",
) -> Any:
    """Compress every row of `dataset`; returns a lazy `ray.data.Dataset` of `actor.OUT_SCHEMA` rows.

    `dataset` holds either the rows of `read_inputs` (exact bytes, file and line of each record)
    or plain records, one per row (columns such as `conversations` / `messages`, `id`; an
    optional `row_index` column numbers them, else `index` is -1 in their metrics). Each output
    row has `row_index`, `record` (the dataset line, JSON bytes; None when not written),
    `metrics` (the metrics line), `over_limit` and `reject` (JSON, or None).

    `settings` is the same `RunConfig` as the local engine's (`num_workers` defaults to its
    `num_workers`, else one per CPU of the cluster). `cache_folder` is the shared folder of the
    summary cache (None: no cache). `limits` is a `RunLimits` actor to share; a new one is made
    otherwise. Call `ray.init` first (or let Ray start a local instance).
    """
    import ray
    import ray.data

    config = resolve_endpoint(settings or RunConfig())
    config.validate()
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    if limits is None:
        limits = start_limits(config.llm.max_concurrency, config.llm.rpm, config.llm.tpm)
    workers = num_workers or config.num_workers or default_workers()
    calls = calls_per_actor(config.llm.max_concurrency, workers, batch_size)
    return dataset.repartition(target_num_rows_per_block=batch_size).map_batches(
        CompressWorker,
        fn_constructor_args=(config, limits, cache_folder),
        fn_constructor_kwargs={"keep_rejects_in_data": keep_rejects_in_data, "source_name": source_name},
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(
            size=workers,
            max_concurrent_calls_per_actor=calls,
            max_tasks_in_flight_per_actor=calls,
            enable_true_multi_threading=True,
        ),
        num_cpus=worker_cpus(workers),
    )


def cluster_cpus() -> float:
    import ray

    return float(ray.cluster_resources().get("CPU", 1.0))


def default_workers() -> int:
    """One worker per CPU of the cluster but one; two on a single machine of two CPUs.

    A whole CPU must stay free on some node for Ray Data's own one-CPU tasks (the repartition
    that spreads a file's rows over the actors, the writes): with actors of fractional CPUs on
    several nodes, the free fractions can be spread so that no node has a whole one, and the run
    waits forever (seen on three nodes of one CPU with three workers). On one node, two workers
    of half a CPU each leave the other CPU whole: one worker there was slower than the local
    engine (docs/performance.md: 0.50x; the default of two, 0.71x, and 1.41x one worker).
    """
    import ray

    cpus = cluster_cpus()
    spare = max(1, int(cpus - 1.0))
    if spare < 2 <= cpus and sum(1 for node in ray.nodes() if node.get("Alive")) == 1:
        return 2
    return spare


def worker_cpus(workers: int) -> float:
    """CPUs each actor asks for: one, or less when the cluster has fewer.

    One CPU stays free for Ray Data's own one-CPU tasks (the repartition that spreads a file's
    rows over the actors, the writes): with every CPU held by an actor they would never run.
    """
    return max(0.05, min(1.0, (cluster_cpus() - 1.0) / workers))


def calls_per_actor(max_concurrency: int, workers: int, batch_size: int) -> int:
    """Batches one actor works on at once: enough that the workers together can fill
    `--max-concurrency` twice over (a batch's rows finish unevenly), at least 2, at most 16."""
    return max(2, min(16, math.ceil(2 * max_concurrency / (workers * batch_size))))
