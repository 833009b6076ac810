"""Round trips through both write formats, on generated conversations (hypothesis).

(1) OpenAI messages → the reader's turns → a ShareGPT record → OpenAI messages equals the original
    up to the documented normalisations, which `normalised` applies to the original: a list of
    text parts becomes one string (joined by newlines); an assistant content that is empty next
    to calls becomes null; arguments are re-serialised from the object they encode; ``type:
    "function"`` is written on every call; a call no tool message answers gets the id
    ``call_<message index>_<n>`` (ShareGPT markup has no call ids: ids travel on the results); a
    tool message without ``name`` is named after its call; results of calls to the same
    function are paired with them in order; ``tools`` becomes its JSON text.
(2) ShareGPT Hermes rows → OpenAI messages → the reader's turns hold the same conversation: the
    same text of every turn, the same calls (names and arguments) and the same results (content,
    name, id when the row had them). A tool turn with several responses becomes several tool
    messages, so this compares calls and responses, not turn counts.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajectory_compressor.read.convert_format import convert_record
from trajectory_compressor.read.formats import ConversationFormat, detect_format, to_turns
from trajectory_compressor.read.hermes import split_assistant, split_tool

SHAREGPT = ConversationFormat("sharegpt", "conversations")
OPENAI = ConversationFormat("openai", "messages")
MARKUP = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")
EXAMPLES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30).filter(
    lambda s: not any(tag in s for tag in MARKUP)
)
names = st.sampled_from(["bash", "read_file", "get_user_details", "search"])
json_scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | text
arguments = st.dictionaries(text, json_scalars | st.lists(json_scalars, max_size=3), max_size=3)
extras = st.fixed_dictionaries(
    {}, optional={"train": st.booleans(), "weight": st.sampled_from([0, 1, 0.5]), "name": st.sampled_from(["ann"])}
)


def content_of(value: str, as_parts: bool) -> Any:
    return [{"type": "text", "text": part} for part in value.split("\n")] if as_parts else value


# --- (1) OpenAI messages → ShareGPT → OpenAI messages ------------------------------------------


@st.composite
def openai_rows(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text)})
    for step in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": content_of(draw(text), draw(st.booleans())), **draw(extras)})
        ncalls = draw(st.integers(0, 3))
        if ncalls == 0:
            messages.append({"role": "assistant", "content": draw(text), **draw(extras)})
            continue
        calls = [
            {
                "id": f"id{step}{n}",
                "type": "function",
                "function": {"name": draw(names), "arguments": json.dumps(draw(arguments), separators=(",", ":"))},
            }
            for n in range(ncalls)
        ]
        content = draw(st.none() | st.just("") | text)
        messages.append({"role": "assistant", "content": content, "tool_calls": calls, **draw(extras)})
        answered = draw(st.permutations(calls)) if draw(st.booleans()) else calls
        answered = answered[: draw(st.integers(0, ncalls))] if step == 0 or draw(st.booleans()) else answered
        for answered_call in answered:
            tool: dict[str, Any] = {"role": "tool", "tool_call_id": answered_call["id"]}
            if draw(st.booleans()):
                tool["name"] = answered_call["function"]["name"]
            tool["content"] = content_of(draw(text), draw(st.booleans()))
            messages.append(tool)
    row: dict[str, Any] = {"id": draw(st.integers(0, 99)), "messages": messages}
    if draw(st.booleans()):
        row["tools"] = [{"type": "function", "function": {"name": name}} for name in draw(st.lists(names, max_size=2))]
    return row


def normalised(row: dict[str, Any]) -> dict[str, Any]:
    """The original with the documented normalisations applied (see the module docstring)."""
    messages = row["messages"]
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        message = dict(message)
        if isinstance(message["content"], list):
            message["content"] = "\n".join(part["text"] for part in message["content"])
        if message.get("tool_calls"):
            message["content"] = message["content"] or None
            ids = _paired_ids(messages, i)
            message["tool_calls"] = [
                {
                    "id": ids[n],
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": json.dumps(json.loads(c["function"]["arguments"]), ensure_ascii=False),
                    },
                }
                for n, c in enumerate(message["tool_calls"])
            ]
        out.append(message)
    for i, message in enumerate(out):  # tool messages: named after their (paired) call
        if message["role"] == "tool":
            owner = max(j for j in range(i) if out[j]["role"] == "assistant")
            call = next(c for c in out[owner]["tool_calls"] if c["id"] == message["tool_call_id"])
            out[i] = {
                "role": "tool",
                "tool_call_id": call["id"],
                "name": call["function"]["name"],
                "content": message["content"],
            }
    result = {**row, "messages": out}
    if "tools" in row:
        result["tools"] = json.dumps(row["tools"], ensure_ascii=False)
    return result


def _paired_ids(messages: list[dict[str, Any]], owner: int) -> list[str]:
    """Each call's id after the round trip: the id of the next result naming its function, in order."""
    calls = messages[owner]["tool_calls"]
    names_by_id = {c["id"]: c["function"]["name"] for c in calls}
    ids = [f"call_{owner}_{n}" for n in range(len(calls))]
    taken: set[int] = set()
    for message in messages[owner + 1 :]:
        if message["role"] != "tool":
            break
        name = names_by_id[message["tool_call_id"]]
        n = next(n for n, c in enumerate(calls) if n not in taken and c["function"]["name"] == name)
        taken.add(n)
        ids[n] = message["tool_call_id"]
    return ids


