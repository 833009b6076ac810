"""Tokenizers, templates and records for the chat-template tests, all offline.

The tokenizers are the bundled DeepSeek one, as is (its own special tokens: `<｜User｜>`...),
or with the added tokens of the model family a template is written for (Qwen's `<|im_start|>`,
Llama 3's `<|start_header_id|>`), the way a model's tokenizer.json lists them. The reference
for every count is transformers' own `apply_chat_template`.
"""

from __future__ import annotations

import json
from typing import Any

from tokenizers import AddedToken

from trajectory_compressor.count import load_tokenizer
from trajectory_compressor.count.named_templates import read_chat_template

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
LLAMA_SPECIAL = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>"]


def family_tokenizer(family: str, template: str | None) -> Any:
    """The bundled tokenizer, with the added tokens of `family` ("deepseek": none added) and `template`."""
    tokenizer = load_tokenizer()
    if family == "qwen":
        tokenizer.add_special_tokens({"additional_special_tokens": QWEN_SPECIAL})
        tokenizer.add_tokens([AddedToken(text, normalized=False, special=False) for text in QWEN_ADDED])
    elif family == "llama":
        tokenizer.add_special_tokens({"additional_special_tokens": LLAMA_SPECIAL, "bos_token": "<|begin_of_text|>"})
    tokenizer.chat_template = template
    return tokenizer


def trainer_count(tokenizer: Any, messages: list[Any], tools: Any = None, **kwargs: Any) -> int:
    """What a trainer's own count is: the ids of `apply_chat_template(..., tokenize=True)`.

    transformers 5 returns a BatchEncoding by default (4.x a list of ids): the ids are its
    `input_ids`. They are the rendered text encoded without special tokens, checked here too.
    """
    out = tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, **kwargs)
    ids = out["input_ids"] if hasattr(out, "keys") else out
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, **kwargs)
    assert len(ids) == len(tokenizer.encode(text, add_special_tokens=False))
    assert ids == tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=False, **kwargs)
    return len(ids)


QWEN25 = read_chat_template("qwen2.5")
QWEN3 = read_chat_template("qwen3")
DEEPSEEK31 = read_chat_template("deepseek-v3.1")

# Written after Llama 3.1's template (not shipped: its licence), with what makes it hard: the
# system prompt and first user message taken out of the loop and trimmed, the tools written
# into the first user message, tool calls as JSON with "parameters", tool results as ipython.
LLAMA31_STYLE = """{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools is not none %}{{- "Environment: ipython\\n" }}{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools is not none and messages | length > 0 %}
    {%- set first_user_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}
    {{- "Given the following functions, respond with a JSON for a function call.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}
        {{- message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- for tool_call in message.tool_calls %}
            {%- set call = tool_call.function %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- '{"name": "' + call.name + '", "parameters": ' }}
            {{- call.arguments | tojson }}
            {{- "}<|eom_id|>" }}
        {%- endfor %}
    {%- else %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {{- message.content }}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}
"""

# A template reading a kwarg: with enable_thinking false, reasoning is left out of every turn.
THINKING_KWARG = """{%- for message in messages %}
    {%- set content = message.content %}
    {%- if message.role == 'assistant' and enable_thinking is defined and not enable_thinking %}
        {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
    {%- endif %}
    {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}
{%- endfor %}"""

# ChatML that reads content given as a list of parts.
PARTS_CHATML = """{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\\n' }}
    {%- if message.content is string %}{{- message.content }}
    {%- else %}{%- for part in message.content %}{{- part.text }}{%- endfor %}{%- endif %}
    {{- '<|im_end|>\\n' }}
{%- endfor %}"""

# No loop over `messages` at all: the per-message split falls back to growing prefixes.
RECURSIVE = """{%- macro turns(items) %}{%- if items %}<|im_start|>{{ items[0].role }}
{{ items[0].content }}<|im_end|>
{{ turns(items[1:]) }}{%- endif %}{%- endmacro %}{{- turns(messages) }}"""


# A loop that gathers the messages into a string written out after it: no message start is seen.
GATHERING = """{%- set ns = namespace(out='') %}
{%- for message in messages %}
    {%- set ns.out = ns.out + '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' %}
{%- endfor %}
{{- ns.out }}"""


def weather_tools(count: int = 3) -> list[dict[str, Any]]:
    """`count` function schemas, like a tau-bench record's."""
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{index}",
                "description": f"Look up record {index}: flights, bookings, payment methods.",
                "parameters": {
                    "type": "object",
                    "properties": {"user_id": {"type": "string", "description": "The user's id, e.g. mia_li_3668."}},
                    "required": ["user_id"],
                },
            },
        }
        for index in range(count)
    ]


def openai_record(
    steps: int = 3, *, reasoning: bool = False, tools: Any = None, empty_content: Any = None
) -> dict[str, Any]:
    """An OpenAI-messages agent run: tool calls with `empty_content` (null, or "" for templates
    that need a string), tool results with ids and names."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an airline agent. Follow the policy."},
        {"role": "user", "content": "Change my flight to Friday, user id mia_li_3668. Café 日本 🤖"},
    ]
    for step in range(steps):
        call_id = f"call_{step}"
        arguments = json.dumps({"user_id": "mia_li_3668", "step": step})
        call = {"id": call_id, "type": "function", "function": {"name": f"tool_{step % 3}", "arguments": arguments}}
        assistant: dict[str, Any] = {"role": "assistant", "content": empty_content, "tool_calls": [call]}
        if step % 2:
            second = {"id": f"{call_id}b", "type": "function", "function": {"name": "tool_1", "arguments": "{}"}}
            assistant = {"role": "assistant", "content": f"Checking {step}.", "tool_calls": [call, second]}
        if reasoning:
            assistant["reasoning_content"] = f"The user wants step {step}."
        messages.append(assistant)
        result = json.dumps({"flight": f"HAT{170 + step}", "status": "available", "seats": [1, 2, 3]})
        messages.append({"role": "tool", "tool_call_id": call_id, "name": f"tool_{step % 3}", "content": result})
        if step % 2:
            messages.append({"role": "tool", "tool_call_id": f"{call_id}b", "name": "tool_1", "content": "[]"})
    messages.append({"role": "assistant", "content": "Your flight is changed to Friday."})
    record: dict[str, Any] = {"id": "openai-run", "messages": messages}
    if tools is not None:
        record["tools"] = tools
    return record


def sharegpt_record(steps: int = 3, *, tools_key: str = "tools", tools: Any = None) -> dict[str, Any]:
    """A ShareGPT agent run (Hermes-style `<tool_call>` text, `<think>` blocks), tools under `tools_key`."""
    turns = [
        {"from": "system", "value": "You are a coding agent."},
        {"from": "human", "value": "Make tests/test_x.py pass."},
    ]
    for step in range(steps):
        call = json.dumps({"name": "bash", "arguments": {"command": f"pytest -k case{step}"}})
        turns.append({"from": "gpt", "value": f"<think>\nstep {step}\n</think>\n\n<tool_call>\n{call}\n</tool_call>"})
        turns.append({"from": "tool", "value": f"<tool_response>\ncase{step} PASSED\n</tool_response>"})
    turns.append({"from": "gpt", "value": "<think>\nall green\n</think>\n\nAll tests pass."})
    record: dict[str, Any] = {"id": "sharegpt-run", "conversations": turns}
    if tools is not None:
        record[tools_key] = tools
    return record
