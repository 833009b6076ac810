"""The provider dialects behind `--api`, one row each in `DIALECTS`: where the key and the endpoint
come from, the classes that speak the provider's API, and what the provider supports.

Every provider is asked live (`<name>.py`: the request body, the cache key, the key's headers,
what a reply holds: `base.Dialect`). A row may declare more, and every command asks the row,
never the provider's name:

- `batch`: the provider's batch API (`<name>_batches.py`: `base.BatchCalls`), which `compress
  --batch` and `batches status|cancel` drive; its dialect then writes and reads batch lines too
  (`base.BatchDialect`);
- `offline_files`: batch files written and read without the provider (`requests`, `--responses`:
  OpenAI's format, which `vllm run-batch` and the OpenAI-style Files APIs read).

What a row lacks is refused in one line naming the provider and what it lacks (`require`). A
live-only provider is one module and one row here, plus its name in `settings.endpoint.ApiName`.
This module imports neither aiohttp nor the summarizer, so `--api` defaults resolve in any run;
a dialect's modules are imported when it is used.
"""

from __future__ import annotations

import importlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from trajectory_compressor.settings import ConfigError, LLMConfig

if TYPE_CHECKING:
    from trajectory_compressor.summarize.llm.dialects.base import BatchCalls, BatchDialect, Dialect

Capability = Literal["batch", "offline_files"]


@dataclass(frozen=True)
class DialectRow:
    """One provider: where its key and endpoint come from, which classes speak it, what it supports.

    Classes are named `"<module of this package>:<class>"` and imported on first use.
    """

    key_env: str  # the environment variable holding the API key
    base_url_env: str  # the environment variable naming the endpoint
    base_url: str | None  # the endpoint when neither flag, YAML nor environment names one
    dialect: str  # implements `base.Dialect` (live calls); `base.BatchDialect` with `batch` or `offline_files`
    batch: str | None = None  # implements `base.BatchCalls`: the provider's batch API; None: it has none
    offline_files: bool = False  # `requests` writes its batch input, `--responses` reads its batch output

    def supports(self, capability: Capability) -> bool:
        return self.batch is not None if capability == "batch" else self.offline_files

    @property
    def batch_lines(self) -> bool:
        """Whether its dialect writes and reads batch lines (`base.BatchDialect`)."""
        return self.batch is not None or self.offline_files


DIALECTS: dict[str, DialectRow] = {
    "openai": DialectRow(
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        None,
        "openai:OpenAIDialect",
        batch="openai_batches:OpenAIBatches",
        offline_files=True,
    ),
    "anthropic": DialectRow(
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
        "anthropic:AnthropicDialect",
        batch="anthropic_batches:AnthropicBatches",
    ),
    "gemini": DialectRow(
        "GEMINI_API_KEY",
        "GEMINI_BASE_URL",
        "https://generativelanguage.googleapis.com/v1beta",
        "gemini:GeminiDialect",
    ),
}


def key_env(config: LLMConfig) -> str:
    """The environment variable the API key is read from: `--api-key-env`, or the dialect's own.

    A value that is no variable's name but looks like a key (`--api-key-env $OPENAI_API_KEY`: the
    shell gave the key) is refused without being shown: every message naming the variable would
    print it (`no API key was found in $sk-…`)."""
    name = config.api_key_env
    if name is None:
        return DIALECTS[config.api].key_env
    if not _ENV_NAME.fullmatch(name) or _key_like(name):
        raise ConfigError(
            "--api-key-env takes the NAME of the environment variable holding the key (OPENAI_API_KEY), "
            "and what was given is no such name (it is not shown: it may be the key itself)"
        )
    return name


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _key_like(name: str) -> bool:
    """A key's shape (`hf_…`), or random-looking and not upper case as variable names are."""
    from trajectory_compressor.summarize.redact import find_secrets
    from trajectory_compressor.summarize.secret_rules import high_entropy

    return bool(find_secrets(name)) or (high_entropy(name) and not name.isupper())


@dataclass(frozen=True)
class Need:
    """What a command or flag needs of a provider, and what it says to one that lacks it."""

    capability: Capability
    doing: str  # what the command or flag does
    live: str  # what to do instead with a provider that has no batches at all; `{api}` names it


# Every command and flag that needs more than live calls; each asks `require` before it starts.
NEEDS: dict[str, Need] = {
    "--batch": Need("batch", "--batch needs a batch API", "drop --batch: compress asks {api} live"),
    "--responses": Need(
        "offline_files", "--responses reads offline batch files", "drop --responses: compress asks {api} live"
    ),
    "requests": Need("offline_files", "requests writes offline batch files", "run compress, which asks {api} live"),
}


def require(config: LLMConfig, needer: str) -> None:
    """Refuse `needer` (a key of `NEEDS`) in one line when `config.api`'s row lacks what it needs:
    the line names the provider, what it lacks, who has it, and what to do instead (the
    provider's batch API, when offline files are what it lacks)."""
    need, api = NEEDS[needer], config.api
    row = DIALECTS[api]
    if row.supports(need.capability):
        return
    having = [name for name, other in DIALECTS.items() if other.supports(need.capability)]
    them = "them" if need.capability == "offline_files" else "one"
    who = f"{', '.join(having) or 'no provider'} {'have' if len(having) > 1 else 'has'} {them}"
    if need.capability == "offline_files" and row.batch is not None:
        instead = f"use compress --batch, which drives {api}'s batch API whole"
    else:
        instead = need.live.format(api=api)
    raise ConfigError(f"{need.doing}, which --api {api} does not have ({who}); {instead}")


def dialect_for(config: LLMConfig) -> Dialect:
    """The live dialect of `config.api`, bound to `config`."""
    return _load(DIALECTS[config.api].dialect)(config)


def batch_dialect_for(config: LLMConfig) -> BatchDialect:
    """The dialect of `config.api` with its batch lines; `ConfigError` for a provider without them
    (a command asks `require` first, so this is the last guard, not the message users see)."""
    if not DIALECTS[config.api].batch_lines:
        raise ConfigError(f"--api {config.api} has no batch files: it is asked live only")
    from trajectory_compressor.summarize.llm.dialects.base import with_batch_lines

    return with_batch_lines(dialect_for(config))


def batch_calls_for(
    config: LLMConfig, *, warn: Callable[[str], None] | None = None, rng: random.Random | None = None
) -> BatchCalls:
    """The batch API of `config.api`, on its own session (`async with` closes it)."""
    require(config, "--batch")
    batch = DIALECTS[config.api].batch
    assert batch is not None  # `require` refused a row without one
    return _load(batch)(config, warn=warn, rng=rng)


def _load(where: str) -> Any:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
