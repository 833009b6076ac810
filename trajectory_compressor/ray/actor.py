"""The map_batches class: what one Ray actor does with a batch of rows, by the local engine's parts.

An actor is made once per worker: it loads the tokenizer, builds the summarizers (one HTTP
session, the shared-folder cache, the cluster-wide gate) and runs one event loop in a thread of
its own. A batch is validated, counted and planned in the calling thread (`prepare_rows`, the
tokenizer's batch speed, without the GIL), and its rows are finished concurrently on the loop
(`RowFinisher.finish` under `asyncio.gather`). Ray runs several batches on one actor at once
(`calls_per_actor`), so a batch's slowest row does not leave the actor idle and one actor keeps
many requests in flight; the cluster-wide gate caps them all. The rows come out as the lines
the local engine would commit: dataset line, metrics line, over-limit entry, reject line,
byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import Any

import pyarrow as pa

from trajectory_compressor.errors import RunAborted
from trajectory_compressor.read.jsonl import parse_json_line, parse_record
from trajectory_compressor.run.prepare import PreparedRow, notice_tokens, prepare_for_run
from trajectory_compressor.run.row import FinishedRow, RowFinisher
from trajectory_compressor.settings import RunConfig, with_values
from trajectory_compressor.types import SourceRecord
from trajectory_compressor.write.records import dumps

OUT_SCHEMA = pa.schema(
    [
        ("row_index", pa.int64()),
        ("record", pa.binary()),  # the dataset line (JSON), None when the row is not written
        ("metrics", pa.binary()),  # the metrics line (JSON)
        ("over_limit", pa.binary()),  # the over-limit entry (JSON), when the row is still over
        ("reject", pa.binary()),  # the reject line (JSON), for a bad record
    ]
)
ABORT_SECONDS = 30  # telling the limits actor the run stopped: never waited on longer
INPUT_COLUMNS = frozenset({"row_index", "source", "line", "raw", "payload", "error"})


class CompressWorker:
    """`dataset.map_batches(CompressWorker, ...)`: batches of input rows in, `OUT_SCHEMA` rows out."""

    def __init__(
        self,
        config: RunConfig,
        limits: Any,
        cache_folder: str | None,
        *,
        keep_rejects_in_data: bool = True,
        source_name: str = "dataset",
    ) -> None:
        from trajectory_compressor.count import counter_for
        from trajectory_compressor.ray.cache import SharedFolderCache
        from trajectory_compressor.ray.limits import ClusterGate
        from trajectory_compressor.summarize.choose import choose_summarizers

        self.config = config
        self.source_name = source_name
        _share_cores()
        self.counter = counter_for(config)
        self.notice_tokens = notice_tokens(self.counter, config.plan)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="compress-worker-loop", daemon=True).start()
        self.gate = ClusterGate(limits) if limits is not None else None
        self._register()
        cache = SharedFolderCache(cache_folder) if cache_folder and config.llm.use_cache else None
        # No shared folder, no cache: never each worker's own default file, on machines apart.
        choosing = config if cache is not None else with_values(config, "llm", use_cache=False)
        choice = None if config.dry_run else choose_summarizers(choosing, self.counter, cache=cache, gate=self.gate)
        self.summarizer = choice.primary if choice else None
        self.finisher = RowFinisher(
            config,
            self.counter,
            self.summarizer,
            choice.fallback if choice else None,
            keep_rejects_in_data=keep_rejects_in_data,
        )

    def _register(self) -> None:
        """Tell the run's limits actor who this worker is (tests find the pool's actors there)."""
        if self.gate is None:
            return
        import ray

        self.gate.limits.register.remote(self.gate.worker, ray.get_runtime_context().current_actor)
        self.loop.call_soon_threadsafe(self.gate.start_heartbeat)  # alive: its slots are its own

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = [(index, index + 1, item) for index, item in self._records(batch)]
        prepared = prepare_for_run(rows, self.counter, self.config, self.notice_tokens)
        finished = asyncio.run_coroutine_threadsafe(self._finish(prepared), self.loop).result()
        rows_out = [output_row(row, done) for row, done in zip(prepared, finished, strict=True)]
        return pa.Table.from_pylist(rows_out, OUT_SCHEMA)

    async def _finish(self, prepared: list[PreparedRow]) -> list[FinishedRow]:
        try:
            return list(await asyncio.gather(*(self.finisher.finish(row) for row in prepared)))
        except RunAborted as exc:  # the driver learns it from the limits actor: Ray passes on text only
            if self.gate is not None:
                with contextlib.suppress(Exception):  # that actor lost: the driver reads the cause instead
                    await asyncio.wait_for(self.gate.limits.abort.remote(str(exc), int(exc.exit_code)), ABORT_SECONDS)
            raise
        finally:
            if self.gate is not None:  # usage and exactness guard, held by the actor before the batch goes back
                stats = self.summarizer.stats() if self.summarizer is not None else None
                await self.gate.report(stats, self.counter.guard.to_dict())

    def _records(self, batch: pa.Table) -> list[tuple[int, SourceRecord]]:
        """The batch's rows as the local reader's `SourceRecord`s: from `read_inputs` rows, or plain records."""
        if INPUT_COLUMNS.issubset(batch.column_names):
            return [(row["row_index"], input_record(row)) for row in batch.to_pylist()]
        records = []
        for row in batch.to_pylist():
            index = row.pop("row_index", -1)
            records.append((index, SourceRecord(source=self.source_name, line=index + 1, record=row)))
        return records

    def __del__(self) -> None:
        summarizer, loop = getattr(self, "summarizer", None), getattr(self, "loop", None)
        if summarizer is not None and loop is not None and loop.is_running():
            # An actor going away: close the HTTP session and the cache; nothing to report to.
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(summarizer.aclose(), loop).result(timeout=10)


def _share_cores() -> None:
    """Give the tokenizer's thread pool the CPUs Ray gave this actor, not every core of the node.

    The Rust tokenizer sizes its pool by the machine; N actors on one node would each start one
    thread per core and fight over them. Set before the tokenizer is first used.
    """
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    os.environ.setdefault("RAYON_NUM_THREADS", str(max(1, round(cpus))))


def input_record(row: dict[str, Any]) -> SourceRecord:
    """A `read_inputs` row back into the `SourceRecord` the local reader made of it."""
    source, line = row["source"], row["line"]
    if row["raw"] is not None:
        return parse_record(source, line, row["raw"])
    if row["payload"] is not None:
        return SourceRecord(source=source, line=line, record=parse_json_line(row["payload"]))
    return SourceRecord(source=source, line=line, error=row["error"])


def output_row(row: PreparedRow, finished: FinishedRow) -> dict[str, Any]:
    """The lines the local engine commits for a finished row (`run.commit.RowCommitter.commit`).

    A row written as several records (`--windows`) gives each column its lines joined by
    newlines, in order: JSON lines hold none of their own, so the part writers split them back.
    """
    records = finished.records()
    data = [record.data for record in records if record.data is not None]
    over = [dumps(record.over_limit) for record in records if record.over_limit is not None]
    return {
        "row_index": row.index,
        "record": b"\n".join(data) if data else None,
        "metrics": b"\n".join(dumps(record.metrics.to_dict()) for record in records),
        "over_limit": b"\n".join(over) if over else None,
        "reject": dumps(finished.reject) if finished.reject is not None else None,
    }
