"""A multi-source input for the trainer tests: the bundled sample runs (ShareGPT, Hermes markup) and
OpenAI-message runs of another agent with other record keys, other tools, JSON-text arguments, text
beside calls, several results per call turn, and marks an input put on tool and user turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "agent_runs.jsonl"

EDIT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace text in a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
                "required": ["path", "old", "new"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the repository.",
            "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
        },
    },
]


def sample_rows(count: int) -> list[dict[str, Any]]:
    with open(SAMPLE, encoding="utf-8") as handle:
        return [json.loads(line) for _, line in zip(range(count), handle, strict=False)]


def openai_run(index: int, *, steps: int = 14, foreign_marks: bool = False) -> dict[str, Any]:
    """An editing agent's run as OpenAI messages: its own keys and tools, two results per step."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You edit code with the tools given. Be brief."},
        {"role": "user", "content": f"Rename helper_{index} to util_{index} everywhere in src/."},
    ]
    for step in range(steps):
        ids = [f"call_{index}_{step}_a", f"call_{index}_{step}_b"]
        messages.append(
            {
                "role": "assistant",
                "content": f"Step {step}: search, then edit file {step}." if step % 3 else None,
                "tool_calls": [
                    {
                        "id": ids[0],
                        "type": "function",
                        "function": {"name": "search", "arguments": json.dumps({"pattern": f"helper_{index}"})},
                    },
                    {
                        "id": ids[1],
                        "type": "function",
                        "function": {
                            "name": "edit_file",
                            "arguments": json.dumps({"path": f"src/m{step}.py", "old": "helper", "new": "util"}),
                        },
                    },
                ],
            }
        )
        listing = "\n".join(f"src/m{n}.py:{n * 3}: helper_{index}(x)  # call site {n}" for n in range(40))
        messages.append({"role": "tool", "tool_call_id": ids[0], "name": "search", "content": listing})
        messages.append({"role": "tool", "tool_call_id": ids[1], "name": "edit_file", "content": f"edited m{step}"})
        if foreign_marks:
            messages[-1]["train"] = True
            messages[-2]["train"] = True
    messages.append({"role": "assistant", "content": f"Renamed helper_{index} in {steps} files."})
    if foreign_marks:
        messages[1]["train"] = True
    return {
        "task_id": f"edit-{index}",
        "reward": 1.0 if index % 2 else 0.0,
        "messages": messages,
        "tools": EDIT_TOOLS,
        "agent": {"name": "editor", "version": index},
    }


def multi_source_rows() -> list[dict[str, Any]]:
    """Sample runs, then the other agent's runs (two carrying foreign marks), in one input."""
    rows = sample_rows(24)
    rows += [openai_run(index, foreign_marks=index in (2, 5)) for index in range(8)]
    return rows
