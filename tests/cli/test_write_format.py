"""`--write-format` through the real command: both ways, every output format, resume, merge, eval."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_formats import openai_trajectory
from tests.conftest import read_jsonl, run_cli, write_jsonl
from tests.write.agent_rows import airline_row, long_airline_row, openai_row, swe_row
from trajectory_compressor.read.convert_format import convert_record
from trajectory_compressor.read.formats import detect_format, to_turns

BUDGET = ["--summarizer", "extractive", "--target-max-tokens", "1500", "--summary-target-tokens", "200", "-q"]
SUMMARY = "[CONTEXT SUMMARY]:"
REJECT = '{"conversations": [{"from": "robot", "value": "beep"}]}'


def _lines() -> list[Any]:
    return [
        long_airline_row(0, 12),  # compressed
        airline_row(),  # unchanged, converted
        openai_row(),  # already messages: byte for byte
        REJECT,  # valid JSON, invalid record: written unchanged
        "{broken",  # not JSON: only in the rejects file
        swe_row(),  # unchanged, converted; ends on a call with no response
        long_airline_row(1, 3),
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One input, run as read and with --write-format messages."""
    root = tmp_path_factory.mktemp("write_format")
    source = write_jsonl(root / "in.jsonl", _lines())
    for name, extra in (("plain", []), ("messages", ["--write-format", "messages"])):
        result = run_cli("compress", str(source), "-o", str(root / name / "x.jsonl"), *BUDGET, *extra)
        assert result.returncode == 0, result.stderr
    return root


def _converted(line: bytes, write_format: str) -> Any:
    record = json.loads(line)
    return convert_record(record, detect_format(record), write_format)


def test_sharegpt_rows_come_out_as_messages_and_the_rest_as_they_came(runs: Path) -> None:
    inputs = (runs / "in.jsonl").read_bytes().splitlines()
    plain = (runs / "plain" / "x.jsonl").read_bytes().splitlines()
    converted = (runs / "messages" / "x.jsonl").read_bytes().splitlines()
    metrics = read_jsonl(runs / "messages" / "x.metrics.jsonl")
    assert [m["index"] for m in metrics] == list(range(7)), "every input row, once, in order"
    assert [m["was_compressed"] for m in metrics] == [True, False, False, False, False, False, False]
    assert len(plain) == len(converted) == 6  # the line that is not JSON is in no dataset
    # The rows in their own format, and the valid-JSON reject, are the input's bytes.
    assert converted[2] == plain[2] == inputs[2]
    assert converted[3] == plain[3] == inputs[3] == REJECT.encode()
    for index in (0, 1, 4, 5):  # every other row: the run as read, converted
        row = json.loads(converted[index])
        assert row == _converted(plain[index], "messages")
        assert "conversations" not in row and isinstance(row["tools"], str)
        to_turns(row, detect_format(row))  # the reader takes it back
    compressed = json.loads(converted[0])["messages"]
    summaries = [m for m in compressed if m["role"] == "user" and m["content"].startswith(SUMMARY)]
    assert len(summaries) == 1
    assert compressed[2]["tool_calls"][1]["id"] == "c2" and compressed[2]["train"] is True
    metrics_plain = read_jsonl(runs / "plain" / "x.metrics.jsonl")
    assert metrics == metrics_plain, "the metrics count the rows as read, whatever their written format"
    report = json.loads((runs / "messages" / "x.report.json").read_text())
    assert report["settings"]["write_format"] == "messages"


def test_openai_rows_come_out_as_sharegpt(tmp_path: Path) -> None:
    rows = [openai_trajectory(i, steps=2 + 6 * i) for i in range(3)] + [airline_row()]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    for name, extra in (("plain", []), ("sharegpt", ["--write-format", "sharegpt"])):
        result = run_cli("compress", str(source), "-o", str(tmp_path / name / "x.jsonl"), *BUDGET, *extra)
        assert result.returncode == 0, result.stderr
    plain = (tmp_path / "plain" / "x.jsonl").read_bytes().splitlines()
    converted = (tmp_path / "sharegpt" / "x.jsonl").read_bytes().splitlines()
    assert sum(m["was_compressed"] for m in read_jsonl(tmp_path / "sharegpt" / "x.metrics.jsonl")) == 2
    assert converted[3] == source.read_bytes().splitlines()[3]  # already ShareGPT
    for index in range(3):
        row = json.loads(converted[index])
        assert row == _converted(plain[index], "sharegpt")
        assert list(row) == ["id", "conversations", "meta"]
        assert all(turn["from"] != "tool" or turn["weight"] == 0 for turn in row["conversations"])
    # Read back as input, the ShareGPT output is the same conversations as the messages it came from.
    again = run_cli("compress", str(tmp_path / "sharegpt" / "x.jsonl"), "-o", str(tmp_path / "back" / "x.jsonl"))
    assert again.returncode == 0, again.stderr
    back = read_jsonl(tmp_path / "back" / "x.jsonl")
    assert back == [json.loads(line) for line in converted]


