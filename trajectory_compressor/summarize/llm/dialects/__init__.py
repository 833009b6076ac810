"""The provider dialects behind `--api`: OpenAI's chat completions (any compatible server) and
Anthropic's Messages API, each with its batch API.

A dialect is two modules: `<name>.py` (the request body, the cache key, the key's headers, what a
reply holds, a batch line written and read: `base.Dialect`) and `<name>_batches.py` (its batch
calls: `base.BatchCalls`), plus its row in `DEFAULTS` below and its name in `settings.tree.ApiName`.
This module imports neither aiohttp nor the summarizer, so `--api` defaults resolve in any run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trajectory_compressor.settings import LLMConfig

if TYPE_CHECKING:
    from trajectory_compressor.summarize.llm.dialects.base import BatchCalls, Dialect


@dataclass(frozen=True)
class Defaults:
    """Where a dialect's key and endpoint come from when the user names neither."""

    key_env: str  # the environment variable holding the API key
    base_url_env: str  # the environment variable naming the endpoint
    base_url: str | None  # the endpoint when neither flag, YAML nor environment names one


DEFAULTS: dict[str, Defaults] = {
    "openai": Defaults("OPENAI_API_KEY", "OPENAI_BASE_URL", None),
    "anthropic": Defaults("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
}


def key_env(config: LLMConfig) -> str:
    """The environment variable the API key is read from: `--api-key-env`, or the dialect's own."""
    return config.api_key_env or DEFAULTS[config.api].key_env


def dialect_for(config: LLMConfig) -> Dialect:
    """The request processor of `config.api`, bound to `config`."""
    if config.api == "anthropic":
        from trajectory_compressor.summarize.llm.dialects.anthropic import AnthropicDialect

        return AnthropicDialect(config)
    from trajectory_compressor.summarize.llm.dialects.openai import OpenAIDialect

    return OpenAIDialect(config)


def batch_calls_for(
    config: LLMConfig, *, warn: Callable[[str], None] | None = None, rng: random.Random | None = None
) -> BatchCalls:
    """The batch API of `config.api`, on its own session (`async with` closes it)."""
    if config.api == "anthropic":
        from trajectory_compressor.summarize.llm.dialects.anthropic_batches import AnthropicBatches

        return AnthropicBatches(config, warn=warn, rng=rng)
    from trajectory_compressor.summarize.llm.dialects.openai_batches import OpenAIBatches

    return OpenAIBatches(config, warn=warn, rng=rng)
