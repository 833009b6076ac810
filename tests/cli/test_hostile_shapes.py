"""Hostile input shapes through the real commands: each one once stopped a run with an internal error.

Every test feeds one shape to the command a user would run and checks the promise of README
"Bad input": the run ends normally, every row is accounted for, and nothing is an internal error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread

BUDGET = ("--target-max-tokens", "600", "--summary-target-tokens", "100", "-q")


def _no_internal_error(result: object) -> None:
    text = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert result.returncode == 0, text  # type: ignore[attr-defined]
    assert "internal error" not in text and "Traceback" not in text, text


def _rows_with_escaped_emoji(count: int) -> list[dict[str, object]]:
    """Agent runs whose tool outputs print JSON the way `json.dumps` does: an emoji as `\\ud83d\\ude00`."""
    rows = [make_trajectory(i, steps=6, output_lines=20) for i in range(count)]
    for row in rows:
        for turn in row["conversations"]:
            if turn["from"] == "tool":
                turn["value"] = turn["value"].replace("PASSED", 'PASSED {"msg": "ok \\ud83d\\ude00 \\ud800"}')
    return rows


@pytest.mark.parametrize(
    "flags",
    [(), ("--prune-tool-outputs", "--prune-min-chars", "50"), ("--windows",)],
    ids=["extractive", "prune", "windows"],
)
def test_a_json_escaped_emoji_in_a_tool_output_is_compressed(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Redaction reads escapes decoded; each half of an escaped UTF-16 pair became a lone
    surrogate, which the literal matcher could not encode: every compression run stopped."""
    source = write_jsonl(tmp_path / "in.jsonl", _rows_with_escaped_emoji(2))
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", *BUDGET, *flags)
    _no_internal_error(result)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert metrics and all(m["written"] and not m["rejected"] for m in metrics)
    assert any(m["was_compressed"] or "window" in m for m in metrics)


def _rows_with_deep_json(count: int) -> list[dict[str, object]]:
    """Tool outputs and call arguments holding JSON 1000 levels deep (orjson parses 1024)."""
    deep = "[" * 1000 + "]" * 1000
    rows = [make_trajectory(i, steps=6, output_lines=20) for i in range(count)]
    for row in rows:
        for turn in row["conversations"]:
            if turn["from"] == "tool":
                turn["value"] = f"<tool_response>\n{deep}\n</tool_response>\n" + "line\n" * 30
            elif "<tool_call>" in turn["value"]:
                call = '{"name": "bash", "arguments": {"command": ' + deep + "}}"
                turn["value"] = f"Run it.\n<tool_call>\n{call}\n</tool_call>"
    return rows


@pytest.mark.parametrize(
    "flags",
    [("compress", "--summarizer", "extractive"),
     ("compress", "--summarizer", "extractive", "--write-format", "messages"),
     ("requests", "--model", "m")],
    ids=["extractive", "write-messages", "requests"],
)  # fmt: skip
def test_json_nested_1000_deep_in_tool_text_is_read_as_text(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Walking it recursed past Python's limit: RecursionError stopped every such run."""
    source = write_jsonl(tmp_path / "in.jsonl", _rows_with_deep_json(2))
    command, *rest = flags
    out = tmp_path / "out" / ("x.jsonl" if command == "compress" else "requests.jsonl")
    result = run_cli(command, str(source), "-o", str(out), *rest, *BUDGET)
    _no_internal_error(result)
    if command == "compress":
        metrics = read_jsonl(out.parent / "x.metrics.jsonl")
        assert [m["rejected"] for m in metrics] == [False, False] and all(m["was_compressed"] for m in metrics)


def test_a_json_escaped_emoji_is_in_the_requests_file(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", _rows_with_escaped_emoji(2))
    out = tmp_path / "requests.jsonl"
    result = run_cli("requests", str(source), "-o", str(out), "--model", "m", *BUDGET)
    _no_internal_error(result)
    assert len(read_jsonl(out)) == 2


def test_a_reply_body_with_an_escaped_lone_surrogate_is_a_failed_reply_not_the_end_of_the_run(
    tmp_path: Path,
) -> None:
    """The reply is not JSON a parser accepts; quoting it in the error once went through the
    same redaction and stopped the run. The row now takes the failure policy (extractive)."""
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=6, output_lines=20) for i in range(2)])
    body = b'{"choices": [{"message": {"content": "ab\\ud800cd summary"}}]}'
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(faults=[{"body": body}] * 8) as server:
        result = run_cli(
            "compress", str(source), "-o", str(out), "--summarizer", "llm", "--base-url", server.base_url,
            "--model", "m", "--no-cache", "--max-retries", "1", "--retry-delay", "0", *BUDGET,
            env={"OPENAI_API_KEY": "sk-test-key-123456"},
        )  # fmt: skip
    _no_internal_error(result)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [m["summarizer"] for m in metrics] == ["extractive", "extractive"]
    assert all("not valid JSON" in m["last_error"] for m in metrics)


