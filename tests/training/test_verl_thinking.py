"""`MarkedMultiTurnSFTDataset` follows veRL's own thinking switch, not only `apply_chat_template_kwargs`.

veRL 0.9.1 turns thinking off per row from an `enable_thinking` column, else from
`data.enable_thinking_default` (multiturn_sft_dataset.py:110-111, 172-176, 293-298), and passes it
to the template beside `apply_chat_template_kwargs` (:210-212). The subclass built its rows from
`apply_chat_template_kwargs` alone: set veRL's way, Qwen3's empty think block (the prompt a
model without thinking is given) was trained, where `ChatTokens(tokenizer, enable_thinking=False)`
(the TRL recipe) leaves it to the header.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.trainers.ownership import assert_loss_covers, token_owners
from trajectory_compressor.training import ChatTokens, is_trained, messages_of, tools_of

pytestmark = pytest.mark.trainers

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}]
MESSAGES = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Read /a."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "read", "arguments": {"path": "/a"}}}],
        "train": True,
    },
    {"role": "tool", "tool_call_id": "c0", "content": "A"},
    {"role": "user", "content": "And?"},
    {"role": "assistant", "content": "It holds A.", "train": True},
]


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("switch", ["default", "column", "kwargs"])
def test_verl_without_thinking_masks_as_chat_tokens_without_thinking(
    switch: str, chat_tokenizer: Callable[..., Any], verl: Callable[..., Any], tmp_path: Path
) -> None:
    from omegaconf import OmegaConf

    from trajectory_compressor.training.verl import MarkedMultiTurnSFTDataset

    tokenizer = chat_tokenizer("qwen3")
    record: dict[str, Any] = {"messages": [json.dumps(m) for m in MESSAGES], "tools": json.dumps(TOOLS)}
    config: dict[str, Any] = {"pad_mode": "no_padding", "max_length": 4096, "truncation": "error"}
    if switch == "default":
        config["enable_thinking_default"] = False
    elif switch == "column":
        record["enable_thinking"] = False
    else:
        config["apply_chat_template_kwargs"] = {"enable_thinking": False}
    path = _parquet(tmp_path / "rows.parquet", [record])
    item = MarkedMultiTurnSFTDataset(str(path), tokenizer, OmegaConf.create(config))[0]
    ids, mask = item["input_ids"].tolist(), item["loss_mask"].tolist()

    hf_record = {"messages": MESSAGES, "tools": json.dumps(TOOLS)}
    expected = ChatTokens(tokenizer, enable_thinking=False).row(hf_record)
    assert ids == expected.input_ids
    assert mask == expected.assistant_masks
    messages = messages_of(hf_record)
    plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
    ownership = token_owners(plain, tools_of(hf_record), tokenizer, ids, enable_thinking=False)
    labels = [token if flag else -100 for token, flag in zip(ids, mask, strict=True)]
    assert_loss_covers(ownership, labels, [i for i, m in enumerate(messages) if is_trained(m)], trailer="trained")
    learned = tokenizer.decode([token for token, flag in zip(ids, mask, strict=True) if flag])
    assert "<think>" not in learned and learned.endswith("It holds A.<|im_end|>\n"), learned
