"""The endpoint checked before a run loads its tokenizer: a refused key is one line, at once.

Loading a Hub tokenizer takes seconds to tens of seconds; a run with a missing or wrong API key
used to learn it only after that, from its first summary request, and then said it twice. So a
run that will ask an LLM first GETs the endpoint's model list with the run's own credentials
(`Dialect.models_path`: `/models` for OpenAI-compatible servers, `/v1/models` for Anthropic):

* 401 / 403 (or what the dialect takes as a refused key, `Dialect.refuses_key`): the endpoint
  refuses the credentials: `ConfigError`, one line naming the endpoint
  (credentials removed) and, when no key was found, the variable it was looked for in;
* anything else (the list, a 404 from a server without one, a 5xx, no answer at all or not
  within a few seconds): nothing is decided here, and the run goes on to judge the endpoint by
  its replies (`contact`: an endpoint that never answers stops the run, the client's retries).
  A dead endpoint is left to that judgement, which has its retries and its own message; a
  server starting up may well answer by the time the tokenizer is loaded.

One request, bounded by `PREFLIGHT_SECONDS`; never retried.
"""

from __future__ import annotations

import asyncio

import aiohttp

from trajectory_compressor.settings import ConfigError, LLMConfig, RunConfig
from trajectory_compressor.summarize.choose import wants_llm
from trajectory_compressor.summarize.llm.credentials import FOLLOW_REDIRECTS, Credentials
from trajectory_compressor.summarize.llm.dialects import dialect_for, require

PREFLIGHT_SECONDS = 10.0


async def model_list(session: aiohttp.ClientSession, url: str, request_timeout: float) -> tuple[int, bytes] | None:
    """GET the model list at `url`: its status and first 4 KiB, or None when no HTTP response
    came within `PREFLIGHT_SECONDS` (or the request's own timeout, if shorter). Asked before a run
    (`check_endpoint`) and when a probe ends unanswered (`client.ChatClient`)."""
    timeout = aiohttp.ClientTimeout(total=min(PREFLIGHT_SECONDS, request_timeout))
    try:
        async with session.get(url, timeout=timeout, allow_redirects=FOLLOW_REDIRECTS) as response:
            return response.status, await response.content.read(4096)
    except (asyncio.TimeoutError, TimeoutError, aiohttp.ClientError, OSError, ValueError):
        return None


async def check_endpoint(config: LLMConfig) -> None:
    """Raise `ConfigError` when `config`'s endpoint refuses the credentials or cannot be reached."""
    dialect = dialect_for(config)
    credentials = Credentials(config, dialect)
    async with aiohttp.ClientSession(headers=credentials.headers()) as session:
        answer = await model_list(session, credentials.url_for(dialect.models_path), config.request_timeout)
    if answer is None:
        return  # slow, down or odd: the run's own requests judge it, with their retries
    status, body = answer
    if credentials.refused(status, body):
        detail = credentials.snippet(body)
        fix = (
            f"{credentials.no_key_hint()}: set it, or name another with --api-key-env"
            if credentials.no_key_hint()
            else f"; check the key in ${credentials.key_env}"
        )
        said = f" ({detail})" if detail else ""
        raise ConfigError(f"HTTP {status} from {credentials.endpoint}: the endpoint refused the credentials{said}{fix}")


async def check_before_loading(config: RunConfig) -> None:
    """What can be known before the tokenizer loads (seconds, tens of seconds from the Hub): the
    LLM settings and whether the endpoint takes the key (`preflight`). Not for `--responses`,
    whose answers come from a file (the endpoint may well be off), nor a dry run, which asks none.
    Both engines ask it (`api.compress_async`, `ray.run.run_on_ray`). First, whether the provider
    has what `--batch` and `--responses` need (`DIALECTS`)."""
    if config.batch.enabled:
        require(config.llm, "--batch")
    if config.llm.responses:
        require(config.llm, "--responses")
    if config.dry_run or not wants_llm(config) or config.llm.responses:
        return
    await check_endpoint(config.llm)
