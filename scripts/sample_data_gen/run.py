"""One run under construction: turns, a running token estimate, and the call/response plumbing.

Why here: the tool-call quirks (arguments that are not JSON, a run cut after a call, parallel
responses merged into one turn, acknowledgements of follow-ups) are injected where calls and
responses are written, so every task family gets them for free.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

# Characters per token with the DeepSeek tokenizer, measured on this generator's output: each
# family sets its own for tool output and for prose (code and tables are denser than prose).
# Only used to steer row lengths; the README's numbers come from the real tokenizer.
CHARS_PER_TOKEN = (3.8, 3.6)  # (system/human/gpt, tool)
CJK_CHARS_PER_TOKEN = 1.3

Call = tuple[str, Any, Any]  # (tool name, arguments, content of the response)

ACKS = ("Understood.", "Got it.", "Sure, noted.", "Okay, I'll take that into account.", "Thanks for the heads-up.")


class StopRun(Exception):
    """Ends a run right after a tool call, before any response: the "interrupted run" quirk."""


def _call_block(name: str, arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def _broken_call_block(rng: random.Random, name: str, arguments: Any) -> tuple[str, str]:
    """A call block whose arguments do not parse, and the error a harness would return for it."""
    text = json.dumps(arguments, ensure_ascii=False)
    style = rng.randrange(3)
    if style == 0 and len(text) > 24:  # generation cut off mid-string
        cut = rng.randint(len(text) // 2, len(text) - 3)
        block = '{"name": "' + name + '", "arguments": ' + text[:cut]
        return (
            f"<tool_call>\n{block}\n</tool_call>",
            f"Expecting ',' delimiter: line 1 column {cut + 30} (char {cut + 29})",
        )
    if style == 1:  # single quotes, as some models write Python dicts
        block = '{"name": "' + name + '", "arguments": ' + text.replace('"', "'") + "}"
        return (
            f"<tool_call>\n{block}\n</tool_call>",
            "Expecting property name enclosed in double quotes: line 1 column 2",
        )
    block = json.dumps({"name": name, "arguments": text[1:-1] if len(text) > 2 else text}, ensure_ascii=False)
    return f"<tool_call>\n{block}\n</tool_call>", "arguments must be a JSON object, got a string"


@dataclass
class Run:
    """Turns of one trajectory being generated, with the switches for its quirks."""

    rng: random.Random
    lang: str = "en"
    chars_per_token: tuple[float, float] = CHARS_PER_TOKEN
    reasoning: bool = False
    thinks_aloud: bool = False
    id_style: int = 0
    merge_parallel: float = 0.5
    break_next_call: bool = False
    stop_at_next_call: bool = False
    ack_pending: bool = False
    turns: list[dict[str, str]] = field(default_factory=list)
    tokens: float = 0.0
    calls: int = 0

    def add(self, role: str, value: str) -> None:
        self.turns.append({"from": role, "value": value})
        per_token = self.chars_per_token[role == "tool"]
        if self.lang == "zh":
            wide = (len(value.encode()) - len(value)) // 2
            self.tokens += (len(value) - wide) / per_token + wide / CJK_CHARS_PER_TOKEN
        else:
            self.tokens += len(value) / per_token

    def _call_id(self) -> str:
        self.calls += 1
        if self.id_style == 0:
            return f"call_{self.rng.getrandbits(96):024x}"
        if self.id_style == 1:
            return f"toolu_01{self.rng.getrandbits(88):022x}"
        return f"call_{self.calls}"

    def gpt(self, text: str, thought: str = "") -> None:
        """A gpt turn without tool calls (a reply to the user or the final answer)."""
        self.add("gpt", self._prose(text, thought))

    def _prose(self, text: str, thought: str) -> str:
        if thought and self.reasoning:
            text = f"<think>\n{thought}\n</think>\n{text}" if text else f"<think>\n{thought}\n</think>"
        elif thought and self.thinks_aloud:
            text = f"{thought}\n\n{text}" if "\n" in text else f"{thought} {text}"
        if self.ack_pending:
            self.ack_pending = False
            ack = self.rng.choice(ACKS)
            text = text.replace("</think>\n", f"</think>\n{ack} ", 1) if text.startswith("<think>") else f"{ack} {text}"
        return text

    def act(self, text: str, calls: Sequence[Call], thought: str = "") -> None:
        """A gpt turn with tool calls, then the responses: separate tool turns or one merged turn."""
        blocks, responses = [], []
        for i, (name, arguments, content) in enumerate(calls):
            call_id = self._call_id()
            if i == 0 and self.break_next_call:
                self.break_next_call = False
                block, error = _broken_call_block(self.rng, name, arguments)
                blocks.append(block)
                content = f"Error: could not parse tool call: {error}. Send the arguments as a JSON object."
            else:
                blocks.append(_call_block(name, arguments))
            responses.append(self._response(call_id, name, content))
        prose = self._prose(text, thought)
        self.add("gpt", prose + "\n" + "\n".join(blocks) if prose else "\n".join(blocks))
        if self.stop_at_next_call:
            raise StopRun
        if len(responses) > 1 and self.rng.random() < self.merge_parallel:
            self.add("tool", "\n".join(responses))
        else:
            for response in responses:
                self.add("tool", response)

    @staticmethod
    def _response(call_id: str, name: str, content: Any) -> str:
        body = orjson.dumps(content).decode()
        return (
            f'<tool_response>\n{{"tool_call_id": "{call_id}", "name": "{name}", "content": {body}}}\n</tool_response>'
        )
