"""A row's dataset line with a write format: converted when the format differs, exact values kept."""

from __future__ import annotations

import json
from typing import Any

from tests.write.agent_rows import airline_row, openai_row
from trajectory_compressor.read.convert_format import WriteShape, convert_record
from trajectory_compressor.read.formats import detect_format
from trajectory_compressor.read.jsonl import parse_record
from trajectory_compressor.types import KeptTurn, NewTurn, SourceRecord, Turn
from trajectory_compressor.write.records import rewritten_bytes, unchanged_bytes


def _item(record: dict[str, Any], raw: bytes | None = None) -> SourceRecord:
    raw = raw if raw is not None else json.dumps(record).encode()
    return parse_record("in.jsonl", 1, raw)


def test_an_unchanged_row_in_its_own_format_is_its_bytes_and_in_the_other_format_converted() -> None:
    raw = json.dumps(airline_row(), indent=None, separators=(", ", ": ")).encode()
    item = _item(airline_row(), raw)
    fmt = detect_format(item.record)
    assert unchanged_bytes(item, fmt, WriteShape(None)) == raw
    assert unchanged_bytes(item, fmt, WriteShape("sharegpt")) == raw
    assert json.loads(unchanged_bytes(item, fmt, WriteShape("messages"))) == convert_record(
        airline_row(), fmt, "messages"
    )
    openai = _item(openai_row())
    assert unchanged_bytes(openai, detect_format(openai.record), WriteShape("messages")) == openai.raw


def test_integers_beyond_64_bits_survive_the_conversion_of_unchanged_and_rewritten_rows() -> None:
    turns = b'[{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]'
    raw = b'{"conversations": ' + turns + b', "seed": 123456789012345678901234567890}'
    item = _item({}, raw)
    fmt = detect_format(item.record)
    assert b'"seed":123456789012345678901234567890' in unchanged_bytes(item, fmt, WriteShape("messages"))
    layout = [KeptTurn(0), NewTurn(Turn("human", "[CONTEXT SUMMARY]: said hi")), KeptTurn(1)]
    line = rewritten_bytes(item, fmt, layout, WriteShape("messages"))
    assert b'"seed":123456789012345678901234567890' in line
    assert json.loads(line)["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "[CONTEXT SUMMARY]: said hi"},
        {"role": "assistant", "content": "yo"},
    ]
