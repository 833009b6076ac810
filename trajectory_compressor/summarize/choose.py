"""Choosing the summarizers for a run: `--summarizer auto|llm|extractive|none`.

`auto` uses the LLM when an endpoint is configured and the offline extractive summarizer
otherwise, and says which once. The extractive summarizer is also the fallback of the
`extractive` failure policy, so it is built for every run that summarizes; `none` (pruning
only, with `--prune-tool-outputs`) builds neither.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.settings import ConfigError, RunConfig, with_values
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.types import Summarizer


@dataclass
class SummarizerChoice:
    """The primary summarizer, the offline fallback, and a one-line note for the user."""

    primary: Summarizer | None  # None: `--summarizer none` (pruning only)
    fallback: Summarizer | None
    note: str


def resolve_endpoint(config: RunConfig) -> RunConfig:
    """Fill the base URL from `OPENAI_BASE_URL` when neither flag nor config set it."""
    if config.llm.base_url:
        return config
    env_url = os.environ.get("OPENAI_BASE_URL")
    if env_url:
        return with_values(config, "llm", base_url=env_url)
    return config


def choose_summarizers(
    config: RunConfig, counter: TokenCounter, *, cache: Any = None, gate: Any = None
) -> SummarizerChoice:
    """Build the summarizers `config.summarizer` asks for; raise `ConfigError` if it cannot.

    `cache` and `gate` go to the LLM summarizer (the Ray engine's shared-folder cache and
    cluster-wide limits); None keeps the configured cache and the client's own limits.
    """
    if config.summarizer == "none":
        return SummarizerChoice(None, None, "summarizer: none (tool outputs pruned only; rows still over are flagged)")
    # The same `--redact-secrets` for both: a summary is redacted whichever summarizer writes it.
    extractive = ExtractiveSummarizer(counter, redact=config.llm.redact_secrets, anchor_index=config.llm.anchor_index)
    wants_llm = config.summarizer == "llm" or (config.summarizer == "auto" and bool(config.llm.base_url))
    if not wants_llm:
        note = (
            "summarizer: extractive (offline; pass --base-url and --model to summarize with an LLM)"
            if config.summarizer == "auto"
            else "summarizer: extractive"
        )
        return SummarizerChoice(extractive, extractive, note)
    if not config.llm.base_url:
        raise ConfigError("--summarizer llm needs an endpoint: pass --base-url or set OPENAI_BASE_URL")
    if not config.llm.model:
        raise ConfigError("an LLM endpoint is configured but no model: pass --model (or --summarizer extractive)")
    from trajectory_compressor.summarize.llm import LLMSummarizer
    from trajectory_compressor.summarize.redact import display_url

    llm = LLMSummarizer(config.llm, counter, cache=cache, gate=gate, batch_discount=config.batch.discount)
    note = f"summarizer: llm ({config.llm.model} at {display_url(config.llm.base_url)}; fallback: extractive)"
    return SummarizerChoice(llm, extractive, note)
