"""`--count-mode chat-template`: a row counted as the trainer's own `apply_chat_template` counts it.

The row's total is ``len(tokenizer.apply_chat_template(messages, tools=tools, tokenize=True,
return_dict=False, **chat_template_kwargs))`` of the record **as written** (in the run's
`--write-format`) and as the trainer loads it (`read.chat_view`: an OpenAI record's message objects
with their ``tool_calls``, arguments as objects, ``tool_call_id``, content parts; a ShareGPT
record's turns as role/content), its tool schemas, the run's template kwargs. The planner needs that
total split by message: each conversation is rendered once, with the template marking where it
starts each message (`chat_render`), and counted in one batch in pieces cut next to the
template's own added tokens, so the pieces add up exactly to the whole (`chat_pieces`). The
template's preamble (the tools, a default system prompt) belongs to the first message, which
is the protected head's. A template whose loop over the messages cannot be seen falls back to
rendering growing prefixes and taking differences: exact too, but quadratic in the row's length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.count.backends import REFERENCE, CountingBackend
from trajectory_compressor.count.chat_pieces import CutPoints, count_groups, group_pieces
from trajectory_compressor.count.chat_render import ChatRenderer, check_template_kwargs
from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.read.chat_view import trainer_chat
from trajectory_compressor.read.convert_format import HF_CHAT, convert_with_owners, written_format
from trajectory_compressor.read.formats import ConversationFormat, chat_messages, from_turns
from trajectory_compressor.types import OutputTurn, Turn, one_line

# A chat larger than this (characters of its messages and tools) is not rendered: the template
# builds the whole text, several copies of it at 2 bytes a character (its markers are outside
# Latin-1), about 10 bytes per character of the row in all; values mode counts any size in pieces.
MAX_CHAT_CHARS = 100_000_000

# What the summary turn's markers cost is measured on a conversation like a compressed row's
# (the head, the summary, the next assistant turn), with and without the summary.
_SUMMARY_PROBE = "[CONTEXT SUMMARY]: The assistant listed the files and ran the tests."
_HEAD = (
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Fix the failing test."},
)
_OVERHEAD_PROBES = (
    (
        [*_HEAD, {"role": "assistant", "content": "I will run it."}, {"role": "tool", "content": "1 failed"}],
        {"role": "assistant", "content": "Fixed."},
    ),
    ([*_HEAD, {"role": "assistant", "content": "I will run it."}], None),
)


@dataclass(frozen=True)
class Chat:
    """A conversation as the chat template takes it: messages (role, content, tool_calls...) and tools.

    `owners` gives, for each message, the turn of the row it comes from, when a turn was written
    as several messages (a ShareGPT tool turn holding several results); None: one per turn.
    """

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Any] | None = None
    owners: Sequence[int] | None = None

    def per_turn(self, counts: list[int]) -> list[int]:
        """Per-message counts folded into per-turn counts (the same list when one message is one turn)."""
        if self.owners is None:
            return counts
        turns = [0] * (self.owners[-1] + 1 if self.owners else 0)
        for owner, count in zip(self.owners, counts, strict=True):
            turns[owner] += count
        return turns


class ChatTemplateError(ValueError):
    """The chat template cannot render conversation number `position` of a batch."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position


