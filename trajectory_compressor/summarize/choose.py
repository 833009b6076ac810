"""Choosing the summarizers for a run: `--summarizer auto|llm|extractive|none`.

`auto` uses the LLM when an endpoint is configured and the offline extractive summarizer
otherwise, and says which once. The extractive summarizer is also the fallback of the
`extractive` failure policy, so it is built for every run that summarizes; `none` (pruning
only, with `--prune-tool-outputs`) builds neither.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.settings import ConfigError, RunConfig, with_values
from trajectory_compressor.settings.choices import AUTO_SUMMARIZER, NO_SUMMARIES
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.llm.dialects import DIALECTS
from trajectory_compressor.types import LLM_SUMMARIZER, Summarizer

if TYPE_CHECKING:  # the LLM summarizer loads aiohttp: only runs that summarize with an LLM import it
    from trajectory_compressor.summarize.llm.summarizer import LLMSummarizer


@dataclass
class SummarizerChoice:
    """The primary summarizer, the offline fallback, and a one-line note for the user."""

    primary: Summarizer | None  # None: `--summarizer none` (pruning only)
    fallback: Summarizer | None
    note: str
    llm: LLMSummarizer | None = None  # the primary, when it is the LLM's: what --batch and --responses need


def resolve_endpoint(config: RunConfig) -> RunConfig:
    """Fill the base URL when neither flag nor config set it: from the dialect's environment
    variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`), else its default (Anthropic's API)."""
    if config.llm.base_url:
        return config
    defaults = DIALECTS[config.llm.api]
    url = os.environ.get(defaults.base_url_env) or defaults.base_url
    if url:
        return with_values(config, "llm", base_url=url)
    return config


def wants_llm(config: RunConfig) -> bool:
    """Whether `config`'s run summarizes with an LLM; `ConfigError` when it would but cannot (no
    endpoint, no model). Pure: a run asks it before its tokenizer loads, so such a run stops at once."""
    if config.summarizer == NO_SUMMARIES:
        return False
    wanted = config.summarizer == LLM_SUMMARIZER or (config.summarizer == AUTO_SUMMARIZER and bool(config.llm.base_url))
    if wanted and not config.llm.base_url:
        raise ConfigError("--summarizer llm needs an endpoint: pass --base-url or set OPENAI_BASE_URL")
    if wanted and not config.llm.model:
        raise ConfigError("an LLM endpoint is configured but no model: pass --model (or --summarizer extractive)")
    return wanted


def choose_summarizers(
    config: RunConfig, counter: TokenCounter, *, cache: Any = None, gate: Any = None
) -> SummarizerChoice:
    """Build the summarizers `config.summarizer` asks for; raise `ConfigError` if it cannot.

    `cache` and `gate` go to the LLM summarizer (the Ray engine's shared-folder cache and
    cluster-wide limits); None keeps the configured cache and the client's own limits.
    """
    if config.summarizer == NO_SUMMARIES:
        return SummarizerChoice(None, None, "summarizer: none (tool outputs pruned only; rows still over are flagged)")
    # The same `--redact-secrets` for both: a summary is redacted whichever summarizer writes it.
    extractive = ExtractiveSummarizer(counter, redact=config.llm.redact_secrets, anchor_index=config.llm.anchor_index)
    if not wants_llm(config):
        note = (
            "summarizer: extractive (offline; pass --base-url and --model to summarize with an LLM)"
            if config.summarizer == AUTO_SUMMARIZER
            else "summarizer: extractive"
        )
        return SummarizerChoice(extractive, extractive, note)
    from trajectory_compressor.summarize.llm.summarizer import LLMSummarizer
    from trajectory_compressor.summarize.llm.usage import UsageTracker
    from trajectory_compressor.summarize.url_credentials import display_url

    usage = UsageTracker(config.llm.price_in, config.llm.price_out, batch_discount=config.batch.discount)
    llm = LLMSummarizer(config.llm, counter, cache=cache, gate=gate, usage=usage)
    note = f"summarizer: llm ({config.llm.model} at {display_url(config.llm.base_url)}; fallback: extractive)"
    return SummarizerChoice(llm, extractive, note, llm)
