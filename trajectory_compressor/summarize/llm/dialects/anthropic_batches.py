"""Anthropic's Message Batches API (`/v1/messages/batches`): create, look, cancel, results.

No file is uploaded: the requests are posted in the create call itself (`{"requests": [{"custom_id",
"params"}, ...]}`, read from the round's request file as written). A batch is `in_progress`, then
`canceling` if asked, then `ended`; each request ends `succeeded`, `errored`, `canceled` or
`expired`, and the results are one JSONL file at the batch's `results_url`.

Never paid twice: Anthropic's batches carry no metadata and no input file, and its API takes no
idempotency key, so a batch whose create reply was lost (or that a killed run created but never
recorded) is recognised by what can be known of it. Before a file's first create is sent, the
newest batch of the workspace is noted (`create_marker`) and recorded with the time
(`BatchJob.marker`, `sent_at`, in the batch record before the create goes out); a later look
takes the batches listed above that marker (made after it, whatever the clocks say) holding
exactly the file's number of requests and not already the run's own, and of those the oldest,
the one closest after the send. Only two creates of the same size racing in the same workspace
between the note and the create could be confused after a lost reply; the answers would then
not be this file's, and its requests go to `--batch-fallback`, as for a failed batch. Without a
usable list nothing is looked for (said once), as for OpenAI.

The results are read from `results_url` when it is on the configured endpoint, and from the
documented path under the endpoint otherwise: the API key is sent to no other host.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from trajectory_compressor.messages import quoted
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.batch_api import BatchAPIError, BatchTransport, required
from trajectory_compressor.summarize.llm.dialects.anthropic import AnthropicDialect
from trajectory_compressor.summarize.llm.dialects.base import BatchJob, BatchView

BATCHES_PATH = "/v1/messages/batches"
CLOCK_SKEW_SECONDS = 60.0  # without a marker: a batch made this long before our clock's send may be it
RESULT_COUNTS = ("succeeded", "errored", "canceled", "expired")


class AnthropicBatches:
    """The Message Batches calls of one run (`base.BatchCalls`); `async with` closes the session."""

    uploads = False

    def __init__(
        self, config: LLMConfig, *, rng: random.Random | None = None, warn: Callable[[str], None] | None = None
    ) -> None:
        self.http = BatchTransport(config, AnthropicDialect(config), rng=rng, warn=warn)
        self.endpoint = self.http.endpoint

    def sanitize(self, text: str) -> str:
        return self.http.sanitize(text)

    async def upload(self, path: Path, name: str, *, since: float = 0.0) -> str:
        raise BatchAPIError("Anthropic's Message Batches take their requests in the create call, not as a file")

    async def create_batch(self, job: BatchJob, *, window: str, metadata: dict[str, str]) -> BatchView:
        """Create the batch of `job`'s requests, or return the one a lost reply or a killed run made.

        `window` and `metadata` have no place in Anthropic's API (a batch has 24 hours)."""
        try:
            lines = [line.rstrip(b"\n") for line in job.path.read_bytes().splitlines() if line.strip()]
        except OSError as exc:
            raise BatchAPIError(f"cannot read the request file {quoted(job.path)}: {exc.strerror or exc}") from None
        payload = b'{"requests":[' + b",".join(lines) + b"]}"

        async def already() -> BatchView | None:
            return await self.find_batch(job)

        found = await already() if job.sent_before else None
        if found is not None:
            return found
        what = f"create the batch of {job.path.name}"
        made = await self.http.call("POST", BATCHES_PATH, payload=payload, recheck=already, what=what)
        return made if isinstance(made, BatchView) else self._view(made, "create")

    async def create_marker(self) -> str | None:
        """The newest batch of the workspace ("" when there is none; None without a usable list)."""
        async for item in self.http.pages(BATCHES_PATH, {}, cursor="after_id", made_at=_made_at):
            return str(item["id"])
        return "" if self.http.lists(BATCHES_PATH) else None

    async def find_batch(self, job: BatchJob) -> BatchView | None:
        """The batch a create of `job` sent earlier made, if one can be recognised (see the module)."""
        found: dict[str, Any] | None = None
        async for item in self.http.pages(BATCHES_PATH, {}, since=job.sent_at, cursor="after_id", made_at=_made_at):
            if job.marker is not None and str(item["id"]) == job.marker:
                break  # this one and every later one were there before the create was sent
            made = _made_at(item)
            if job.marker is None and (made is None or made < job.sent_at - CLOCK_SKEW_SECONDS):
                continue  # without a marker, the clocks say what came after the send
            counts = item.get("request_counts")
            if str(item["id"]) not in job.claimed and isinstance(counts, dict) and _total(counts) == job.requests:
                found = item  # newest first: the last one seen is the oldest, the closest after the send
        return self._view(found, "list") if found is not None else None

    async def get_batch(self, batch_id: str) -> BatchView:
        reply = await self.http.call("GET", f"{BATCHES_PATH}/{batch_id}", what=f"look at batch {batch_id}")
        return self._view(reply, "look")

    async def cancel_batch(self, batch_id: str) -> BatchView:
        reply = await self.http.call("POST", f"{BATCHES_PATH}/{batch_id}/cancel", what=f"cancel batch {batch_id}")
        return self._view(reply, "cancel")

    async def download(self, reference: str, destination: Path) -> None:
        """The results at `reference` (a URL on the endpoint) into `destination`."""
        await self.http.download(reference, destination, what="download the results")

    def _view(self, batch: Any, what: str) -> BatchView:
        """An Anthropic batch in the run's words: `ended` is cancelled (if a cancel was asked),
        expired (if requests expired) or completed; its results go in `<file>.results.jsonl`."""
        batch_id = required(batch, "id", what)
        raw = batch.get("request_counts")
        counts = (
            {k: int(v) for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
            if isinstance(raw, dict)
            else None
        )
        state = batch.get("processing_status")
        status = {"in_progress": "in_progress", "canceling": "cancelling"}.get(str(state)) if state else None
        downloads: dict[str, str] = {}
        if state == "ended":
            if batch.get("cancel_initiated_at"):
                status = "cancelled"
            else:
                status = "expired" if counts and counts.get("expired") else "completed"
            downloads["results"] = self._results_url(batch_id, batch.get("results_url"))
        elif state and status is None:
            status = str(state)
        done = None if counts is None else sum(counts.get(name, 0) for name in RESULT_COUNTS)
        return BatchView(batch_id, status, counts, done, downloads)

    def _results_url(self, batch_id: str, given: Any) -> str:
        """`results_url` if it is on the endpoint (scheme, host, port, and under its path), else the
        documented path under the endpoint: the key goes nowhere else."""
        base = self.http.base
        documented = self.http.credentials.url_for(f"{BATCHES_PATH}/{batch_id}/results")
        if not isinstance(given, str):
            return documented
        try:
            ours, theirs = urlsplit(base), urlsplit(given)
        except ValueError:
            return documented
        same = (ours.scheme, ours.netloc) == (theirs.scheme, theirs.netloc)
        return given if same and theirs.path.startswith(ours.path) else documented

    async def __aenter__(self) -> AnthropicBatches:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.http.aclose()


def _total(counts: dict[str, Any]) -> int:
    return sum(int(v) for v in counts.values() if isinstance(v, int) and not isinstance(v, bool))


def _made_at(item: dict[str, Any]) -> float | None:
    """`created_at` (RFC 3339) as epoch seconds."""
    made = item.get("created_at")
    if not isinstance(made, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(made.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()
