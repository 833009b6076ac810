"""The offline, deterministic summarizer: the default without an endpoint, and the LLM's fallback."""

from trajectory_compressor.summarize.extractive.summarizer import ExtractiveSummarizer

__all__ = ["ExtractiveSummarizer"]
