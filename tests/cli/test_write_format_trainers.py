"""A `--write-format messages` output (OpenAI's shape: arguments as JSON text) loads with `datasets`.

What a trainer then renders is checked on the trainers' shape, ``hf-chat``, with their own code and
the real chat templates (`tests/training/test_trainers.py`): rendered as they are, these JSON-text
arguments would be double-encoded by Qwen's, Llama's and DeepSeek's ``arguments | tojson``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_cli, write_jsonl
from tests.write.agent_rows import AIRLINE_TOOLS, SWE_TOOLS, airline_row, long_airline_row, swe_row

BUDGET = ["--summarizer", "extractive", "--target-max-tokens", "1500", "--summary-target-tokens", "200", "-q"]


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trainers")
    rows = [long_airline_row(0, 12), airline_row(), swe_row(), long_airline_row(1, 3)]
    source = write_jsonl(root / "in.jsonl", rows)
    for out in ("x.jsonl", "y.parquet"):  # two outputs, two stems: one stem would share the side files
        result = run_cli("compress", str(source), "-o", str(root / out), "--write-format", "messages", *BUDGET)
        assert result.returncode == 0, result.stderr
    return root


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