def test_a_valid_line_with_a_5000_digit_integer_is_written_unchanged_and_flagged(tmp_path: Path) -> None:
    huge = json.dumps(make_trajectory(1, steps=6, output_lines=20))[:-1] + ', "n": ' + "9" * 5000 + "}"
    source = write_jsonl(tmp_path / "in.jsonl", [huge, make_trajectory(2, steps=6, output_lines=20)])
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", *BUDGET)
    _no_internal_error(result)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [(m["rejected"], m["written"]) for m in metrics] == [(True, True), (False, True)]
    assert out.read_text().splitlines()[0] == huge
    assert "set_int_max_str_digits" not in result.stderr


def test_a_parquet_row_with_a_timestamp_past_year_9999_is_rejected_and_the_rest_compressed(tmp_path: Path) -> None:
    conversations = [make_trajectory(i, steps=6, output_lines=20)["conversations"] for i in range(3)]
    turn = pa.struct([("from", pa.string()), ("value", pa.string())])
    when = pa.array([0, 253402300800 * 1000, 1], pa.timestamp("ms"))
    pq.write_table(
        pa.table({"conversations": pa.array(conversations, pa.list_(turn)), "when": when}), tmp_path / "t.parquet"
    )
    out = tmp_path / "out" / "x.parquet"
    result = run_cli("compress", str(tmp_path / "t.parquet"), "-o", str(out), "--summarizer", "extractive", *BUDGET)
    _no_internal_error(result)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [(m["line"], m["rejected"]) for m in metrics] == [(1, False), (2, True), (3, False)]
    (reject,) = read_jsonl(out.parent / "x.rejects.jsonl")
    assert reject["line"] == 2 and "out of range" in reject["error"]
    assert pq.read_table(out).num_rows == 2


def test_a_parquet_map_column_is_carried_into_an_hf_output(tmp_path: Path) -> None:
    import datasets

    conversations = [make_trajectory(i, steps=6, output_lines=20)["conversations"] for i in range(2)]
    turn = pa.struct([("from", pa.string()), ("value", pa.string())])
    meta = pa.array([[("k", "v")], None], pa.map_(pa.string(), pa.string()))
    pq.write_table(
        pa.table({"conversations": pa.array(conversations, pa.list_(turn)), "meta": meta}), tmp_path / "t.parquet"
    )
    out = tmp_path / "out_hf"
    result = run_cli(
        "compress",
        str(tmp_path / "t.parquet"),
        "-o",
        str(out),
        "--output-format",
        "hf",
        "--summarizer",
        "extractive",
        *BUDGET,
    )
    _no_internal_error(result)
    assert datasets.load_from_disk(str(out))["meta"] == [[["k", "v"]], None]


def test_the_fake_server_sends_a_body_of_the_tests_making(tmp_path: Path) -> None:
    """The `body` action the shapes above rely on: its bytes arrive as given."""
    import urllib.request

    with FakeServerThread(faults=[{"body": {"choices": "x", "n": 10**30}}]) as server:
        request = urllib.request.Request(server.base_url + "/chat/completions", data=b"{}", method="POST")
        with urllib.request.urlopen(request) as response:
            assert json.loads(response.read()) == {"choices": "x", "n": 10**30}


