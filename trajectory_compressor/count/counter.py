"""Batch token counting: every count of a run goes through one `count_many`.

A trajectory's size is the sum over turns of the tokens of each `value`, without special tokens
(the reference tool's measure). The texts of a chunk are counted in one batch call, so that the
Rust side can use every core and the GIL is released while it works. Who counts is the
`--tokenizer-backend` (`count/backends.py`): Hugging Face `tokenizers`, or a faster exact
backend checked against it (`count/exactness.py`). A long text is counted in pieces cut where the
count stays exact (`text_pieces`), whatever the backend, so memory stays bounded whatever its
length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajectory_compressor.count.backends import REFERENCE, CountingBackend, Unsupported
from trajectory_compressor.count.exactness import GuardResult, choose_counting
from trajectory_compressor.count.text_pieces import PreTokenCuts, count_in_pieces
from trajectory_compressor.count.tokenizer import TokenizerLoadError
from trajectory_compressor.types import Turn


class TokenCounter:
    """Counts tokens of many texts at once with a fast tokenizer.

    `tokenizer` is a `transformers` fast tokenizer or a bare `tokenizers.Tokenizer` (what
    `build_counter` loads for a plain tokenizer.json, without importing transformers). `name`
    overrides the name recorded in run settings. `backend` is who counts: a
    `--tokenizer-backend` choice ("hf", "auto", a fast backend's name), or a `CountingBackend`
    used as given. Raises `TokenizerLoadError` for a backend asked for by name that cannot count
    exactly with this tokenizer.
    """

    def __init__(self, tokenizer: Any, *, name: str | None = None, backend: str | CountingBackend = REFERENCE) -> None:
        self.tokenizer = tokenizer
        self._backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        # A tokenizer.json may ship with truncation or padding on: a count must be neither.
        self._backend.no_truncation()
        self._backend.no_padding()
        self._name = name
        if isinstance(backend, str):
            try:
                self.counting, self.guard = choose_counting(backend, self._backend)
            except Unsupported as exc:
                raise TokenizerLoadError(f"--tokenizer-backend {backend}: {exc}") from None
        else:
            self.counting = backend
            self.guard = getattr(backend, "result", None) or GuardResult(backend.name, backend.name)
        # The cuts are checked with the reference tokenizer's own ids, whoever counts.
        # encode_batch_fast skips offset tracking (tokenizers >= 0.20); it is all we need.
        self._encode_batch = getattr(self._backend, "encode_batch_fast", self._backend.encode_batch)
        self.cuts = PreTokenCuts(self._backend, self._encode_batch)

    @property
    def name(self) -> str:
        return self._name or str(getattr(self.tokenizer, "name_or_path", "") or "tokenizer")

    def added_tokens(self) -> tuple[str, ...]:
        """The tokenizer's added tokens (special or not): the strings it reads in text as one
        token, control markers among them, which a model's reply must not smuggle into a row."""
        decoder = getattr(self._backend, "get_added_tokens_decoder", None)
        if decoder is None:  # a stand-in tokenizer (tests)
            return ()
        return tuple(token.content for token in decoder().values())

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of `texts`, in order, without special tokens.

        Raises `text_pieces.UncountableTextError` for a text that cannot be counted exactly in
        bounded memory.
        """
        if not texts:
            return []
        return count_in_pieces(texts, self.counting.count_many, self.cuts.spans, whole_up_to=self.cuts.piece_chars)

    def count(self, text: str) -> int:
        """Token count of one text, without special tokens."""
        if not text:
            return 0
        return self.count_many((text,))[0]  # through count_many: whatever wraps it applies here too

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
        if len(text) <= self.cuts.piece_chars:
            return self._truncate_piece(text, max_tokens)
        spent = 0  # only the piece the budget ends in is encoded with offsets
        for start, end in self.cuts.spans(text):
            tokens = self.counting.count_many([text[start:end]])[0]
            if spent + tokens > max_tokens:
                return text[:start] + self._truncate_piece(text[start:end], max_tokens - spent)
            spent += tokens
        return text

    def _truncate_piece(self, text: str, max_tokens: int) -> str:
        """`truncate` of a text counted whole (one piece)."""
        encoding = self._backend.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= max_tokens:
            return text
        # Cut where the first token left out starts: a character split over several byte-level
        # tokens (emoji, rare CJK) is then left out whole instead of kept whole.
        prefix = text[: encoding.offsets[max_tokens][0]]
        while prefix and self.count(prefix) > max_tokens:  # a prefix can re-tokenize differently
            prefix = prefix[:-1]
        return prefix