@EXAMPLES
@given(openai_rows())
def test_openai_messages_survive_a_round_trip_through_sharegpt(row: dict[str, Any]) -> None:
    sharegpt = convert_record(row, OPENAI, "sharegpt")
    assert [t["value"] for t in sharegpt["conversations"]] == [t.value for t in to_turns(row, OPENAI)]
    back = convert_record(sharegpt, detect_format(sharegpt), "messages")
    assert back == normalised(row)


# --- (2) ShareGPT Hermes → OpenAI messages → the reader's turns -------------------------------


@st.composite
def sharegpt_specs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A conversation as parts: turns of text, gpt turns of (content, calls), result groups."""
    spec: list[dict[str, Any]] = [{"from": "system", "value": draw(text)}, {"from": "human", "value": draw(text)}]
    for _ in range(draw(st.integers(1, 4))):
        content = draw(text)
        if draw(st.booleans()):
            content = "<think>\n" + draw(text) + "\n</think>\n\n" + content
        if draw(st.booleans()):  # raw-string arguments, which a loader could not parse: part of the text
            raw = json.dumps({"name": "bash", "arguments": "ls " + draw(text)}, ensure_ascii=False)
            content += "\n<tool_call>\n" + raw + "\n</tool_call>"
        calls = [(draw(names), draw(arguments)) for _ in range(draw(st.integers(0, 3)))]
        spec.append({"from": "gpt", "content": content, "calls": calls, **draw(extras)})
        results = []
        for n, (name, _) in enumerate(calls):
            body = draw(st.sampled_from(["json", "object", "plain"]))
            results.append(
                {
                    "name": name if body != "plain" and draw(st.booleans()) else None,
                    "id": f"call_{draw(st.integers(0, 9))}{n}x" if body != "plain" and draw(st.booleans()) else None,
                    "content": draw(text) if body != "object" else draw(arguments),
                    "plain": body == "plain",
                }
            )
        if results:
            split = draw(st.booleans())
            for group in [[r] for r in results] if split else [results]:
                spec.append({"from": "tool", "results": group})
    return spec


def hermes_value(part: dict[str, Any]) -> str:
    if part["from"] == "gpt":
        blocks = [
            "<tool_call>\n" + json.dumps({"name": n, "arguments": a}, ensure_ascii=False) + "\n</tool_call>"
            for n, a in part["calls"]
        ]
        return "\n".join([part["content"], *blocks]) if part["content"] else "\n".join(blocks)
    if part["from"] == "tool":
        blocks = []
        for result in part["results"]:
            if result["plain"]:
                body = result["content"]
            else:
                payload = {"tool_call_id": result["id"], "name": result["name"], "content": result["content"]}
                body = json.dumps({k: v for k, v in payload.items() if v is not None}, ensure_ascii=False)
            blocks.append("<tool_response>\n" + body + "\n</tool_response>")
        return "\n".join(blocks)
    return part["value"]


@EXAMPLES
@given(sharegpt_specs())
def test_sharegpt_hermes_rows_keep_every_call_and_result_as_messages(spec: list[dict[str, Any]]) -> None:
    keys = ("train", "weight", "name")
    row = {
        "conversations": [
            {"from": p["from"], "value": hermes_value(p), **{k: p[k] for k in keys if k in p}} for p in spec
        ]
    }
    messages = convert_record(row, SHAREGPT, "messages")
    turns = to_turns(messages, OPENAI)
    roles = [m["role"] for m in messages["messages"]]
    read_back = iter(zip(turns, messages["messages"], strict=True))
    answered: list[str] = []  # names of the calls the results so far answer, in order
    for part in spec:
        if part["from"] == "tool":
            for result in part["results"]:
                turn, message = next(read_back)
                [got] = split_tool(turn.value)
                assert got.name == answered.pop(0)  # its own name, or its call's
                content = result["content"]
                assert got.content == (content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
                if result["id"] is not None:
                    assert got.call_id == result["id"]
                if result["name"] is not None:
                    assert got.name == result["name"]
            continue
        turn, message = next(read_back)
        assert {k: message[k] for k in keys if k in message} == {k: part[k] for k in keys if k in part}
        if part["from"] != "gpt":
            assert turn.value == part["value"]
            continue
        answered = [name for name, _ in part["calls"]]
        got = split_assistant(turn.value)
        assert (got.content or "") == part["content"]
        assert [(c.name, json.loads(c.arguments)) for c in got.calls] == part["calls"]
    assert roles.count("tool") == sum(len(p.get("results", ())) for p in spec)
