"""A `--write-format messages` output loads the way the trainers load it.

`datasets.load_dataset("json")` (TRL, axolotl, LLaMA-Factory read JSON Lines through it) and the
Parquet reader take the file; `transformers`' ``apply_chat_template(messages, tools=tools)`` with
a Qwen-style template (written here, Hermes tool markup) renders every call and every result of
the rows, from the loaded rows as they come (Arrow-padded keys included). The bundled DeepSeek
tokenizer stands in for the model's, loaded through `PreTrainedTokenizerFast(tokenizer_file=...)`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_cli, write_jsonl
from tests.write.agent_rows import AIRLINE_TOOLS, SWE_TOOLS, airline_row, long_airline_row, swe_row

BUDGET = ["--summarizer", "extractive", "--target-max-tokens", "1500", "--summary-target-tokens", "200", "-q"]

# Qwen-style: tools in the system turn, calls as <tool_call> JSON after the content, consecutive
# tool results in one user turn. Arguments are printed as given when a string (OpenAI's JSON text).
QWEN_STYLE = (
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0].role == 'system' %}{{ messages[0].content + '\\n\\n' }}{%- endif %}"
    "# Tools\n\n<tools>"
    "{%- for tool in tools %}{{ '\\n' + (tool | tojson) }}{%- endfor %}"
    "\n</tools><|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}{{ '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}"
    "{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' + (message.content if message.content is string else '') }}"
    "{%- for call in message.tool_calls or [] %}"
    "{%- if loop.first and message.content %}{{ '\\n' }}{%- elif not loop.first %}{{ '\\n' }}{%- endif %}"
    '{{ \'<tool_call>\\n{"name": "\' + call.function.name + \'", "arguments": \' }}'
    "{%- if call.function.arguments is string %}{{ call.function.arguments }}"
    "{%- else %}{{ call.function.arguments | tojson }}{%- endif %}"
    "{{ '}\\n</tool_call>' }}"
    "{%- endfor %}{{ '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{ '<|im_start|>user' }}{%- endif %}"
    "{{ '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{ '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
)


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trainers")
    rows = [long_airline_row(0, 12), airline_row(), swe_row(), long_airline_row(1, 3)]
    source = write_jsonl(root / "in.jsonl", rows)
    for out in ("x.jsonl", "x.parquet"):
        result = run_cli("compress", str(source), "-o", str(root / out), "--write-format", "messages", *BUDGET)
        assert result.returncode == 0, result.stderr
    return root


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from transformers import PreTrainedTokenizerFast

    from trajectory_compressor.count.tokenizer import bundled_tokenizer_dir

    loaded = PreTrainedTokenizerFast(tokenizer_file=str(bundled_tokenizer_dir() / "tokenizer.json"))
    loaded.chat_template = QWEN_STYLE
    return loaded


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_load_dataset_json_reads_every_row_with_string_arguments_and_mixed_null_content(
    output: Path, tmp_path: Path
) -> None:
    import datasets

    loaded = datasets.load_dataset("json", data_files=str(output / "x.jsonl"), split="train", cache_dir=str(tmp_path))
    written = read_jsonl(output / "x.jsonl")
    assert [_without_nulls(row) for row in loaded] == [_without_nulls(row) for row in written]
    contents = [m["content"] for row in loaded for m in row["messages"]]
    assert None in contents and any(isinstance(c, str) for c in contents)  # null next to text, across rows
    arguments = [
        c["function"]["arguments"] for row in loaded for m in row["messages"] for c in m.get("tool_calls") or []
    ]
    assert arguments and all(isinstance(json.loads(a), dict) for a in arguments)  # axolotl json.loads each
    assert [json.loads(row["tools"]) for row in loaded] == [AIRLINE_TOOLS, AIRLINE_TOOLS, SWE_TOOLS, AIRLINE_TOOLS]


def test_tools_as_json_text_come_back_whole_where_arrow_pads_lists_of_different_schemas() -> None:
    import pyarrow as pa

    rows = [{"tools": AIRLINE_TOOLS}, {"tools": SWE_TOOLS}]
    padded = pa.Table.from_pylist(rows).to_pylist()
    # One struct type for every row: each tool gains the other rows' parameters, as nulls.
    assert padded[1]["tools"][0]["function"]["parameters"]["properties"]["user_id"] is None
    as_text = [{"tools": json.dumps(row["tools"])} for row in rows]
    assert [json.loads(row["tools"]) for row in pa.Table.from_pylist(as_text).to_pylist()] == [AIRLINE_TOOLS, SWE_TOOLS]


def _rendered_parts(row: dict[str, Any]) -> list[str]:
    """What the template must show of a row: every call (as Hermes markup) and every result."""
    parts = []
    for message in row["messages"]:
        if message["role"] == "tool":
            parts.append(f"<tool_response>\n{message['content']}\n</tool_response>")
        elif message["content"]:
            parts.append(message["content"])
        for call in message.get("tool_calls") or []:
            function = call["function"]
            parts.append(
                f'<tool_call>\n{{"name": "{function["name"]}", "arguments": {function["arguments"]}}}\n</tool_call>'
            )
    return parts


@pytest.mark.parametrize("reader", ["json", "parquet"])
def test_apply_chat_template_renders_every_call_and_result_of_the_loaded_rows(
    output: Path, tmp_path: Path, tokenizer: Any, reader: str
) -> None:
    import datasets

    name = "x.jsonl" if reader == "json" else "x.parquet"
    loaded = datasets.load_dataset(reader, data_files=str(output / name), split="train", cache_dir=str(tmp_path))
    written = read_jsonl(output / "x.jsonl")
    assert len(loaded) == len(written) == 4
    if reader == "parquet":  # a struct column: every message carries every key, null where absent
        assert all(set(m) >= {"tool_calls", "tool_call_id", "name"} for row in loaded for m in row["messages"])
    for row, original in zip(loaded, written, strict=True):
        tools = json.loads(row["tools"])  # what TRL's SFTTrainer and axolotl do with a string
        text = tokenizer.apply_chat_template(row["messages"], tools=tools, tokenize=False)
        assert text == tokenizer.apply_chat_template(original["messages"], tools=tools, tokenize=False)
        position = 0
        for part in _rendered_parts(original):  # every call and result, in order
            found = text.find(part, position)
            assert found >= 0, part[:200]
            position = found + len(part)
        assert json.dumps(tools[0]) in text
        ids = tokenizer.apply_chat_template(row["messages"], tools=tools, tokenize=True)["input_ids"]
        assert tokenizer.decode(ids) == text
