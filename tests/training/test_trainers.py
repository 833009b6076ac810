"""The README's training recipes, run with the trainers' own code on a real multi-source output.

One `compress --windows --write-format hf-chat --count-mode chat-template` run over the bundled
sample runs and another agent's OpenAI runs (other keys, other tools, JSON-text arguments,
several results per call, foreign marks) is loaded as each recipe says, and checked token by
token: every record loads, the loss is on the marked assistant turns and nothing else, every
tool call renders once as an object, and the trainer counts what the metrics say.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_cli, write_jsonl
from tests.trainers.ownership import assert_loss_covers, render, token_owners
from tests.trainers.rendered_calls import assert_calls_are_objects
from tests.training.multi_source import multi_source_rows
from trajectory_compressor.training import ChatTokens, is_trained, messages_of, tools_of, write_llamafactory
from trajectory_compressor.training.llamafactory import DATASET_INFO

pytestmark = pytest.mark.trainers

TARGET = 3000


def windows_outputs(source: Path, tokenizer: Path) -> dict[str, Path]:
    """`compress --windows --write-format hf-chat --count-mode chat-template` of `source` with the
    saved `tokenizer` (its folder) at `TARGET`, as JSON Lines and as Parquet, beside `source`."""
    flags = [
        "--windows", "--write-format", "hf-chat", "--count-mode", "chat-template", "--tokenizer", str(tokenizer),
        "--target-max-tokens", str(TARGET), "--summary-target-tokens", "300", "--summarizer", "extractive", "-q",
    ]  # fmt: skip
    outputs = {}
    for suffix in ("jsonl", "parquet"):
        out = source.parent / suffix / f"x.{suffix}"
        result = run_cli("compress", str(source), "-o", str(out), *flags)
        assert result.returncode == 0, result.stderr
        outputs[suffix] = out
    return outputs


@pytest.fixture(scope="module")
def run(chat_tokenizer: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The output of one windows run (JSON lines and Parquet), its metrics, its input, its tokenizer."""
    tmp = tmp_path_factory.mktemp("trainers")
    tokenizer = chat_tokenizer("qwen2.5")
    tokenizer.save_pretrained(tmp / "qwen")
    rows = multi_source_rows()
    outputs = windows_outputs(write_jsonl(tmp / "in.jsonl", rows), tmp / "qwen")
    return {
        "rows": rows,
        "jsonl": outputs["jsonl"],
        "parquet": outputs["parquet"],
        "metrics": read_jsonl(tmp / "jsonl" / "x.metrics.jsonl"),
        "tokenizer": tokenizer,
        "tmp": tmp,
    }


def _loaded(run: dict[str, Any], kind: str = "jsonl") -> Any:
    import datasets

    builder = "json" if kind == "jsonl" else "parquet"
    return datasets.load_dataset(builder, data_files=str(run[kind]), split="train")


def test_datasets_loads_every_record_of_a_multi_source_output_with_exact_messages(run: dict[str, Any]) -> None:
    lines = read_jsonl(run["jsonl"])
    assert len(lines) == len(run["metrics"]) > len(run["rows"])
    for kind in ("jsonl", "parquet"):
        loaded = _loaded(run, kind)
        assert loaded.column_names == ["messages", "tools", "metadata"]
        assert len(loaded) == len(lines)
        for line, record in zip(lines, loaded, strict=True):
            # Each message comes back with exactly its own keys, each call's arguments with theirs.
            assert record["messages"] == line["messages"]
            assert record["tools"] == line["tools"] and json.loads(record["metadata"]) == json.loads(line["metadata"])
    # Every key of every source is kept: under metadata, with the window.
    first_openai = next(json.loads(line["metadata"]) for line in lines if "task_id" in json.loads(line["metadata"]))
    assert {"task_id", "reward", "agent", "window"} <= set(first_openai)


def test_only_assistant_turns_carry_marks_and_each_is_trained_once_verbatim(run: dict[str, Any]) -> None:
    lines = read_jsonl(run["jsonl"])
    trained_by_row: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        window = json.loads(line["metadata"])["window"]
        for message in line["messages"]:
            assert ("train" in message) == (message["role"] == "assistant"), message
            if message.get("train") is True:
                trained_by_row.setdefault(window["input_index"], []).append(message)
    for index, row in enumerate(run["rows"]):
        expected = [m for m in messages_of(row) if m["role"] == "assistant"]
        # Verbatim but for a ShareGPT call's id, which comes from its result: a window that ends
        # on the call (its result shown by the next window) gives it a generated one.
        assert [_without_ids(m) for m in expected] == [_without_ids(m) for m in trained_by_row[index]]


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    calls = [{k: v for k, v in call.items() if k != "id"} for call in message.get("tool_calls") or ()]
    return {**message, "tool_calls": calls, "train": True}