def _a_bug(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug the shapes above did not find")


class _WrappedError(Exception):
    """As Ray raises a worker's error: its text holds the worker's traceback, `cause` the error."""

    def __init__(self) -> None:
        super().__init__("ray::Write() (pid=1)\n  File 'x.py', line 1\nValueError: part")
        self.cause = ValueError("cannot mix list and non-list values\nmore detail")


def _a_wrapped_bug(*args: object, **kwargs: object) -> None:
    raise _WrappedError


def test_a_bug_wrapped_by_ray_is_named_by_its_cause_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TC_DEBUG", raising=False)
    monkeypatch.setattr("trajectory_compressor.cli.build_config", _a_wrapped_bug)
    result = run_cli("analyze", "in.jsonl")
    assert result.returncode == 1
    assert result.stderr == (
        "error: internal error ValueError: cannot mix list and non-list values (TC_DEBUG=1 shows the traceback)\n"
    )


@pytest.mark.parametrize(
    ("command", "patched"),
    [
        (("analyze", "in.jsonl"), "trajectory_compressor.cli.build_config"),
        (("requests", "in.jsonl", "-o", "r.jsonl"), "trajectory_compressor.cli.build_config"),
        (("eval", "out.jsonl", "-i", "in.jsonl"), "trajectory_compressor.cli.build_config"),
        (("merge", "x.report.json", "-o", "m.jsonl"), "trajectory_compressor.commands.merge.merge_shards"),
    ],
    ids=["analyze", "requests", "eval", "merge"],
)
def test_a_bug_in_any_command_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...], patched: str
) -> None:
    """`compress` said an unexpected error in one line; the other commands printed a traceback.
    The bug is stood in for by a function that raises (no input reaches one any more)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TC_DEBUG", raising=False)
    monkeypatch.setattr(patched, _a_bug)
    result = run_cli(*command)
    assert result.returncode == 1
    assert result.stderr == (
        "error: internal error RuntimeError: a bug the shapes above did not find (TC_DEBUG=1 shows the traceback)\n"
    )
    monkeypatch.setenv("TC_DEBUG", "1")
    with pytest.raises(RuntimeError, match="a bug the shapes above"):
        run_cli(*command)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TC_CHECKPOINT_ROWS", "abc"),
        ("TC_CHECKPOINT_ROWS", "0"),
        ("TC_CHECKPOINT_SECONDS", "nan"),
        ("TC_CHECKPOINT_SECONDS", "-1"),
    ],
)
def test_a_checkpoint_interval_that_is_no_positive_number_is_one_line_naming_it(
    tmp_path: Path, variable: str, value: str
) -> None:
    """The documented checkpoint variables were read with int()/float(): "abc" was an internal
    error, and 0 or NaN a run that checkpointed after every row or never by time."""
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(1, steps=2)])
    result = run_cli(
        "compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"), "--summarizer", "extractive", "-q",
        env={variable: value},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {variable} must be a positive ") and result.stderr.count("\n") == 1
    assert repr(value) in result.stderr


def test_a_rejected_rows_reason_quotes_its_input_with_credentials_masked(tmp_path: Path) -> None:
    """The reason names what was wrong (`unknown role '...'`) and is written to the metrics, the
    rejects list, the report and stderr: a credential in the quoted value is masked there."""
    secret = "Pw1rejAAAA0090"
    bad = {"conversations": [{"from": f"DB_PASSWORD={secret}", "value": "hi"}, {"from": "gpt", "value": "x"}]}
    source = write_jsonl(tmp_path / "in.jsonl", [bad, make_trajectory(1)])
    out = tmp_path / "out.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive")
    assert result.returncode == 0, result.stderr
    [first, _] = read_jsonl(tmp_path / "out.metrics.jsonl")
    assert first["reason"].startswith("turn 0: unknown role 'DB_PASSWORD=[REDACTED]'")
    [listed] = read_jsonl(tmp_path / "out.rejects.jsonl")  # the raw row is there for the user to mend
    assert "[REDACTED]" in listed["error"] and secret not in listed["error"] and secret in listed["raw"]
    written = [path.read_text() for path in tmp_path.glob("out.*") if path.suffixes[0] not in (".jsonl", ".rejects")]
    assert written and not any(secret in text for text in [*written, result.stdout, result.stderr])
