"""`batches status|cancel OUTPUT`: the provider batches of a `compress --batch` run, shown or cancelled.

Both read the run's batch record and never write it, so they work beside a run that is polling
(cancelling from a second terminal is the point): the run sees the cancellation at its next look,
stores what the batch answered, and sends the rest to `--batch-fallback`. With an endpoint
(`--base-url` or `OPENAI_BASE_URL`) `status` asks the provider for the current counts; without
one it shows what the run saw last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.run.batch.driver import batch_status
from trajectory_compressor.run.batch.state import STATE_NAME, BatchState
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.write.paths import OutputPaths


@dataclass
class RunBatches:
    """One output's batch folder and what its record says."""

    folder: Path
    state: BatchState


def find_batches(output: Path) -> list[RunBatches]:
    """The batch records of the run writing `output` (of every output under it, for a directory)."""
    folders = [OutputPaths.beside(output).batch_dir]
    if output.is_dir():
        folders = sorted(path.parent for path in output.rglob(f".*.batches/{STATE_NAME}"))
    found = [RunBatches(folder, BatchState.load(folder)) for folder in folders if (folder / STATE_NAME).exists()]
    if not found:
        raise UsageError(
            f"no batches are recorded for {quoted(output)} (a `compress --batch` run keeps them until it is done)"
        )
    return found


async def batches_status(output: Path, endpoint: LLMConfig | None) -> list[dict[str, Any]]:
    """Each batch of the run: as recorded, refreshed from the provider when an endpoint is given."""
    runs = find_batches(output)
    if endpoint is not None:
        from trajectory_compressor.run.batch.driver import refresh

        for run in runs:
            await refresh(run.state, endpoint)
    return [{"folder": str(run.folder), **batch_status(run.state)} for run in runs]


async def cancel_batches(output: Path, endpoint: LLMConfig) -> list[str]:
    """Ask the provider to cancel every batch of the run that is not over; the ids cancelled."""
    from trajectory_compressor.run.batch.driver import cancel

    cancelled: list[str] = []
    for run in find_batches(output):
        cancelled += await cancel(run.state, endpoint)
    return cancelled


def render_status(runs: list[dict[str, Any]]) -> str:
    lines = []
    for run in runs:
        lines.append(f"{run['folder']}: {run['rounds']} round(s), {run['answers']:,} answers stored, "
                     f"{run['failed_requests']:,} requests failed in a batch")  # fmt: skip
        for batch in run["batches"]:
            counts = ", ".join(f"{k} {v:,}" for k, v in batch["request_counts"].items())
            lines.append(
                f"  round {batch['round']} {batch['file']}: {batch['requests']:,} requests, "
                f"{batch['batch_id'] or '-'} {batch['status']}"
                + (f" ({counts})" if counts else "")
                + (", stored" if batch["stored"] else "")
            )
    return "\n".join(lines)
