"""An input's `"train": false` on an assistant turn, through `--windows` and the trainers' own code.

One `compress --windows --write-format hf-chat --count-mode chat-template` run over runs whose
assistant turns are partly marked `"train": false` (ShareGPT and OpenAI messages), loaded as
docs/trainers.md says and checked token by token with TRL, axolotl and veRL: no token of such a
turn carries loss in any window, every other marked turn does, and each window trains a turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.cli.test_formats import openai_trajectory
from tests.conftest import make_trajectory, read_jsonl, write_jsonl
from tests.trainers.ownership import assert_loss_covers, token_owners
from tests.training.test_trainers import TARGET, windows_outputs
from trajectory_compressor.read.formats import detect_format, to_turns
from trajectory_compressor.training import ChatTokens, is_trained, messages_of, tools_of

pytestmark = pytest.mark.trainers


def _marked_false(row: dict[str, Any], every: int) -> dict[str, Any]:
    """`row` with every `every`-th assistant message (from the second) marked `"train": false`."""
    key = detect_format(row).key
    assistant = [i for i, m in enumerate(row[key]) if m.get("from", m.get("role")) in ("gpt", "assistant")]
    marked = set(assistant[1::every])
    return {**row, key: [{**m, "train": False} if i in marked else m for i, m in enumerate(row[key])]}


def _assistant_texts(record: dict[str, Any]) -> list[str]:
    """Each assistant turn's text as the reader reads it: the same in the input and in hf-chat."""
    return [turn.value for turn in to_turns(record, detect_format(record)) if turn.role == "gpt"]


@pytest.fixture(scope="module")
def run(chat_tokenizer: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("untrained")
    tokenizer = chat_tokenizer("qwen2.5")
    tokenizer.save_pretrained(tmp / "qwen")
    rows = [
        _marked_false(make_trajectory(1, steps=12, output_lines=25), 3),
        _marked_false(openai_trajectory(2, steps=12), 4),
    ]
    untrained = {
        text
        for row in rows
        for text, message in zip(_assistant_texts(row), _assistant_messages(row), strict=True)
        if message.get("train") is False
    }
    outputs = windows_outputs(write_jsonl(tmp / "in.jsonl", rows), tmp / "qwen")
    return {"rows": rows, "untrained": untrained, "tokenizer": tokenizer, "tmp": tmp, **outputs}


def _assistant_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    key = detect_format(record).key
    return [m for m in record[key] if m.get("from", m.get("role")) in ("gpt", "assistant")]


def _loaded(run: dict[str, Any], kind: str = "jsonl") -> Any:
    import datasets

    return datasets.load_dataset("json" if kind == "jsonl" else "parquet", data_files=str(run[kind]), split="train")


def _untrained_positions(record: dict[str, Any], untrained: set[str]) -> list[int]:
    """Positions, among `messages_of(record)`, of the assistant turns the input marked false."""
    messages = messages_of(record)
    texts = iter(_assistant_texts({"messages": messages}))
    return [i for i, m in enumerate(messages) if m["role"] == "assistant" and next(texts) in untrained]


def _check(
    record: dict[str, Any], untrained: set[str], tokenizer: Any, ids: list[int], labels: list[int], trailer: Any
) -> list[int]:
    """Loss exactly on the record's marked turns, none on an input-untrained one; its untrained positions."""
    messages = messages_of(record)
    trained = [i for i, message in enumerate(messages) if is_trained(message)]
    assert trained, "every window trains a turn"
    positions = _untrained_positions(record, untrained)
    assert not set(positions) & set(trained)
    plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
    ownership = token_owners(plain, tools_of(record), tokenizer, ids)
    assert_loss_covers(ownership, labels, trained, trailer=trailer)
    for position in positions:  # spelled out: not one token of such a turn carries loss
        owned = [p for p, owner in enumerate(ownership.owners) if owner == position]
        assert owned and all(labels[p] == -100 for p in owned)
    return positions


def test_the_output_shows_the_untrained_turns_as_context_and_trains_the_rest_once(run: dict[str, Any]) -> None:
    lines = read_jsonl(run["jsonl"])
    assert len(lines) > 2 * len(run["rows"]), "the rows are split"
    trained = [
        text
        for line in lines
        for text, message in zip(_assistant_texts(line), _assistant_messages(line), strict=True)
        if message["train"]
    ]
    expected = [t for row in run["rows"] for t in _assistant_texts(row) if t not in run["untrained"]]
    assert trained == expected
    shown = {t for line in lines for t in _assistant_texts(line)} & run["untrained"]
    assert shown == run["untrained"]


def test_trl_puts_no_loss_on_an_untrained_turn(run: dict[str, Any], trl_sft: Callable[..., Any]) -> None:
    tokenizer = run["tokenizer"]
    loaded = _loaded(run)
    prepared = loaded.map(ChatTokens(tokenizer), remove_columns=loaded.column_names)
    sft = trl_sft(prepared, tokenizer, run["tmp"] / "trl", max_length=TARGET)
    assert len(sft.rows) == len(loaded), "TRL kept every window"
    seen = 0
    for record, row in zip(loaded, sft.rows, strict=True):
        seen += len(_check(record, run["untrained"], tokenizer, row.input_ids, row.labels, "trained"))
    assert seen >= len(run["untrained"])


def test_axolotl_puts_no_loss_on_an_untrained_turn(run: dict[str, Any], axolotl: Callable[..., Any]) -> None:
    tokenizer = run["tokenizer"]
    loaded = _loaded(run)
    tokenized = axolotl(
        loaded, tokenizer, sequence_len=TARGET, field_messages="messages", message_field_training="train"
    )
    assert len(tokenized) == len(loaded)
    seen = 0
    for record, row in zip(loaded, tokenized, strict=True):
        seen += len(_check(record, run["untrained"], tokenizer, row["input_ids"], row["labels"], "untrained"))
    assert seen >= len(run["untrained"])


def test_verl_puts_no_loss_on_an_untrained_turn(run: dict[str, Any], verl: Callable[..., Any]) -> None:
    from omegaconf import OmegaConf

    from trajectory_compressor.training.verl import MarkedMultiTurnSFTDataset

    tokenizer = run["tokenizer"]
    config = OmegaConf.create({"pad_mode": "no_padding", "max_length": TARGET, "truncation": "error"})
    dataset = MarkedMultiTurnSFTDataset(str(run["parquet"]), tokenizer, config)
    loaded = _loaded(run, "parquet")
    assert len(dataset) == len(loaded)
    seen = 0
    for index in range(len(dataset)):
        item, record = dataset[index], loaded[index]
        ids, mask = item["input_ids"].tolist(), item["loss_mask"].tolist()
        labels = [token if flag else -100 for token, flag in zip(ids, mask, strict=True)]
        seen += len(_check(record, run["untrained"], tokenizer, ids, labels, "trained"))
    assert seen >= len(run["untrained"])
