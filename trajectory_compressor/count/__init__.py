"""Counting tokens with a real Hugging Face tokenizer."""

from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.count.tokenizer import TokenizerLoadError, load_tokenizer

__all__ = ["TokenCounter", "TokenizerLoadError", "load_tokenizer"]
