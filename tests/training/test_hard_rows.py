"""Records that once reached an ``hf-chat`` output and crashed the README's TRL recipe, the run exiting 0.

Each hard record is either written in a shape the trainers take or rejected, named with its file
and line and the reason, never both: one `compress --write-format hf-chat` run per count mode over
the hard records between good ones, its output loaded as the README says (`datasets`, then
`ChatTokens` on the Qwen2.5 template: TRL's pre-tokenized rows) and by axolotl's own code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_cli, write_jsonl
from trajectory_compressor.training import ChatTokens, is_trained, messages_of

pytestmark = pytest.mark.trainers

GOOD = {"id": "good", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}

USER_PARTS = {"role": "user", "content": [{"type": "text", "text": "Analyze"}, {"type": "text", "text": "the data."}]}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
TOOL = {"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}
CALL = {"id": "c0", "type": "function", "function": {"name": "read", "arguments": '{"path": "/data/f0.csv"}'}}
CALL_AND_RESULT: list[dict[str, Any]] = [
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c0", "content": [{"type": "text", "text": "row 0: value=0"}]},
]
BAD_CALL_AND_RESULT: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{**CALL, "id": "c1", "function": {"name": "read", "arguments": "{not json"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "error: bad arguments"},
]

# (record, the reason it is rejected for, or None: written, and loaded by the trainers)
HARD: list[tuple[dict[str, Any], str | None]] = [
    ({"id": "empty-sharegpt", "conversations": []}, "empty conversation: 'conversations' holds no turns"),
    ({"id": "empty-openai", "messages": []}, "empty conversation: 'messages' holds no turns"),
    ({"id": "text-parts", "messages": [USER_PARTS, *CALL_AND_RESULT, {"role": "assistant", "content": "Done."}]}, None),
    (
        {
            "id": "image-part",
            "messages": [{**USER_PARTS, "content": [*USER_PARTS["content"], IMAGE]}, *CALL_AND_RESULT],
        },
        "turn 0: content part 2 has unsupported type 'image_url'",
    ),
    ({**GOOD, "id": "tools-not-json", "tools": "not json"}, "'tools' is not valid JSON"),
    ({**GOOD, "id": "tools-object", "tools": {"name": "read"}}, "'tools' is not a list of tool schemas"),
    ({**GOOD, "id": "tools-json-text", "tools": json.dumps([TOOL])}, None),
    ({**GOOD, "id": "tools-blank", "tools": " "}, None),  # no tools: written null (axolotl json.loads text)
    ({**GOOD, "id": "tools-null-text", "tools": "null"}, None),
    (
        {"id": "arguments-not-json", "messages": [USER_PARTS, *CALL_AND_RESULT, *BAD_CALL_AND_RESULT]},
        "turn 3: tool_calls[0] ('read'): 'arguments' are not valid JSON",
    ),
]
COUNT_MODES = ("values", "chat-template")


@pytest.fixture(scope="module")
def runs(chat_tokenizer: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One hf-chat run per count mode over the hard records, each after a good one."""
    tmp = tmp_path_factory.mktemp("hard_rows")
    tokenizer = chat_tokenizer("qwen2.5")
    tokenizer.save_pretrained(tmp / "qwen")
    rows = [row for record, _ in HARD for row in (GOOD, record)]
    source = write_jsonl(tmp / "in.jsonl", rows)
    outputs = {}
    for mode in COUNT_MODES:
        out = tmp / mode / "x.jsonl"
        result = run_cli(
            "compress", str(source), "-o", str(out), "--write-format", "hf-chat", "--count-mode", mode,
            "--tokenizer", str(tmp / "qwen"), "--summarizer", "extractive", "-q",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        outputs[mode] = out
    return {"source": source, "rows": rows, "outputs": outputs, "tokenizer": tokenizer}


@pytest.mark.parametrize("mode", COUNT_MODES)
def test_each_hard_record_is_written_or_rejected_with_its_file_line_and_reason(runs: dict[str, Any], mode: str) -> None:
    out: Path = runs["outputs"][mode]
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    rejects = {reject["line"]: reject for reject in read_jsonl(out.parent / "x.rejects.jsonl")}
    assert [m["line"] for m in metrics] == list(range(1, len(runs["rows"]) + 1))
    for number, (record, reason) in enumerate(HARD):
        line = 2 * number + 2  # each hard record follows a good one
        row = metrics[line - 1]
        assert row["id"] == record["id"]
        if reason is None:
            assert not row["rejected"] and row["written"] and line not in rejects, row
        else:
            assert row["rejected"] and not row["written"], row
            assert rejects[line]["file"] == str(runs["source"]) and reason in rejects[line]["error"], rejects[line]
            assert reason in row["reason"]
    written = [m for m in metrics if m["written"]]
    assert len(read_jsonl(out)) == len(written) == sum(1 for _, reason in HARD if reason is None) + len(HARD)


@pytest.mark.parametrize("mode", COUNT_MODES)
def test_the_readme_trl_recipe_loads_every_row_written(runs: dict[str, Any], mode: str) -> None:
    """`load_dataset` + `ChatTokens` as the README says; with chat-template counts, each row's
    length is its `compressed_tokens`."""
    import datasets

    out: Path = runs["outputs"][mode]
    loaded = datasets.load_dataset("json", data_files=str(out), split="train")
    prepared = loaded.map(ChatTokens(runs["tokenizer"]), remove_columns=loaded.column_names)
    assert len(prepared) == len(loaded) > 0
    written = [m for m in read_jsonl(out.parent / "x.metrics.jsonl") if m["written"]]
    for row, record, metrics in zip(prepared, loaded, written, strict=True):
        assert any(is_trained(message) for message in messages_of(record))
        assert sum(row["assistant_masks"]) > 0
        if mode == "chat-template":
            assert len(row["input_ids"]) == metrics["compressed_tokens"]


def test_axolotl_tokenizes_every_row_written(runs: dict[str, Any], axolotl: Callable[..., Any]) -> None:
    import datasets

    loaded = datasets.load_dataset("json", data_files=str(runs["outputs"]["values"]), split="train")
    tokenized = axolotl(
        loaded, runs["tokenizer"], sequence_len=4096, field_messages="messages", message_field_training="train"
    )
    assert len(tokenized) == len(loaded)
