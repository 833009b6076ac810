"""Small rows shaped like real agent runs (tau-bench airline, SWE-agent), written for the tests.

ShareGPT as the real datasets spell it: calls as ``<tool_call>`` blocks in gpt values, results as
``<tool_response>`` blocks in tool turns (parallel results merged in one turn), reasoning as a
leading ``<think>`` block, tool schemas as a JSON string in a top-level ``tools``.
"""

from __future__ import annotations

import json
from typing import Any

AIRLINE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_user_details",
            "description": "Get the details of a user.",
            "parameters": {
                "type": "object",
                "properties": {"user_id": {"type": "string", "description": "such as 'sara_doe_496'"}},
                "required": ["user_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_reservation_details",
            "description": "Get the details of a reservation.",
            "parameters": {
                "type": "object",
                "properties": {"reservation_id": {"type": "string"}},
                "required": ["reservation_id"],
            },
        },
    },
]
SWE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


def call(name: str, arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def response(content: Any, name: str | None = None, call_id: str | None = None) -> str:
    payload: dict[str, Any] = {}
    if call_id is not None:
        payload["tool_call_id"] = call_id
    if name is not None:
        payload["name"] = name
    payload["content"] = content
    return "<tool_response>\n" + json.dumps(payload, ensure_ascii=False) + "\n</tool_response>"


def airline_row(task_id: int = 7, padding: int = 0) -> dict[str, Any]:
    """tau-bench style: a user, one call, then two parallel calls whose results share one tool turn."""
    user = {"user_id": "mia_li_3668", "reservations": ["NO6JO3", "AIXC49"], "membership": "gold"}
    return {
        "conversations": [
            {
                "from": "system",
                "value": "# Airline Agent Policy\n\nBook, modify or cancel flights." + " Be exact." * padding,
            },
            {"from": "human", "value": "Hi, I want to check my trips. My user id is mia_li_3668."},
            {"from": "gpt", "value": call("get_user_details", {"user_id": "mia_li_3668"})},
            {"from": "tool", "value": response(json.dumps(user), "get_user_details", "call_Xk2VrXyZ")},
            {
                "from": "gpt",
                "value": "Let me look up both reservations.\n"
                + call("get_reservation_details", {"reservation_id": "NO6JO3"})
                + "\n"
                + call("get_reservation_details", {"reservation_id": "AIXC49"}),
            },
            {
                "from": "tool",
                "value": response('{"reservation_id": "NO6JO3", "origin": "PHX"}', "get_reservation_details", "call_a1")
                + "\n"
                + response('{"reservation_id": "AIXC49", "origin": "JFK"}', "get_reservation_details", "call_b2"),
            },
            {"from": "gpt", "value": "You have two trips: NO6JO3 from PHX and AIXC49 from JFK."},
        ],
        "source": "tau-bench",
        "model": "gpt-4o",
        "task_id": task_id,
        "reward": 1.0,
        "tools": json.dumps(AIRLINE_TOOLS),
    }


def swe_row(padding: int = 0) -> dict[str, Any]:
    """SWE-agent style: reasoning, results without ids, a call with raw-string arguments, a run
    ending on a call with no response, and per-turn training marks."""
    listing = "\n".join(f"src/pkg/mod{i}.py" for i in range(3 + padding))
    return {
        "conversations": [
            {"from": "system", "value": "You are a helpful assistant that can interact with a computer shell."},
            {
                "from": "human",
                "value": "<pr_description>\nseparability_matrix is wrong for nested models\n</pr_description>",
            },
            {
                "from": "gpt",
                "value": "<think>\nFind the module first.\n</think>\n\nI'll explore the repository.\n"
                + call("bash", {"command": "find . -name '*.py' | grep separable"}),
                "train": True,
            },
            {"from": "tool", "value": response(f"<returncode>0</returncode>\n<output>\n{listing}\n</output>", "bash")},
            {"from": "gpt", "value": "Reading it.\n" + call("bash", "cat src/pkg/mod0.py | head -50"), "train": False},
            {"from": "tool", "value": response("def separability_matrix(): ...", "bash"), "weight": 0},
            {
                "from": "gpt",
                "value": "<think>\nNested models lose the right block.\n</think>\n\n"
                + call("bash", {"command": "sed -i 's/1/right/' src/pkg/mod0.py"}),
                "train": True,
            },
        ],
        "instance_id": "astropy__astropy-12907",
        "exit_status": "LimitsExceeded",
        "tools": json.dumps(SWE_TOOLS),
    }


def openai_row() -> dict[str, Any]:
    """OpenAI messages with structured calls, tool messages with ids, content as a list of parts."""
    return {
        "id": "run-3",
        "messages": [
            {"role": "system", "content": "You are an agent."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Fix the test."}, {"type": "text", "text": "Thanks."}],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'},
                    },
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}},
                ],
                "train": True,
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "bash", "content": "1 failed"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "x = 1"}]},
            {"role": "assistant", "content": "Fixed.", "weight": 1},
        ],
        "tools": AIRLINE_TOOLS[:1],
    }


def long_airline_row(index: int, steps: int) -> dict[str, Any]:
    """A longer tau-bench style run: two parallel lookups answered in one tool turn right after the
    task (so the protected head holds a merged tool turn), then `steps` searches with bulky results."""
    turns: list[dict[str, Any]] = [
        {"from": "system", "value": "# Airline Agent Policy\n\nBook, modify or cancel flights."},
        {"from": "human", "value": f"I am user_{index}_4821; find me a flight from JFK to SEA."},
        {
            "from": "gpt",
            "value": call("get_user_details", {"user_id": f"user_{index}_4821"}) + "\n" + call("list_all_airports", {}),
            "train": True,
        },
        {
            "from": "tool",
            "value": response(json.dumps({"user_id": f"user_{index}_4821", "tier": "gold"}), "get_user_details", "c1")
            + "\n"
            + response('["JFK", "SEA", "PHX"]', "list_all_airports", "c2"),
        },
    ]
    for step in range(steps):
        date = f"2024-05-{10 + step:02d}"
        turns.append(
            {
                "from": "gpt",
                "value": f"Searching {date}.\n"
                + call("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": date}),
                "train": step % 2 == 0,
            }
        )
        flights = [{"flight_number": f"HAT{100 + step * 7 + k}", "price": 100 + 13 * k} for k in range(12)]
        turns.append({"from": "tool", "value": response(json.dumps(flights), "search_direct_flight", f"s{step}")})
    turns.append({"from": "gpt", "value": "The cheapest direct flight is HAT100.", "train": True})
    return {"conversations": turns, "task_id": index, "tools": json.dumps(AIRLINE_TOOLS)}
