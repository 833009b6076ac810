"""`--count-mode chat-template`: count turns as the tokenizer's chat template renders them."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.types import Turn


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
                f"tokenizer '{self.name}' has no chat template; use --count-mode values (the default)"
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
