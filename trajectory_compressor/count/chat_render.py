"""Rendering a conversation with its chat template once, knowing where each message starts.

The template runs as `transformers` compiles it (its sandbox, filters and globals), with one
addition: every ``{% for x in messages %}`` loop first writes a private marker naming the
message it has reached. One render then gives both the text, the markers taken out, which is
exactly what ``tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, **kwargs)``
returns, and where the template started writing each message, whatever it does inside one
(tool calls written as JSON, tools in the system preamble, reasoning dropped from earlier
turns). The inputs go through transformers' own preparation (keys whose value is null
dropped, reasoning fields aliased, plain data); with a transformers whose helpers differ, or
if a probe renders differently from `apply_chat_template`, the text comes from
`apply_chat_template` itself and the markers from a second render.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MESSAGES_NAME = "messages"
MARK_FUNCTION = "tc_turn_mark"  # the name the instrumented loops call; passed with each render

# apply_chat_template's own arguments: not template variables, so not chat_template_kwargs (a
# trainer's count has no generation prompt, but one can be asked for: add_generation_prompt).
_NOT_TEMPLATE_VARIABLES = frozenset(
    {"conversation", "messages", "tools", "documents", "chat_template", "continue_final_message", "tokenize",
     "sanitize_control_tokens", "padding", "truncation", "max_length", "return_tensors", "return_dict",
     "return_assistant_tokens_mask", "tokenizer_kwargs", MARK_FUNCTION}
)  # fmt: skip

PROBE_MESSAGES = (
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello."},
    {"role": "assistant", "content": "Hi. How can I help?"},
    {"role": "user", "content": "Summarize the run."},
)


@dataclass(frozen=True)
class Rendering:
    """A rendered conversation and where the template started writing each message.

    `starts[i]` is the offset in `text` of the template's last visit to message i in a loop over
    the messages (a first loop that only looks at them is superseded by the one that writes
    them), or None when no loop reached it (a template may render a system message apart).
    """

    text: str
    starts: list[int | None]


class ChatRenderer:
    """Renders conversations with one tokenizer's chat template and the run's template kwargs."""

    def __init__(self, tokenizer: Any, template_kwargs: Mapping[str, Any]) -> None:
        """Raises `ValueError` for kwargs `check_template_kwargs` refuses or a tokenizer with no
        template to pick, and `jinja2.TemplateError` for a template that does not compile."""
        check_template_kwargs(template_kwargs)
        self.tokenizer = tokenizer
        self.template_kwargs = dict(template_kwargs)
        self.add_generation_prompt = bool(self.template_kwargs.pop("add_generation_prompt", False))
        # What apply_chat_template hands the template besides the conversation: the special
        # tokens by name (bos_token...), overridden by the caller's kwargs.
        self._kwargs = {**tokenizer.special_tokens_map, **self.template_kwargs}
        # Markers a conversation cannot spell by chance, in the Basic Multilingual Plane: a marker
        # outside it would make Python store the whole rendered text at 4 bytes a character.
        self._nonce = secrets.token_hex(4)
        self._marks = re.compile("\ue000" + self._nonce + r":(\d+)\ue001")
        self._helpers = _transformers_helpers()
        for tools in (None, [{"type": "function", "function": {"name": "probe", "parameters": {}}}]):
            _instrument(self._source(tools))  # compile now: a broken template stops the run at start
        if self._helpers is not None and not self._fast_path_agrees(self._helpers):
            self._helpers = None

    def render(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> Rendering:
        """The conversation as the trainer's `apply_chat_template` renders it, with message starts.

        Raises whatever the template raises (``raise_exception(...)``, a missing key).
        """
        if self._helpers is not None:
            return self._render_once(self._helpers, messages, tools)
        text = self.render_text(messages, tools)
        prepared = [{key: value for key, value in message.items() if value is not None} for message in messages]
        marked = self._render_marked(prepared, tools, self._kwargs)
        if self._marks.sub("", marked) != text:
            return Rendering(text, [None] * len(messages))  # markers that change the text are no use
        return self._unmarked(marked, len(messages))

    def render_text(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> str:
        """The rendered text only, through transformers' public `apply_chat_template`."""
        return self.tokenizer.apply_chat_template(
            [dict(message) for message in messages],
            tools=None if tools is None else list(tools),
            tokenize=False,
            add_generation_prompt=self.add_generation_prompt,
            **self.template_kwargs,
        )

    # --- the single render ---------------------------------------------------------------------

    def _render_once(
        self, helpers: tuple[Any, Any, Any], messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None
    ) -> Rendering:
        normalize, plain, alias = helpers
        chat = alias(plain(normalize([dict(message) for message in messages])))
        schemas = None if tools is None else plain(_checked_tools(tools))
        marked = self._render_marked(chat, schemas, plain(self._kwargs))
        return self._unmarked(marked, len(messages))

    def _render_marked(self, chat: list[dict[str, Any]], tools: Sequence[Any] | None, kwargs: dict[str, Any]) -> str:
        marks = {id(message): f"\ue000{self._nonce}:{index}\ue001" for index, message in enumerate(chat)}
        template = _instrument(self._source(tools))
        return template.render(
            messages=chat,
            tools=tools,
            documents=None,
            add_generation_prompt=self.add_generation_prompt,
            **kwargs,
            **{MARK_FUNCTION: lambda message: marks.get(id(message), "")},
        )

    def _unmarked(self, marked: str, count: int) -> Rendering:
        # The text is one `sub`, not a join of slices: a huge message is copied once, not twice.
        starts: list[int | None] = [None] * count
        removed = 0
        for match in self._marks.finditer(marked):
            index = int(match.group(1))
            if index < count:
                starts[index] = match.start() - removed
            removed += match.end() - match.start()
        return Rendering(self._marks.sub("", marked), starts)

    def _source(self, tools: Sequence[Any] | None) -> str:
        # A tokenizer may hold several named templates ("default", "tool_use"): the one
        # apply_chat_template would pick for these tools.
        return self.tokenizer.get_chat_template(None, None if tools is None else list(tools))

    def _fast_path_agrees(self, helpers: tuple[Any, Any, Any]) -> bool:
        """Whether the single render gives `apply_chat_template`'s text on a plain probe."""
        try:
            expected = self.render_text(PROBE_MESSAGES, None)
        except Exception:  # a template that refuses the probe: keep the single render, rows will tell
            return True
        return self._render_once(helpers, PROBE_MESSAGES, None).text == expected


