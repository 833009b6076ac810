"""Preparing a chunk: a row that cannot be counted in bounded memory is rejected with its reason,
and the chunk's other rows are counted as if it were not there."""

from __future__ import annotations

import json
from typing import Any

import pytest
import tokenizers
from tokenizers import pre_tokenizers

from tests.conftest import make_trajectory
from tests.count.chat_fixtures import family_tokenizer
from trajectory_compressor.count import ChatTemplateCounter, TokenCounter, text_pieces
from trajectory_compressor.count import chat_template as chat_template_module
from trajectory_compressor.count.named_templates import read_chat_template
from trajectory_compressor.count.tokenizer import bundled_tokenizer_dir
from trajectory_compressor.run.prepare import PreparedRow, RejectedRow, ValidRow, prepare_rows
from trajectory_compressor.settings import PlanConfig, ReadConfig
from trajectory_compressor.types import SourceRecord

PLAN = PlanConfig(target_max_tokens=2500, summary_target_tokens=200)


def _prepare(counter: TokenCounter, records: list[dict[str, Any]]) -> list[PreparedRow]:
    items = [
        (index, index + 1, SourceRecord("mem.jsonl", index + 1, record, json.dumps(record).encode()))
        for index, record in enumerate(records)
    ]
    return prepare_rows(items, counter, PLAN, notice_tokens=0, skip_under_target=True, reading=ReadConfig())


def _with_tool_output(index: int, output: str) -> dict[str, Any]:
    record = make_trajectory(index, steps=3, output_lines=5)
    record["conversations"][3]["value"] = output
    return record


def _alone(counter: TokenCounter, record: dict[str, Any]) -> list[int]:
    [row] = _prepare(counter, [record])
    assert isinstance(row, ValidRow)
    return row.token_counts


def _error(row: PreparedRow) -> str:
    assert isinstance(row, RejectedRow), f"{row.label} was not rejected"
    return row.error


def _valid(row: PreparedRow) -> ValidRow:
    assert isinstance(row, ValidRow), f"{row.label} was rejected: {getattr(row, 'error', '')}"
    return row


def test_a_value_with_no_exact_cut_rejects_its_row_and_the_others_are_counted(counter: TokenCounter) -> None:
    digits = "7" * (text_pieces.MAX_PIECE_CHARS + 200_000)  # digits go by threes from the run's start: no cut
    records = [make_trajectory(0, steps=3), _with_tool_output(1, digits), make_trajectory(2, steps=4)]
    rows = _prepare(counter, records)
    assert _error(rows[1]).startswith("too large to count: a text of 1,248,576 characters has no place to cut")
    assert _valid(rows[0]).token_counts == _alone(counter, records[0])
    assert _valid(rows[2]).token_counts == _alone(counter, records[2])


def test_a_tokenizer_that_cannot_be_cut_rejects_a_value_over_the_largest_piece() -> None:
    bare = tokenizers.Tokenizer.from_file(str(bundled_tokenizer_dir() / "tokenizer.json"))
    bare.pre_tokenizer = pre_tokenizers.Metaspace()
    counter = TokenCounter(bare, name="metaspace")
    long_value = "word " * (text_pieces.MAX_PIECE_CHARS // 5 + 10)
    rows = _prepare(counter, [_with_tool_output(0, long_value), make_trajectory(1, steps=3)])
    assert _error(rows[0]).startswith("too large to count: a text of 1,048,625 characters is over 1,048,576")
    assert "Metaspace pre-tokenizer marks the start of the text" in _error(rows[0])
    _valid(rows[1])


def test_a_chat_over_the_chat_template_limit_is_rejected_unrendered(monkeypatch: pytest.MonkeyPatch) -> None:
    tokenizer = family_tokenizer("deepseek", read_chat_template("deepseek-v3.1"))
    counter = ChatTemplateCounter(tokenizer)
    records = [make_trajectory(0, steps=3), _with_tool_output(1, "log line\n" * 3_000), make_trajectory(2, steps=3)]
    expected = [_alone(counter, records[0]), _alone(counter, records[2])]
    monkeypatch.setattr(chat_template_module, "MAX_CHAT_CHARS", 20_000)
    rendered: list[int] = []  # the characters of each chat rendered
    render = counter.renderer.render

    def spy(messages: Any, tools: Any) -> Any:
        rendered.append(sum(len(str(message.get("content"))) for message in messages))
        return render(messages, tools)

    monkeypatch.setattr(counter.renderer, "render", spy)
    rows = _prepare(counter, records)
    assert _error(rows[1]).startswith("too large for --count-mode chat-template: its messages and tools hold")
    assert "over 20,000" in _error(rows[1]) and "--count-mode values" in _error(rows[1])
    assert [_valid(rows[0]).token_counts, _valid(rows[2]).token_counts] == expected
    assert rendered and max(rendered) < 20_000, "the large chat is never rendered"
