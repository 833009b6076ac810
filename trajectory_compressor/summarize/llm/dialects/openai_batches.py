"""OpenAI's Files + Batches API (`/v1/files`, `/v1/batches`): upload, create, look, download.

The shape OpenAI, Azure OpenAI, Groq, Together, Fireworks and others serve. The two calls that
create something are looked up before they are repeated:

* an uploaded file has a name of its own, chosen before the upload and recorded
  (`tc-<nonce>-<sha256>.jsonl`), so `find_file` finds an upload whose reply was lost, or that a
  killed run made but never recorded;
* a batch is found by its `input_file_id` (`find_batch`), so a create whose reply was lost is
  not sent again: a second batch for the same file would be paid twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

from trajectory_compressor.messages import quoted
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.batch_api import BatchAPIError, BatchTransport, required
from trajectory_compressor.summarize.llm.dialects.base import BatchJob, BatchView
from trajectory_compressor.summarize.llm.dialects.openai import CHAT_COMPLETIONS_PATH, OpenAIDialect


class OpenAIBatches:
    """The Files + Batches calls of one run (`base.BatchCalls`); `async with` closes the session."""

    uploads = True

    def __init__(
        self, config: LLMConfig, *, rng: random.Random | None = None, warn: Callable[[str], None] | None = None
    ) -> None:
        self.http = BatchTransport(config, OpenAIDialect(config), rng=rng, warn=warn)
        self.endpoint = self.http.endpoint

    def sanitize(self, text: str) -> str:
        return self.http.sanitize(text)

    # -- files ---------------------------------------------------------------------------------

    async def upload(self, path: Path, name: str, *, since: float = 0.0) -> str:
        """Upload the request file `path` (`purpose=batch`), or find it uploaded; returns its file id.

        It is looked for under its name first (a killed run may have uploaded it without
        recording it) and after each failed attempt (a lost reply), so it is never sent twice.
        """
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise BatchAPIError(f"cannot read the request file {quoted(path)}: {exc.strerror or exc}") from None

        def form() -> aiohttp.FormData:
            data = aiohttp.FormData()
            data.add_field("purpose", "batch")
            data.add_field("file", content, filename=name, content_type="application/jsonl")
            return data

        async def already() -> str | None:
            return await self.find_file(name, len(content), since=since)

        found = await already()
        if found is not None:
            return found
        reply = await self.http.call("POST", "/files", data=form, recheck=already, what=f"upload {path.name}")
        return reply if isinstance(reply, str) else required(reply, "id", "upload")

    async def find_file(self, name: str, size: int, *, since: float = 0.0) -> str | None:
        """The id of an uploaded batch file named `name` with `size` bytes, if there is one.

        Lists come newest first: the look stops at items made well before `since` (epoch
        seconds, when the file was written), so a long history is not read to the end.
        """
        async for item in self.http.pages("/files", {"purpose": "batch"}, since=since, made_at=_made_at):
            if item.get("filename") == name and item.get("bytes") in (size, None) and item.get("status") != "error":
                return str(item["id"])
        return None

    async def download(self, reference: str, destination: Path) -> None:
        """The content of file `reference` into `destination`."""
        url = self.http.credentials.url_for(f"/files/{reference}/content")
        await self.http.download(url, destination, what=f"download {reference}")

    # -- batches -------------------------------------------------------------------------------

    async def create_marker(self) -> str | None:
        return None  # a batch is found by its input file: nothing to note before its create

    async def create_batch(self, job: BatchJob, *, window: str, metadata: dict[str, str]) -> BatchView:
        """Create the batch of `job`'s uploaded file, or return the one that exists already for it."""
        file_id = job.file_id
        if file_id is None:
            raise BatchAPIError(f"the request file {quoted(job.path.name)} has no upload to create a batch of")
        body = {"input_file_id": file_id, "endpoint": CHAT_COMPLETIONS_PATH, "completion_window": window,
                "metadata": metadata}  # fmt: skip

        async def already() -> dict[str, Any] | None:
            return await self.find_batch(file_id, since=job.written_at)

        found = await already()
        if found is None:
            what = f"create the batch of {file_id}"
            found = await self.http.call("POST", "/batches", json=body, recheck=already, what=what)
        return view(found, "create")

    async def find_batch(self, file_id: str, *, since: float = 0.0) -> dict[str, Any] | None:
        """The newest batch whose input is `file_id` (not a cancelled one), if there is one."""
        async for item in self.http.pages("/batches", {}, since=since, made_at=_made_at):
            if item.get("input_file_id") == file_id and item.get("status") not in ("cancelled", "cancelling"):
                return item
        return None

    async def get_batch(self, batch_id: str) -> BatchView:
        return view(await self.http.call("GET", f"/batches/{batch_id}", what=f"look at batch {batch_id}"), "look")

    async def cancel_batch(self, batch_id: str) -> BatchView:
        what = f"cancel batch {batch_id}"
        return view(await self.http.call("POST", f"/batches/{batch_id}/cancel", what=what), "cancel")

    async def __aenter__(self) -> OpenAIBatches:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.http.aclose()


def view(batch: Any, what: str) -> BatchView:
    """An OpenAI batch object in the run's words (its statuses are those words)."""
    batch_id = required(batch, "id", what)
    counts = batch.get("request_counts")
    numbers = (
        {k: int(v) for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
        if isinstance(counts, dict)
        else None
    )
    files = (("output_file_id", "output"), ("error_file_id", "errors"))
    downloads = {suffix: batch[name] for name, suffix in files if isinstance(batch.get(name), str) and batch[name]}
    errors = batch.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    error = None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        code, message = data[0].get("code"), data[0].get("message")
        error = ": ".join(str(part) for part in (code, message) if part) or str(data[0])
    done = None if numbers is None else numbers.get("completed", 0) + numbers.get("failed", 0)
    status = batch.get("status")
    return BatchView(batch_id, str(status) if status else None, numbers, done, downloads, error)


def _made_at(item: dict[str, Any]) -> float | None:
    made = item.get("created_at")
    return float(made) if isinstance(made, (int, float)) else None
