"""Which write formats' metrics `ChatTokens` counts: `hf-chat` and `messages`, not ShareGPT's text.

`ChatTokens` reads any record through `view.messages_of`, which turns a ShareGPT row's Hermes
markup into structured calls and results. `--count-mode chat-template` counts a ShareGPT row as a
ShareGPT trainer renders it: each value the text it holds, `<tool_call>` blocks and result
objects (ids included) as text. Its docstring said the count was the metrics' "for the same
tokenizer, template and write format"; on 41 public agent runs the ShareGPT metrics are 0.6 to 9.7 %
over `ChatTokens`' count of the same rows. The claim now names the formats it holds for.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_cli, write_jsonl
from tests.write.agent_rows import airline_row, swe_row
from trajectory_compressor.training import ChatTokens

pytestmark = pytest.mark.trainers


def test_chat_tokens_counts_the_metrics_of_hf_chat_and_messages_but_not_sharegpt_text(
    chat_tokenizer: Callable[..., Any], tmp_path: Path
) -> None:
    tokenizer = chat_tokenizer("qwen2.5")
    tokenizer.save_pretrained(tmp_path / "qwen")
    source = write_jsonl(tmp_path / "in.jsonl", [airline_row(), swe_row()])
    chat_tokens = ChatTokens(tokenizer)
    lengths = {}
    for write_format in ("hf-chat", "messages", "sharegpt"):
        out = tmp_path / write_format / "x.jsonl"
        result = run_cli(
            "compress", str(source), "-o", str(out), "--write-format", write_format, "--count-mode",
            "chat-template", "--tokenizer", str(tmp_path / "qwen"), "--summarizer", "extractive", "-q",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        metrics = [m["compressed_tokens"] for m in read_jsonl(out.with_name("x.metrics.jsonl"))]
        ours = [len(chat_tokens.row(record).input_ids) for record in read_jsonl(out)]
        lengths[write_format] = (ours, metrics)
    for write_format in ("hf-chat", "messages"):
        ours, metrics = lengths[write_format]
        assert ours == metrics, write_format
    ours, metrics = lengths["sharegpt"]
    assert ours == lengths["hf-chat"][0]  # the same view of the same rows
    assert all(counted > read for read, counted in zip(ours, metrics, strict=True)), (ours, metrics)
