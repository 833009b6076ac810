"""The LLM summarizer: prompt, provider dialects, async client, rate limits, usage and the summary cache.

Imported only when a run summarizes with an LLM, so offline runs never load aiohttp: the name
below is resolved on first use, and `dialects` (the `--api` defaults) imports no HTTP code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trajectory_compressor.summarize.llm.summarizer import LLMSummarizer

__all__ = ["LLMSummarizer"]


def __getattr__(name: str) -> Any:
    if name == "LLMSummarizer":
        from trajectory_compressor.summarize.llm.summarizer import LLMSummarizer

        return LLMSummarizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
