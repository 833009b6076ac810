"""The provider dialects behind `--api`: OpenAI's chat completions (any compatible server) and
Anthropic's Messages API, each with its batch API.

A dialect is two modules, `<name>.py` (the request body, the cache key, the key's headers, what a
reply holds, a batch line written and read: `base.Dialect`) and `<name>_batches.py` (its batch
calls: `base.BatchCalls`), plus its row in `DIALECTS` below and its name in `settings.tree.ApiName`.
This module imports neither aiohttp nor the summarizer, so `--api` defaults resolve in any run;
a dialect's modules are imported when it is used.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trajectory_compressor.settings import LLMConfig

if TYPE_CHECKING:
    from trajectory_compressor.summarize.llm.dialects.base import BatchCalls, Dialect


@dataclass(frozen=True)
class DialectRow:
    """One dialect: where its key and endpoint come from, and which classes speak it."""

    key_env: str  # the environment variable holding the API key
    base_url_env: str  # the environment variable naming the endpoint
    base_url: str | None  # the endpoint when neither flag, YAML nor environment names one
    dialect: str  # "<module of this package>:<class>" implementing `base.Dialect`
    batches: str  # "<module of this package>:<class>" implementing `base.BatchCalls`


DIALECTS: dict[str, DialectRow] = {
    "openai": DialectRow(
        "OPENAI_API_KEY", "OPENAI_BASE_URL", None, "openai:OpenAIDialect", "openai_batches:OpenAIBatches"
    ),
    "anthropic": DialectRow(
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
        "anthropic:AnthropicDialect",
        "anthropic_batches:AnthropicBatches",
    ),
}


def key_env(config: LLMConfig) -> str:
    """The environment variable the API key is read from: `--api-key-env`, or the dialect's own."""
    return config.api_key_env or DIALECTS[config.api].key_env


def dialect_for(config: LLMConfig) -> Dialect:
    """The request processor of `config.api`, bound to `config`."""
    return _load(DIALECTS[config.api].dialect)(config)


def batch_calls_for(
    config: LLMConfig, *, warn: Callable[[str], None] | None = None, rng: random.Random | None = None
) -> BatchCalls:
    """The batch API of `config.api`, on its own session (`async with` closes it)."""
    return _load(DIALECTS[config.api].batches)(config, warn=warn, rng=rng)


def _load(where: str) -> Any:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
