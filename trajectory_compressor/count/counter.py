"""Batch token counting through the fast tokenizer's Rust backend.

A trajectory's size is the sum over turns of the tokens of each `value`, without special tokens
(the reference tool's measure). Counting goes through `encode_batch` so that the Rust side can
use every core and the GIL is released while it works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TokenCounter:
    """Counts tokens of many texts at once with a `transformers` fast tokenizer."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._backend = tokenizer.backend_tokenizer
        # encode_batch_fast skips offset tracking (tokenizers >= 0.20); it is all we need.
        self._encode_batch = getattr(self._backend, "encode_batch_fast", self._backend.encode_batch)

    @property
    def name(self) -> str:
        return str(getattr(self.tokenizer, "name_or_path", "") or "tokenizer")

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of `texts`, in order, without special tokens."""
        if not texts:
            return []
        encodings = self._encode_batch(list(texts), add_special_tokens=False)
        return [len(encoding.ids) for encoding in encodings]

    def count(self, text: str) -> int:
        """Token count of one text, without special tokens."""
        if not text:
            return 0
        return len(self._backend.encode(text, add_special_tokens=False).ids)

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that holds at most `max_tokens` tokens.

        Cuts at a token boundary using character offsets, so no partial characters appear.
        """
        if max_tokens <= 0:
            return ""
        encoding = self._backend.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= max_tokens:
            return text
        end = encoding.offsets[max_tokens - 1][1]
        return text[:end]
