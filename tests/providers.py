"""What the tests of the providers beside OpenAI share (Anthropic, Gemini; the batch runs too).

* The client's tests (`tests/summarize/llm/test_anthropic_client.py`, `test_gemini_client.py`): a
  `ProviderClient` names the provider's `api`, its fake model and its key; it sets the key, builds
  the test config (tiny backoff, no cache) and runs one summary against a fake server.
* The command's tests (`tests/cli/test_anthropic.py`, `test_gemini.py`, `test_batch_api.py`,
  `test_batch_anthropic.py`): the same twelve agent runs and budget, the OpenAI run a provider's
  run is compared with byte for byte, the first tries of two rows failed on purpose, and the check
  that a key is in no file and no message.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.conftest import make_trajectory, run_cli, write_jsonl
from tests.fake_openai_server import FakeOpenAIServer, FakeServerThread, prompt_text
from tests.summarize.llm.test_client import make_request
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm import LLMSummarizer
from trajectory_compressor.types import SummaryRequest

FAST = {"retry_delay": 0.01, "retry_max_delay": 0.05}  # tiny backoff sleeps

# A budget six of the twelve runs of `twelve_runs` are over: six summaries asked.
BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200"]
OUTPUTS = ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl")


@dataclass(frozen=True)
class ProviderClient:
    """A provider as the client's tests ask it: its `api`, the fake's model, its key and where it is read."""

    api: str
    model: str
    key_variable: str
    key: str

    def set_keys(self, monkeypatch: pytest.MonkeyPatch) -> str:
        """Its key in its variable, beside an OpenAI key that must not be the one sent."""
        monkeypatch.setenv(self.key_variable, self.key)
        monkeypatch.setenv("OPENAI_API_KEY", f"sk-openai-key-not-for-{self.api}")
        return self.key

    def config(self, base_url: str, **overrides: Any) -> LLMConfig:
        values: dict[str, Any] = {"api": self.api, "base_url": base_url, "model": self.model, "request_timeout": 5,
                                  "max_retries": 3, "use_cache": False, **FAST}  # fmt: skip
        return LLMConfig(**{**values, **overrides})

    async def summarize_with(
        self, server: FakeOpenAIServer, request: SummaryRequest | None = None, **overrides: Any
    ) -> Any:
        """One summary from `server` (the result and the summarizer's stats)."""
        async with LLMSummarizer(self.config(server.base_url, **overrides)) as summarizer:
            result = await summarizer.summarize(request or make_request())
            return result, summarizer.stats()


def twelve_runs(tmp_path: Path) -> Path:
    """`tmp_path/in.jsonl`: twelve agent runs of 2 to 9 steps."""
    rows = [make_trajectory(i, steps=2 + i % 8, output_lines=40) for i in range(12)]
    return write_jsonl(tmp_path / "in.jsonl", rows)


def live_flags(base_url: str, model: str, *extra: str) -> list[str]:
    """A live run's flags: `BUDGET`, the fake's URL and model, no cache, tiny backoff."""
    return [*BUDGET, "--base-url", base_url, "--model", model, "--no-cache", "--retry-delay", "0.01",
            "--retry-max-delay", "0.05", *extra]  # fmt: skip


def openai_run(source: Path, out: Path, model: str) -> list[int]:
    """`source` compressed live through the OpenAI fake into `out`, with `live_flags`: the run a
    provider's run is compared with byte for byte. Returns the `max_tokens` each request asked, sorted."""
    with FakeServerThread() as openai:
        result = run_cli("compress", str(source), "-o", str(out), *live_flags(openai.base_url, model),
                         env={"OPENAI_API_KEY": "sk-openai-other"})  # fmt: skip
        assert result.returncode == 0, result.stderr
        return sorted(request.body["max_tokens"] for request in openai.requests)


def first_tries_fail(first: str, second: str) -> Callable[[int, Any], str | None]:
    """A fake's `faults`: the first try of the first row asked answers `first`, that of the second
    row `second`; every other request is answered."""
    first_tries: dict[str, str] = {}

    def fault(number: int, body: Any) -> str | None:
        prompt = prompt_text(body)
        if prompt in first_tries or len(first_tries) >= 2:
            return None
        first_tries[prompt] = first if not first_tries else second
        return first_tries[prompt]

    return fault


def no_secret_anywhere(secret: str, root: Path, *texts: str) -> None:
    """`secret` is in no file below `root` and in none of `texts`."""
    for path in root.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    for text in texts:
        assert secret not in text


@contextlib.asynccontextmanager
async def redirecting_elsewhere(status: int = 307) -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A server on 127.0.0.1 that answers every request with `status` and a `Location` on another
    port (another origin: a host the key must never reach), and the headers of every request that
    reached that other port. Yields the redirecting server's URL and that list."""
    reached: list[dict[str, str]] = []

    async def elsewhere(request: web.Request) -> web.Response:
        reached.append(dict(request.headers))
        return web.json_response({"error": {"message": "the key came here"}}, status=404)

    async def redirect(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Location": f"{other_origin}{request.path_qs}"})

    runners = []
    for handler in (elsewhere, redirect):
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
    other_origin, origin = (f"http://127.0.0.1:{runner.addresses[0][1]}" for runner in runners)
    try:
        yield origin, reached
    finally:
        for runner in runners:
            await runner.cleanup()