def test_trl_trains_exactly_the_marked_turns_and_counts_what_the_metrics_say(
    run: dict[str, Any], trl_sft: Callable[..., Any]
) -> None:
    tokenizer = run["tokenizer"]
    loaded = _loaded(run)
    prepared = loaded.map(ChatTokens(tokenizer), remove_columns=loaded.column_names)
    sft = trl_sft(prepared, tokenizer, run["tmp"] / "trl", max_length=TARGET, train=True)
    assert sft.train_loss is not None
    assert len(sft.rows) == len(loaded), "TRL kept every window"
    for record, row, metrics in zip(loaded, sft.rows, run["metrics"], strict=True):
        assert len(row.input_ids) == metrics["compressed_tokens"] <= TARGET
        messages = messages_of(record)
        plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
        ownership = token_owners(plain, tools_of(record), tokenizer, row.input_ids)
        trained = [i for i, message in enumerate(messages) if is_trained(message)]
        assert trained, "every window trains a turn"
        assert_loss_covers(ownership, row.labels, trained, trailer="trained")


@pytest.mark.parametrize("template", ["qwen2.5", "qwen3", "deepseek-v3.1", "llama3.1-style"])
def test_every_tool_call_renders_once_as_an_object_through_the_real_templates(
    run: dict[str, Any], chat_tokenizer: Callable[..., Any], template: str
) -> None:
    tokenizer = chat_tokenizer(template)
    for record in _loaded(run).select(range(0, len(run["metrics"]), 3)):
        messages = [{k: v for k, v in m.items() if k != "train"} for m in record["messages"]]
        calls = sum(len(m.get("tool_calls") or ()) for m in messages)
        if template == "llama3.1-style" and any(len(m.get("tool_calls") or ()) > 1 for m in messages):
            continue  # Llama 3.1's template refuses parallel calls ("only supports single tool-calls")
        text = render(messages, tools_of(record), tokenizer)
        assert_calls_are_objects(text, template, calls)


def test_axolotl_trains_exactly_the_marked_turns(run: dict[str, Any], axolotl: Callable[..., Any]) -> None:
    tokenizer = run["tokenizer"]
    loaded = _loaded(run).select(range(0, len(run["metrics"]), 4))
    tokenized = axolotl(
        loaded, tokenizer, sequence_len=TARGET, field_messages="messages", message_field_training="train"
    )
    assert len(tokenized) == len(loaded)
    for record, row in zip(loaded, tokenized, strict=True):
        messages = messages_of(record)
        plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
        ownership = token_owners(plain, tools_of(record), tokenizer, row["input_ids"])
        trained = [i for i, message in enumerate(messages) if is_trained(message)]
        assert_loss_covers(ownership, row["labels"], trained, trailer="untrained")


def test_verl_with_the_marked_dataset_loads_every_window_and_masks_exactly_the_marks(
    run: dict[str, Any], verl: Callable[..., Any]
) -> None:
    from omegaconf import OmegaConf

    from trajectory_compressor.training.verl import MarkedMultiTurnSFTDataset

    tokenizer = run["tokenizer"]
    config = OmegaConf.create({"pad_mode": "no_padding", "max_length": TARGET, "truncation": "error"})
    dataset = MarkedMultiTurnSFTDataset(str(run["parquet"]), tokenizer, config)
    loaded = _loaded(run, "parquet")
    assert len(dataset) == len(loaded)
    for index in range(0, len(dataset), 3):
        item, record = dataset[index], loaded[index]
        ids, mask = item["input_ids"].tolist(), item["loss_mask"].tolist()
        assert len(ids) == run["metrics"][index]["compressed_tokens"]
        messages = messages_of(record)
        plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
        ownership = token_owners(plain, tools_of(record), tokenizer, ids)
        labels = [token if flag else -100 for token, flag in zip(ids, mask, strict=True)]
        assert_loss_covers(ownership, labels, [i for i, m in enumerate(messages) if is_trained(m)], trailer="trained")


def test_llamafactory_takes_at_least_as_many_samples_as_from_the_uncompressed_input(
    run: dict[str, Any], llamafactory: Callable[..., Any], chat_tokenizer: Callable[..., Any]
) -> None:
    tmp = run["tmp"]
    compressed = write_llamafactory(_loaded(run), tmp / "lf" / "compressed.jsonl") if _mkdir(tmp / "lf") else 0
    uncompressed = write_llamafactory(run["rows"], tmp / "lf" / "uncompressed.jsonl")
    results = {}
    for name in ("compressed", "uncompressed"):
        rows = llamafactory(
            tmp / "lf" / f"{name}.jsonl", DATASET_INFO, chat_tokenizer("qwen2.5"), tmp / "lf" / name,
            mask_history=True, cutoff_len=1 << 20,
        )  # fmt: skip
        results[name] = rows
    assert len(results["compressed"]) == compressed and len(results["uncompressed"]) == uncompressed
    accepted = {name: sum(row.accepted for row in rows) / len(rows) for name, rows in results.items()}
    # Compression adds no rejection (the input's own rejections, a run opening on an assistant
    # turn, stay: LLaMA-Factory wants the user's side first).
    assert accepted["compressed"] >= accepted["uncompressed"], accepted
    tokenizer = chat_tokenizer("qwen2.5")
    for row in [row for row in results["compressed"] if row.input_ids is not None][:40]:
        trained = row.trained_text(tokenizer)
        assert len(trained) == 1 and trained[0].endswith("<|im_end|>\n"), trained  # the last turn only


def _mkdir(path: Path) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return True
