"""The LLM summarizer: prompt, async OpenAI-compatible client, rate limits, usage and the summary cache.

Imported only when a run summarizes with an LLM, so offline runs never load aiohttp.
"""

from trajectory_compressor.summarize.llm.summarizer import LLMSummarizer

__all__ = ["LLMSummarizer"]