def _without_nulls(value: Any) -> Any:
    """A columnar file has no 'missing': absent keys come back as null. Drop them to compare."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.fixture(scope="module")
def sharegpt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ShareGPT rows only (as a training set is), written as messages JSON Lines."""
    root = tmp_path_factory.mktemp("columnar")
    rows = [long_airline_row(0, 12), airline_row(), swe_row(), long_airline_row(1, 3), airline_row(8, padding=3)]
    source = write_jsonl(root / "in.jsonl", rows)
    result = run_cli("compress", str(source), "-o", str(root / "x.jsonl"), "--write-format", "messages", *BUDGET)
    assert result.returncode == 0, result.stderr
    return root


def test_jsonl_gz_holds_the_same_lines(runs: Path) -> None:
    out = runs / "gz" / "x.jsonl.gz"
    result = run_cli("compress", str(runs / "in.jsonl"), "-o", str(out), "--write-format", "messages", *BUDGET)
    assert result.returncode == 0, result.stderr
    with gzip.open(out, "rb") as handle:
        assert handle.read() == (runs / "messages" / "x.jsonl").read_bytes()


@pytest.mark.parametrize("fmt", ["parquet", "hf"])
def test_columnar_outputs_hold_the_messages_as_typed_columns(sharegpt_run: Path, fmt: str) -> None:
    out = sharegpt_run / fmt / "x"
    source = str(sharegpt_run / "in.jsonl")
    result = run_cli("compress", source, "-o", str(out), "--output-format", fmt, "--write-format", "messages", *BUDGET)
    assert result.returncode == 0, result.stderr
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(out)
        loaded, schema = table.to_pylist(), table.schema
    else:
        import datasets

        dataset = datasets.load_from_disk(str(out))
        loaded, schema = list(dataset), dataset.features.arrow_schema
    # The trainers' shape: a list of message structs, string content, string arguments and tools.
    message = schema.field("messages").type.value_type
    assert str(message.field("content").type) == "string"
    call = message.field("tool_calls").type.value_type
    assert str(call.field("function").type) == "struct<name: string, arguments: string>"
    assert str(schema.field("tools").type) == "string"
    assert [_without_nulls(row) for row in loaded] == [_without_nulls(r) for r in read_jsonl(sharegpt_run / "x.jsonl")]


def _run_process(source: Path, out: Path, *extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "trajectory_compressor", "compress", str(source), "-o", str(out), *BUDGET]
    full_env = {**os.environ, "TC_CHECKPOINT_ROWS": "10", "TC_CHECKPOINT_SECONDS": "1e9", **env}
    return subprocess.run(
        [*command, "--window", "4", *extra], env=full_env, capture_output=True, text=True, timeout=300
    )


