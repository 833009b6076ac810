"""The trainer recipes of the README, on a real `--windows` output loaded with `datasets`:
each shape loads, and each trains every assistant turn of the input exactly once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.training import last_turn_samples, loss_mask, messages_of, prompt_completion

TOOLS = json.dumps([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}])


@pytest.fixture(scope="module", params=["sharegpt", "messages"])
def windows_output(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    tmp = tmp_path_factory.mktemp(f"windows-{request.param}")
    rows = [make_trajectory(i, steps=5 + 3 * i, output_lines=30, extra={"tools": TOOLS}) for i in range(4)]
    source = write_jsonl(tmp / "in.jsonl", rows)
    out = tmp / "out" / "x.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--windows", "--summarizer", "extractive",
        "--target-max-tokens", "2500", "--summary-target-tokens", "300", "--write-format", request.param,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out, rows


def _assistant_texts(rows: list[Any]) -> list[str]:
    return [messages_of(row)[i]["content"] or "" for row in rows for i in _assistants(messages_of(row))]


def _assistants(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "assistant"]


def _dataset(path: Path):  # type: ignore[no-untyped-def]
    import datasets

    return datasets.load_dataset("json", data_files=str(path), split="train")


def test_axolotl_reads_the_train_field_of_each_message(windows_output: tuple[Path, list[Any]]) -> None:
    out, rows = windows_output
    records = read_jsonl(out)
    loaded = _dataset(out)
    key = "messages" if "messages" in loaded.column_names else "conversations"
    assert len(loaded) == len(records)
    # axolotl (type: chat_template, message_field_training: train) trains a message iff its field is true
    trained = [
        (m.get("content") if key == "messages" else m["value"])
        for example in loaded
        for m in example[key]
        if m.get("train") is True
    ]
    originals = [t["value"] for row in rows for t in row["conversations"] if t["from"] == "gpt"]
    if key == "conversations":
        assert trained == originals
    else:
        assert len(trained) == len(originals)


def test_trl_prompt_completion_trains_each_assistant_turn_once(windows_output: tuple[Path, list[Any]]) -> None:
    out, rows = windows_output
    examples = _dataset(out).map(prompt_completion, remove_columns=_dataset(out).column_names)
    assert set(examples.column_names) == {"prompt", "completion", "tools"}
    completed = [m for example in examples for m in example["completion"] if m["role"] == "assistant"]
    assert len(completed) == sum(t["from"] == "gpt" for row in rows for t in row["conversations"])
    for example in examples:
        assert example["completion"][0]["role"] == "assistant"
        assert all(m["role"] != "assistant" or "train" not in m or m["train"] is None for m in example["prompt"])
        assert json.loads(example["tools"])[0]["function"]["name"] == "bash"


def test_verl_gets_one_mask_flag_per_message(windows_output: tuple[Path, list[Any]]) -> None:
    out, rows = windows_output
    total = 0
    for record in read_jsonl(out):
        mask = loss_mask(record)
        messages = messages_of(record)
        assert len(mask) == len(messages)
        assert all(messages[i]["role"] == "assistant" for i, flag in enumerate(mask) if flag)
        total += sum(mask)
    assert total == sum(t["from"] == "gpt" for row in rows for t in row["conversations"])


def test_llama_factory_samples_end_on_each_trained_turn(windows_output: tuple[Path, list[Any]]) -> None:
    out, rows = windows_output
    samples = [sample for record in read_jsonl(out) for sample in last_turn_samples(record)]
    assert len(samples) == sum(t["from"] == "gpt" for row in rows for t in row["conversations"])
    assert all(sample["messages"][-1]["role"] == "assistant" for sample in samples)
    import datasets

    loaded = datasets.Dataset.from_list(samples)
    assert set(loaded.column_names) == {"messages", "tools"}
