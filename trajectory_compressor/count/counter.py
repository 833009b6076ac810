"""Batch token counting through the fast tokenizer's Rust backend.

A trajectory's size is the sum over turns of the tokens of each `value`, without special tokens
(the reference tool's measure). Counting goes through `encode_batch` so that the Rust side can
use every core and the GIL is released while it works.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.types import Turn


class TokenCounter:
    """Counts tokens of many texts at once with a fast tokenizer.

    `tokenizer` is a `transformers` fast tokenizer or a bare `tokenizers.Tokenizer` (what
    `build_counter` loads for a plain tokenizer.json, without importing transformers). `name`
    overrides the name recorded in run settings.
    """

    def __init__(self, tokenizer: Any, *, name: str | None = None) -> None:
        self.tokenizer = tokenizer
        self._backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        # A tokenizer.json may ship with truncation or padding on: a count must be neither.
        self._backend.no_truncation()
        self._backend.no_padding()
        self._name = name
        # encode_batch_fast skips offset tracking (tokenizers >= 0.20); it is all we need.
        self._encode_batch = getattr(self._backend, "encode_batch_fast", self._backend.encode_batch)

    @property
    def name(self) -> str:
        return self._name or str(getattr(self.tokenizer, "name_or_path", "") or "tokenizer")

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of `texts`, in order, without special tokens."""
        if not texts:
            return []
        encodings = self._encode_batch(list(texts), add_special_tokens=False)
        return [len(encoding) for encoding in encodings]  # len(): no Python list of ids built

    def count(self, text: str) -> int:
        """Token count of one text, without special tokens."""
        if not text:
            return 0
        return len(self._backend.encode(text, add_special_tokens=False))

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
        # Cut where the first token left out starts: a character split over several byte-level
        # tokens (emoji, rare CJK) is then left out whole instead of kept whole.
        prefix = text[: encoding.offsets[max_tokens][0]]
        while prefix and self.count(prefix) > max_tokens:  # a prefix can re-tokenize differently
            prefix = prefix[:-1]
        return prefix


class ChatTemplateError(ValueError):
    """The chat template cannot render conversation number `position` of a batch."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position


class ChatTemplateCounter(TokenCounter):
    """`--count-mode chat-template`: count turns as the chat template renders them.

    The whole conversation is rendered once and tokenized with offsets; each turn is charged
    the tokens from the end of the previous turn's content to the end of its own (so its role
    markers are its own, the template's preamble goes to the first turn and its closing text
    to the last). A row's total is then exactly what the template produces. If the template
    changes a content (so it cannot be found verbatim), that row falls back to rendering
    growing prefixes and taking differences: exact too, but quadratic in the row's length.
    A new turn (the summary) is counted rendered alone, which includes the template's fixed
    preamble: an overestimate of a few tokens, on the safe side.
    """

    counts_chat_template = True

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        if not getattr(tokenizer, "chat_template", None):
            from trajectory_compressor.count.tokenizer import TokenizerLoadError

            raise TokenizerLoadError(
                f"tokenizer {quoted(self.name)} has no chat template; use --count-mode values (the default)"
            )

    def _render(self, turns: Sequence[Turn]) -> str:
        from trajectory_compressor.read.formats import chat_messages

        return self.tokenizer.apply_chat_template(chat_messages(turns), tokenize=False)

    def count_conversations(self, conversations: Sequence[Sequence[Turn]]) -> list[list[int]]:
        """Per-turn counts; a conversation the template refuses raises `ChatTemplateError` naming it."""
        rendered: list[str] = []
        for position, turns in enumerate(conversations):
            try:
                rendered.append(self._render(turns) if turns else "")
            except Exception as exc:  # Jinja templates raise anything (e.g. "roles must alternate")
                raise ChatTemplateError(position, f"chat template failed: {exc}") from None
        encodings = self._backend.encode_batch(rendered, add_special_tokens=False)
        result = []
        for position, (turns, text, encoding) in enumerate(zip(conversations, rendered, encodings, strict=True)):
            counts = _split_by_content(turns, text, [start for start, _ in encoding.offsets])
            if counts is None:
                counts = self._prefix_differences(position, turns)
            result.append(counts)
        return result

    def _prefix_differences(self, position: int, turns: Sequence[Turn]) -> list[int]:
        try:
            prefixes = self.count_many([self._render(turns[: end + 1]) for end in range(len(turns))])
        except Exception as exc:
            raise ChatTemplateError(position, f"chat template failed: {exc}") from None
        return [after - before for before, after in zip([0, *prefixes], prefixes, strict=False)]

    def count_turn(self, turn: Turn) -> int:
        return self.count(self._render([turn]))


def _split_by_content(turns: Sequence[Turn], text: str, token_starts: list[int]) -> list[int] | None:
    """Tokens per turn of a rendered conversation, cutting after each turn's content.

    None when some content does not appear verbatim, in order, in the rendered text.
    """
    if not turns:
        return []
    ends: list[int] = []
    cursor = 0
    for turn in turns:
        found = text.find(turn.value, cursor)
        if found < 0:
            return None
        cursor = found + len(turn.value)
        ends.append(cursor)
    ends[-1] = len(text)
    cumulative = [bisect.bisect_left(token_starts, end) for end in ends]
    cumulative[-1] = len(token_starts)
    return [after - before for before, after in zip([0, *cumulative], cumulative, strict=False)]