def test_the_write_format_is_part_of_the_resume_fingerprint(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [long_airline_row(i, 2 + i % 9) for i in range(40)])
    out, reference = tmp_path / "out" / "x.jsonl", tmp_path / "ref" / "x.jsonl"
    assert run_cli("compress", str(source), "-o", str(reference), *BUDGET, "--write-format", "messages").returncode == 0
    killed = _run_process(source, out, "--write-format", "messages", env={"TC_CRASH_AT": "checkpoint-renamed:2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    other = run_cli("compress", str(source), "-o", str(out), *BUDGET)  # as read: another fingerprint
    assert other.returncode == 2 and "--no-resume" in other.stderr
    resumed = run_cli("compress", str(source), "-o", str(out), *BUDGET[:-1], "--write-format", "messages")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr
    for name in ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl"):
        assert (out.parent / name).read_bytes() == (reference.parent / name).read_bytes(), name


def test_merged_shards_equal_the_unsharded_run_and_mixed_write_formats_are_refused(runs: Path) -> None:
    source, root = runs / "in.jsonl", runs / "shards"
    for index in range(2):
        shard = ["--num-shards", "2", "--shard-index", str(index), "--write-format", "messages"]
        result = run_cli("compress", str(source), "-o", str(root / "x.jsonl"), *BUDGET, *shard)
        assert result.returncode == 0, result.stderr
    reports = [str(root / f"x.shard-0000{i}-of-00002.report.json") for i in range(2)]
    merged = run_cli("merge", *reports, "-o", str(root / "merged" / "x.jsonl"))
    assert merged.returncode == 0, merged.stderr
    assert (root / "merged" / "x.jsonl").read_bytes() == (runs / "messages" / "x.jsonl").read_bytes()
    as_read = ["--num-shards", "2", "--shard-index", "1"]
    mixed = run_cli("compress", str(source), "-o", str(runs / "mixed" / "x.jsonl"), *BUDGET, *as_read)
    assert mixed.returncode == 0, mixed.stderr
    refused = run_cli(
        "merge", reports[0], str(runs / "mixed" / "x.shard-00001-of-00002.report.json"), "-o", str(root / "m2.jsonl")
    )
    assert refused.returncode == 2 and "settings differ: write_format 'messages' -> null" in refused.stderr


def test_the_yaml_key_sets_it_and_a_bad_value_is_one_line(runs: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("output: {write_format: messages}\n")
    out = tmp_path / "yaml" / "x.jsonl"
    result = run_cli("compress", str(runs / "in.jsonl"), "-o", str(out), "--config", str(config), *BUDGET)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == (runs / "messages" / "x.jsonl").read_bytes()
    bad = run_cli("compress", str(runs / "in.jsonl"), "-o", str(tmp_path / "bad.jsonl"), "--write-format", "chatml")
    assert bad.returncode == 2
    assert "chatml" in bad.stderr and "Traceback" not in bad.stderr


def test_eval_scores_a_converted_output_whose_head_tool_turn_was_split(runs: Path) -> None:
    result = run_cli("eval", str(runs / "messages" / "x.jsonl"), "--input", str(runs / "in.jsonl"), "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    [output] = scores.get("outputs", [scores])
    assert output["problems"] == [] and output["compressed"] == 1


def test_hf_chat_rejects_a_record_it_cannot_write_for_the_trainer_and_other_formats_keep_it(tmp_path: Path) -> None:
    """`"tools": "not json"` is the record's own data as read, but no tools a chat template takes:
    with hf-chat the row is rejected with file, line and reason (as `--count-mode chat-template`
    rejects it), not written for TRL's recipe to fail on; every other row goes on."""
    good = {"id": "good", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
    source = write_jsonl(tmp_path / "in.jsonl", [good, {**good, "id": "bad", "tools": "not json"}, good])
    runs = {}
    for name, extra in (("as-read", []), ("hf-chat", ["--write-format", "hf-chat"])):
        runs[name] = run_cli("compress", str(source), "-o", str(tmp_path / name / "x.jsonl"), *BUDGET, *extra)
        assert runs[name].returncode == 0, runs[name].stderr
    assert (tmp_path / "as-read" / "x.jsonl").read_bytes() == source.read_bytes()
    assert not any(m["rejected"] for m in read_jsonl(tmp_path / "as-read" / "x.metrics.jsonl"))
    metrics = read_jsonl(tmp_path / "hf-chat" / "x.metrics.jsonl")
    assert [(m["line"], m["rejected"], m["written"]) for m in metrics] == [
        (1, False, True),
        (2, True, False),
        (3, False, True),
    ]
    [reject] = read_jsonl(tmp_path / "hf-chat" / "x.rejects.jsonl")
    assert (reject["file"], reject["line"]) == (str(source), 2)
    assert reject["error"].startswith("'tools' is not valid JSON") and "hf-chat" in reject["error"]
    assert f"{source}:2: 'tools' is not valid JSON" in runs["hf-chat"].stderr
    assert len(read_jsonl(tmp_path / "hf-chat" / "x.jsonl")) == 2
