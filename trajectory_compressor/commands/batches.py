"""`batches status|cancel OUTPUT`: the provider batches of a `compress --batch` run, shown or cancelled.

Both read the run's batch record and never write it, so they work beside a run that is polling
(cancelling from a second terminal is the point): the run sees the cancellation at its next look,
stores what the batch answered, and sends the rest to `--batch-fallback`. The record names the
API its batches went to (`--api`), so both ask that provider, in its dialect. With an endpoint
(`--base-url`, or the dialect's `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`) `status` asks the
provider for the current counts; without one it shows what the run saw last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.run.batch.driver import batch_status
from trajectory_compressor.run.batch.state import STATE_NAME, BatchState
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.settings.endpoint import ApiName
from trajectory_compressor.summarize.llm.dialects import DIALECTS
from trajectory_compressor.write.paths import OutputPaths


@dataclass(frozen=True)
class BatchEndpoint:
    """Where `batches status|cancel` ask, as the user gave it; the dialect is the record's."""

    base_url: str | None = None
    api_key_env: str | None = None

    def config(self, api: str, *, default: bool) -> LLMConfig | None:
        """The endpoint of a record whose batches went to `api`: `--base-url`, else the dialect's
        environment variable, else (`default`) the dialect's own endpoint; None when there is none."""
        defaults = DIALECTS.get(api)
        if defaults is None:
            raise UsageError(f"the batch record names an API this version does not know: {quoted(api)}")
        url = self.base_url or os.environ.get(defaults.base_url_env) or (defaults.base_url if default else None)
        if not url:
            return None
        return LLMConfig(api=cast(ApiName, api), base_url=url, model="batches", api_key_env=self.api_key_env)


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


async def batches_status(output: Path, endpoint: BatchEndpoint) -> list[dict[str, Any]]:
    """Each batch of the run: as recorded, refreshed from the provider when an endpoint is given."""
    runs = find_batches(output)
    for run in runs:
        config = endpoint.config(run.state.api, default=False)
        if config is not None:
            from trajectory_compressor.run.batch.driver import refresh

            await refresh(run.state, config)
    return [{"folder": str(run.folder), **batch_status(run.state)} for run in runs]


async def cancel_batches(output: Path, endpoint: BatchEndpoint) -> list[str]:
    """Ask the provider to cancel every batch of the run that is not over; the ids cancelled."""
    from trajectory_compressor.run.batch.driver import cancel

    cancelled: list[str] = []
    for run in find_batches(output):
        config = endpoint.config(run.state.api, default=True)
        if config is None:
            env = DIALECTS[run.state.api].base_url_env
            raise UsageError(f"cancelling needs the endpoint: pass --base-url or set {env}")
        cancelled += await cancel(run.state, config)
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