def check_template_kwargs(template_kwargs: Mapping[str, Any]) -> None:
    """Raises `ValueError` for a kwarg that is one of apply_chat_template's own arguments."""
    misplaced = sorted(_NOT_TEMPLATE_VARIABLES.intersection(template_kwargs))
    if misplaced:
        raise ValueError(f"{misplaced[0]!r} is an argument of apply_chat_template, not a template variable")


@functools.lru_cache(maxsize=16)
def _instrument(source: str) -> Any:
    """`source` compiled by transformers' own helper, each loop over the messages marking its message.

    Raises `jinja2.TemplateError` for a template that does not compile.
    """
    from jinja2 import nodes

    environment = _compile(source).environment
    tree = environment.parse(source)
    for loop in tree.find_all(nodes.For):
        if not isinstance(loop.target, nodes.Name) or not _reads_messages(loop.iter):
            continue
        call = nodes.Call(nodes.Name(MARK_FUNCTION, "load"), [nodes.Name(loop.target.name, "load")], [], None, None)
        output = nodes.Output([call])
        for node in (output, call, call.node, *call.args):
            node.set_lineno(loop.lineno)
        loop.body.insert(0, output)
    return environment.from_string(tree)


def _reads_messages(expression: Any) -> bool:
    from jinja2 import nodes

    names = [expression] if isinstance(expression, nodes.Name) else list(expression.find_all(nodes.Name))
    return any(name.name == MESSAGES_NAME for name in names)


def _compile(source: str) -> Any:
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template
    except ImportError:  # pragma: no cover - a transformers without the helper
        import jinja2.sandbox

        return jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(source)
    return _compile_jinja_template(source)


def _checked_tools(tools: Sequence[Any]) -> list[Any]:
    # apply_chat_template takes JSON schemas (dicts) or Python functions; records hold schemas.
    for tool in tools:
        if not isinstance(tool, dict):
            raise ValueError("Tools should either be a JSON schema, or a callable function")
    return list(tools)


def _transformers_helpers() -> tuple[Any, Any, Any] | None:
    """transformers' own preparation of a conversation, when this version has it under these names."""
    try:
        from transformers.utils.chat_template_utils import (
            _alias_reasoning_fields,
            _normalize_chat_messages,
            _plain_template_data,
        )
    except ImportError:
        return None
    return _normalize_chat_messages, _plain_template_data, _alias_reasoning_fields