class ChatTemplateCounter(TokenCounter):
    """Counts rows as the tokenizer's chat template renders them, split by message for the planner.

    `template_kwargs` go to the template as `apply_chat_template`'s extra kwargs do (for example
    ``{"enable_thinking": false}``); `tools_key` is the record key holding its tool schemas.
    Rendered text is tokenized through `count_many`, so it is counted as fast as values are, by
    the same backend (`backend`, as `TokenCounter` takes it).
    """

    counts_chat_template = True

    def __init__(
        self,
        tokenizer: Any,
        *,
        template_kwargs: Mapping[str, Any] | None = None,
        tools_key: str = "tools",
        backend: str | CountingBackend = REFERENCE,
        write_format: str | None = None,
    ) -> None:
        super().__init__(tokenizer, backend=backend)
        from trajectory_compressor.count.tokenizer import TokenizerLoadError

        if not getattr(tokenizer, "chat_template", None):
            raise TokenizerLoadError(
                f"tokenizer '{self.name}' has no chat template; use --count-mode values (the default), "
                "--chat-template FILE or NAME, or a --tokenizer directory that has one"
            )
        import jinja2

        try:
            check_template_kwargs(template_kwargs or {})
        except ValueError as exc:
            raise TokenizerLoadError(f"chat_template_kwargs: {exc}") from None
        try:
            self.renderer = ChatRenderer(tokenizer, template_kwargs or {})
        except jinja2.TemplateError as exc:
            lineno = getattr(exc, "lineno", None)  # a TemplateSyntaxError's
            line = f" line {lineno}" if lineno else ""
            raise TokenizerLoadError(
                f"the chat template of '{self.name}'{line} is not a valid Jinja template: {one_line(exc)}"
            ) from None
        except ValueError as exc:  # several templates, none named "default": nothing to pick
            raise TokenizerLoadError(f"tokenizer '{self.name}': {one_line(exc)}") from None
        self.tools_key = tools_key
        self.write_format = write_format  # the row is counted as it is written (--write-format)
        self.cut_points = CutPoints.of(getattr(tokenizer, "backend_tokenizer", tokenizer))
        self._turn_overhead: int | None = None

    def chat_of(self, record: Any, fmt: ConversationFormat, layout: Sequence[OutputTurn] | None = None) -> Chat:
        """What the template renders for `record`, or for the record `layout` rewrites it into,
        as the run writes it (`--write-format`) and a trainer loads it (`read.chat_view`).

        The messages are the record's own (or those the writer writes for the layout: the
        summary as a new user message, the system message with the notice); the tools are the
        record's. Raises `read.formats.RecordError` for tools that are not a list of schemas.
        """
        if layout is not None:
            record = from_turns(record, fmt, layout)
        written, owners = convert_with_owners(record, fmt, self.write_format, tools_key=self.tools_key)
        tools_key = "tools" if self.write_format == HF_CHAT else self.tools_key  # hf-chat names its key "tools"
        view = trainer_chat(written, written_format(fmt, self.write_format), tools_key)
        return Chat(view.messages, view.tools, owners)

    def count_chats(self, chats: Sequence[Chat]) -> list[list[int]]:
        """Per-message counts of each chat, adding up to its whole rendered count.

        A chat the template refuses raises `ChatTemplateError` naming its position.
        """
        jobs: list[tuple[str, list[Any]]] = []
        by_prefixes: dict[int, list[int]] = {}
        for position, chat in enumerate(chats):
            if not chat.messages:
                jobs.append(("", []))
                continue
            size = chat_chars(chat)
            if size > MAX_CHAT_CHARS:
                raise ChatTemplateError(
                    position,
                    f"too large for --count-mode chat-template: its messages and tools hold {size:,} characters, "
                    f"over {MAX_CHAT_CHARS:,} (rendering it takes about 10 bytes a character; --count-mode values "
                    "counts a row of any size in bounded memory)",
                )
            try:
                rendering = self.renderer.render(chat.messages, chat.tools)
            except Exception as exc:  # Jinja templates raise anything (e.g. "roles must alternate")
                raise ChatTemplateError(position, f"chat template failed: {one_line(exc)}") from None
            if _loop_unseen(rendering.starts):
                by_prefixes[position] = self._prefix_differences(chat, rendering.text)
                jobs.append(("", []))
                continue
            jobs.append((rendering.text, group_pieces(rendering.text, rendering.starts, self.cut_points)))
        result = count_groups(jobs, self.count_many)
        for position, counts in by_prefixes.items():
            result[position] = counts
        return [chat.per_turn(counts) for chat, counts in zip(chats, result, strict=True)]

    def count_conversations(self, conversations: Sequence[Sequence[Turn]]) -> list[list[int]]:
        """Per-turn counts of bare turns (role and text, no tools), as `count_chats` counts them."""
        return self.count_chats([Chat(chat_messages(turns)) for turns in conversations])

    def count_turn(self, turn: Turn) -> int:
        """Tokens a new turn (the summary) adds in the middle of a conversation: its text, and
        what the template writes around it (`turn_overhead`)."""
        return self.count(turn.value) + self.turn_overhead

    @property
    def turn_overhead(self) -> int:
        """Tokens the template adds for a user turn inserted after the head: its role markers,
        and any change it brings to the turn after it. Measured once, on a probe conversation
        with and without such a turn; the rewritten row itself is counted exactly anyway."""
        if self._turn_overhead is None:
            self._turn_overhead = self._measured_overhead()
        return self._turn_overhead

    def _measured_overhead(self) -> int:
        summary = {"role": "user", "content": _SUMMARY_PROBE}
        for head, after in _OVERHEAD_PROBES:
            rest = [after] if after is not None else []
            try:
                without, with_summary = self.count_chats([Chat([*head, *rest]), Chat([*head, summary, *rest])])
            except ChatTemplateError:
                continue
            return max(0, sum(with_summary) - sum(without) - self.count(_SUMMARY_PROBE))
        return 0

    def _prefix_differences(self, chat: Chat, text: str) -> list[int]:
        """Per-message counts as differences of growing prefixes, for a template whose loop over
        the messages cannot be seen (the whole row's count stays exact whatever happens)."""
        try:
            ends = range(1, len(chat.messages))
            prefixes = [self.renderer.render(chat.messages[:end], chat.tools).text for end in ends]
        except Exception:  # a template that refuses a prefix: the whole row on its first message
            return [self.count(text)] + [0] * (len(chat.messages) - 1)
        counts = self.count_many([*prefixes, text])
        return [after - before for before, after in zip([0, *counts], counts, strict=False)]


def chat_chars(chat: Chat) -> int:
    """Characters of every text in a chat's messages and tools (keys and values), without copying any."""
    total = 0
    stack: list[object] = [list(chat.messages), chat.tools]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def _loop_unseen(starts: Sequence[int | None]) -> bool:
    """Whether no loop of the template wrote the messages one by one: it reached none after the
    first, or reached them all at one place (a loop that gathers them, written out later)."""
    later = {start for start in starts[1:] if start is not None}
    return len(starts) > 1 and (not later or (len(starts) > 2 and len(later) == 1))
