"""A record as token ids and a loss mask: exactly the marked assistant turns, counted as the run counted.

TRL's `SFTTrainer` takes pre-tokenized rows (``input_ids``) and builds its labels from an
``assistant_masks`` column whenever one is present (`trl/trainer/sft_trainer.py`, "Build a labels
column"): that is the one exact way to tell it what to learn, for any chat template, with no
`{% generation %}` markers needed. `ChatTokens` makes those two columns:

- ``input_ids``: the record's messages and tools (`view.messages_of`, `view.tools_of`) rendered by
  the tokenizer's chat template and tokenized whole, exactly ``apply_chat_template(messages,
  tools=tools, tokenize=True)``: the count `--count-mode chat-template` writes as
  ``compressed_tokens`` for the same tokenizer and template, with ``--write-format hf-chat`` or
  ``messages``. Not a ShareGPT row's: the view reads its Hermes markup as calls and results, and
  the metrics count it as a ShareGPT trainer renders it, the markup as text (0.6 to 9.7 % more on
  41 public agent runs; `tests/training/test_tokens_write_formats.py`).
- ``assistant_masks``: 1 on the tokens of each marked assistant message (`view.is_trained`), from
  the end of its role header (what ``add_generation_prompt=True`` writes, e.g.
  ``<|im_start|>assistant\\n``: the prompt, not the answer) to where the next message starts (its
  end-of-turn token included, which teaches the model to stop); 0 everywhere else: the system
  prompt, the user's turns, the summary, tool results, and assistant turns kept as context; and a
  marked message the template does not render as an assistant turn (`TrainingRow.unrendered`:
  Llama 3.1's, with tools, folds an answer before any user message into the first user turn).

Where each message starts comes from one render of the template with its loop over the messages
instrumented (`count.chat_render`, the renderer the counts use); a template whose loop cannot be
seen falls back to rendering growing prefixes. A token belongs to the message its first character
is in (`return_offsets_mapping`).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.count.chat_render import ChatRenderer
from trajectory_compressor.training.view import is_trained, messages_of, tools_of, unmarked

_HEADER_PROBE = ({"role": "user", "content": "Hello."},)
_FIRST_ANSWER_PROBE = ({"role": "assistant", "content": "Hello."},)


@dataclass(frozen=True)
class TrainingRow:
    """One record as a trainer takes it: token ids, 1 where the loss applies, and for each token
    the message (of `view.messages_of`) it belongs to."""

    input_ids: list[int]
    assistant_masks: list[int]
    owners: list[int]
    # Marked messages the template does not render as assistant turns, so left without loss (see
    # `ChatTokens.row`): a trainer that wants every row to train something filters on it.
    unrendered: tuple[int, ...] = ()

    def as_columns(self) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids, "assistant_masks": self.assistant_masks}


class ChatTokens:
    """Tokenizes records with one tokenizer's chat template and masks their marked assistant turns.

    Use it as `Dataset.map`'s function: ``ds.map(ChatTokens(tokenizer), remove_columns=ds.column_names)``.
    `template_kwargs` reach the template as `apply_chat_template`'s extra kwargs do (for example
    ``enable_thinking=False``); pass the run's own (`--chat-template-kwargs`) so counts agree.
    """

    def __init__(self, tokenizer: Any, **template_kwargs: Any) -> None:
        self.tokenizer = tokenizer
        self.template_kwargs = template_kwargs
        self.renderer = ChatRenderer(tokenizer, template_kwargs)
        self.header = self._generation_header()
        self.header_cuts = self._token_ends(self.header)
        # The headers a first answer may open with, and what the template writes before a lone one's text.
        self.first_headers, self._lone_preamble = self._first_answer_probe()

    def __call__(self, record: Mapping[str, Any]) -> dict[str, list[int]]:
        return self.row(record).as_columns()

    def row(self, record: Mapping[str, Any]) -> TrainingRow:
        """The record's token ids and loss mask.

        A marked message the template does not render as an assistant turn is left without loss
        (`TrainingRow.unrendered`) rather than trained on what it was folded into. Llama 3.1's
        template, given tools, writes the first message after the system prompt as the first
        USER turn, the tools' instructions before its text (a call's arguments not at all): a
        record opening on the assistant has its first answer rendered so, and nothing in it is
        the assistant's turn to learn; the rest of the record trains as marked.
        """
        messages = messages_of(record)
        tools = tools_of(record)
        plain = unmarked(messages)
        rendering = self.renderer.render(plain, tools)
        text = rendering.text
        starts = rendering.starts
        unplaced: set[int] = set()
        if any(start is None for start in starts[1:]) or not _ascending(starts[1:]):
            bounds, unplaced = self._prefix_starts(plain, tools, text)
        else:
            bounds = [0, *(start or 0 for start in starts[1:])]
        encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = list(encoded["input_ids"])
        offsets = [tuple(pair) for pair in encoded["offset_mapping"]]
        trained: list[tuple[int, int]] = []
        unrendered: list[int] = []
        for index, message in enumerate(messages):
            if not is_trained(message):
                continue
            end = bounds[index + 1] if index + 1 < len(bounds) else len(text)
            own = self._alone(plain[index]) if index == 0 and not self.first_headers else ""
            answer = (
                None if index in unplaced else self._answer_start(text, bounds[index], end, offsets, index == 0, own)
            )
            if answer is None:
                unrendered.append(index)
            else:
                trained.append((answer, end))
        firsts = [begin for begin, _ in trained]
        mask, owners = [], []
        for start, _ in offsets:
            position = bisect.bisect_right(firsts, start) - 1
            mask.append(int(position >= 0 and start < trained[position][1]))
            owners.append(max(0, bisect.bisect_right(bounds, start) - 1))
        return TrainingRow(ids, mask, owners, tuple(unrendered))

    def _answer_start(
        self, text: str, start: int, end: int, offsets: Sequence[tuple[int, int]], first: bool, own: str = ""
    ) -> int | None:
        """Where an assistant message's answer starts: after its role header. The first message of
        a conversation may follow what the template writes before any message (a default system
        prompt): its header is looked for, as the template writes it there (`first_headers`),
        not expected at its start. Not found there, in a template that opens a first assistant
        message with one, the message was rendered as another role's turn: None, no answer
        (Llama 3.1's first user turn, which holds the system prompt's header and the tools before it).

        Elsewhere the header is what the message's text shares with it; a share that ends inside
        one of the header's tokens is a likeness of characters, and the row's token it cuts is the
        answer's. DeepSeek V3.1 writes no header after a tool result, and an answer there opening
        on ``<｜tool▁calls▁begin｜>`` (``<think>``) shares ``<｜`` (``<``) with its header
        ``<｜Assistant｜>``: that token is the answer's first, to be trained."""
        if first and self.header:
            for header in self.first_headers:
                found = text.find(header, start, end)
                if found >= 0:
                    return found + len(header)
            if self.first_headers:
                return None
            if own and text.endswith(own, start, end):  # no header: the text as it is alone (`_alone`)
                return end - len(own)
        shared = _common_prefix(self.header, text[start:end])
        answer = start + shared
        if first or shared in self.header_cuts:  # the first starts on what precedes any message (bos)
            return answer
        token = bisect.bisect_right(offsets, (answer, answer)) - 1
        if token >= 0 and offsets[token][0] < answer < offsets[token][1]:
            return max(start, offsets[token][0])
        return answer

    def _generation_header(self) -> str:
        """What the template writes to open an assistant turn (``add_generation_prompt=True``)."""
        try:
            plain = self.renderer.render_text(_HEADER_PROBE, None)
            prompted = self.tokenizer.apply_chat_template(
                list(_HEADER_PROBE), tokenize=False, add_generation_prompt=True, **self.template_kwargs
            )
        except Exception:  # a template that refuses the probe: no header is skipped
            return ""
        return prompted[len(plain) :] if prompted.startswith(plain) else ""

    def _first_answer_probe(self) -> tuple[tuple[str, ...], str | None]:
        """The role headers a conversation's first assistant message may open with, and what the
        template writes before a lone first answer's text (None if unknown).

        The headers: the header, and the part of it the template writes there when that is less
        (Qwen3 without thinking asks for an answer with an empty think block, and writes a first
        answer with none); none when it writes the text with no header (DeepSeek V3.1, whose
        header follows a user turn only). A template that refuses the probe is taken to write the
        header: then a first message without it was rendered as something else and is not trained."""
        if not self.header:
            return (), None
        try:
            probe = self.renderer.render_text(_FIRST_ANSWER_PROBE, None)
        except Exception:
            return (self.header,), None
        content = probe.find(str(_FIRST_ANSWER_PROBE[0]["content"]))
        if content < 0:
            return (self.header,), None
        preamble = probe[:content]
        if self.header in preamble:
            return (self.header,), preamble
        # The longest start of the header, ending where one of its tokens does, right before the text.
        cut = max((cut for cut in self.header_cuts if preamble.endswith(self.header[:cut])), default=0)
        return ((self.header, self.header[:cut]) if cut else ()), preamble

    def _alone(self, message: Mapping[str, Any]) -> str:
        """A first answer's text as the template writes it alone, past what it writes before any
        message ("" if unknown). A template that opens a first answer with no header (DeepSeek
        V3.1) writes every system message of the record before it, one coming after it too: the
        answer is this text at the end of its span, not the span from the start."""
        if self._lone_preamble is None:
            return ""
        try:
            alone = self.renderer.render_text([message], None)
        except Exception:
            return ""
        return alone[len(self._lone_preamble) :] if alone.startswith(self._lone_preamble) else ""

    def _token_ends(self, piece: str) -> set[int]:
        """Where the tokens of `piece`, tokenized alone, end (and 0)."""
        if not piece:
            return {0}
        encoded = self.tokenizer(piece, add_special_tokens=False, return_offsets_mapping=True)
        return {0, *(end for _, end in encoded["offset_mapping"])}

    def _prefix_starts(
        self, messages: list[dict[str, Any]], tools: Sequence[Any] | None, text: str
    ) -> tuple[list[int], set[int]]:
        """Where each message starts, as the common prefix of each growing prefix's rendering and
        the whole (for a template whose loop over the messages could not be seen), and the
        messages whose start is not known: the template refused the messages before them (Llama
        3.1 with tools and no user message yet). Such a message is given where the one before it
        starts, so it holds that one's text too (the system prompt): it is never trained."""
        starts = [0]
        unplaced: set[int] = set()
        for end in range(1, len(messages)):
            try:
                prefix = self.renderer.render_text(messages[:end], tools)
            except Exception:  # a template refusing a prefix: this message owns nothing of its own
                starts.append(starts[-1])
                unplaced.add(end)
                continue
            starts.append(max(starts[-1], _common_prefix(prefix, text)))
        return starts, unplaced


def _common_prefix(left: str, right: str) -> int:
    limit = min(len(left), len(right))
    index = 0
    while index < limit and left[index] == right[index]:
        index += 1
    return index


def _ascending(starts: Sequence[int | None]) -> bool:
    values = [start for start in starts if start is not None]
    return all(a <= b for a, b in itertools.pairwise(values))
