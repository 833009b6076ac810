"""The contract of a task family: tools, system prompt, task, one step of work, follow-up, final answer.

Why a base class: `generate_trajectory` drives every family the same way (steps sized to a
budget until the row reaches its target length), so a new kind of task only fills these in.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from typing import Any

from .run import CHARS_PER_TOKEN, Run
from .tools import TOOL_FORMAT


class Family:
    """A kind of task; subclasses fill in the tools, the prompts and the steps."""

    name = "family"
    intro = ""
    chars_per_token: tuple[float, float] = CHARS_PER_TOKEN

    def __init__(self, rng: random.Random, lang: str) -> None:
        self.rng = rng
        self.lang = lang

    @staticmethod
    def tool_schemas(variant: str = "") -> list[dict]:
        """The function definitions offered to the model (a static function of the variant)."""
        raise NotImplementedError

    def tools(self) -> list[dict]:
        return self.tool_schemas(self.variant())

    def system_prompt(self, with_schemas: bool) -> str:
        if not with_schemas:
            return self.intro
        indent = 2 if self.rng.random() < 0.3 else None
        return self.intro + "\n\n# Tools\n\n" + TOOL_FORMAT.format(schemas=self.tools_json(indent))

    def tools_json(self, indent: int | None = None) -> str:
        """The tool schemas as JSON text, cached: they are the same for every row of a kind."""
        return _tools_json(type(self), self.variant(), indent)

    def variant(self) -> str:
        """What `tools()` depends on besides the class (the coding harness)."""
        return ""

    def task(self) -> str:
        raise NotImplementedError

    def opening(self, run: Run) -> None:
        """Turns before the task (only customer service greets first)."""

    def step(self, run: Run, budget: int, progress: float) -> None:
        raise NotImplementedError

    def followup(self) -> str:
        raise NotImplementedError

    def final(self, run: Run) -> None:
        raise NotImplementedError

    def meta(self) -> dict[str, Any]:
        return {}


@lru_cache(maxsize=64)
def _tools_json(kind: type[Family], variant: str, indent: int | None) -> str:
    return json.dumps(kind.tool_schemas(variant), indent=indent, ensure_ascii=False)
