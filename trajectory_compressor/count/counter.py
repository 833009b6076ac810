"""Batch token counting through the fast tokenizer's Rust backend.

A trajectory's size is the sum over turns of the tokens of each `value`, without special tokens
(the reference tool's measure). Counting goes through `encode_batch` so that the Rust side can
use every core and the GIL is released while it works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajectory_compressor.types import Turn


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

    # The per-turn measures the planner uses. The default is the reference tool's: tokens of each
    # `value`. `ChatTemplateCounter` counts turns as the training run will see them instead.
    counts_chat_template = False

    def count_conversations(self, conversations: Sequence[Sequence[Turn]]) -> list[list[int]]:
        """Per-turn token counts of several conversations, tokenized in one batch."""
        counts = self.count_many([turn.value for turns in conversations for turn in turns])
        result, offset = [], 0
        for turns in conversations:
            result.append(counts[offset : offset + len(turns)])
            offset += len(turns)
        return result

    def count_turn(self, turn: Turn) -> int:
        """Tokens a new turn (the summary) adds to a conversation."""
        return self.count(turn.value)

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


class ChatTemplateError(ValueError):
    """The chat template cannot render conversation number `position` of a batch."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position


class ChatTemplateCounter(TokenCounter):
    """`--count-mode chat-template`: count turns as the chat template renders them.

    Each turn is rendered alone through the tokenizer's chat template (role markers included)
    and the whole conversation once; the difference (a BOS token, a default system prompt) is
    charged to the first turn, so a row's total is exactly what the template produces and each
    turn's share is what removing it would save.
    """

    counts_chat_template = True

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        if not getattr(tokenizer, "chat_template", None):
            from trajectory_compressor.count.tokenizer import TokenizerLoadError

            raise TokenizerLoadError(
                f"tokenizer '{self.name}' has no chat template; use --count-mode values (the default)"
            )

    def _render(self, turns: Sequence[Turn]) -> str:
        from trajectory_compressor.read.formats import chat_messages

        return self.tokenizer.apply_chat_template(chat_messages(turns), tokenize=False)

    def count_conversations(self, conversations: Sequence[Sequence[Turn]]) -> list[list[int]]:
        """Per-turn counts; a conversation the template refuses raises `ChatTemplateError` naming it.

        Rendering happens before any tokenizing, so one bad row costs only a re-run of the chunk
        without it (see `prepare_rows`).
        """
        texts: list[str] = []
        for position, turns in enumerate(conversations):
            try:
                texts.append(self._render(turns))
                texts.extend(self._render([turn]) for turn in turns)
            except Exception as exc:  # Jinja templates raise anything (e.g. "roles must alternate")
                raise ChatTemplateError(position, f"chat template failed: {exc}") from None
        counts = self.count_many(texts)
        result, offset = [], 0
        for turns in conversations:
            total = counts[offset]
            per_turn = counts[offset + 1 : offset + 1 + len(turns)]
            offset += 1 + len(turns)
            if per_turn:
                per_turn[0] += total - sum(per_turn)
            result.append(per_turn)
        return result

    def count_turn(self, turn: Turn) -> int:
        return self.count(self._render([turn]))
