"""Fuzzing the input side: JSONL files mixing good trajectories with every kind of bad line.

Whatever the lines, a run must end normally (exit 0, no internal error) and account for every
non-blank line exactly once, in order: a metrics line per input line (`index` 0, 1, 2..., `line`
the input line number); every line that is valid JSON in the dataset, unchanged (or compressed
when it is a good trajectory); every line that is not JSON in the rejects file with its line
number and nowhere in the dataset. `analyze` reads the same files without an error.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import make_trajectory, read_jsonl, run_cli
from trajectory_compressor.api import compress
from trajectory_compressor.commands.analyze import analyze_sources
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.settings import PlanConfig, RunConfig, with_values

BOM = b"\xef\xbb\xbf"
TARGET = 600


def _good(i: int) -> bytes:
    return json.dumps(make_trajectory(i, steps=1 + 2 * (i % 4), output_lines=8)).encode()


# Pieces of text agents' tool outputs hold that the summarizers' scanners (credential rules that
# read escapes decoded, tool-call markup) take apart: an emoji as `json.dumps` escapes it
# (`\ud83d\ude00`) once stopped every run that summarized it.
TEXT_PIECES = [
    "\\ud83d", "\\ude00", "\\ud800", "\\u003d", "\\n", "\\\\n", '\\"', "\\", "\x00", "\u2028", "😀", "İ",
    "sk-", "ghp_", "password=", "Bearer ", "-----BEGIN RSA PRIVATE KEY-----", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<think>", '{"name": "bash", "arguments": ', "}", "[", '"', " ", "\n",
    "src/a.py:12", "Error: boom", "exit code: 1",
]  # fmt: skip
_tool_text = st.lists(st.sampled_from(TEXT_PIECES), max_size=12).map("".join)


def _good_with_text(i: int, text: str) -> bytes:
    """A good trajectory whose tool outputs each carry `text`: it is summarized, not protected."""
    record = make_trajectory(i, steps=5, output_lines=8)
    for turn in record["conversations"]:
        if turn["from"] == "tool":
            turn["value"] = turn["value"].replace("PASSED", f"PASSED {text}", 2)
    return json.dumps(record).encode()


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)

FIXED_BAD = [
    b'{"id": "a\\ud800b", "conversations": [{"from": "human", "value": "x"}]}',
    b'{"id": "s", "conversations": [{"from": "human", "value": "a\\udfffb"}]}',
    b'{"id": "k", "conversations": [], "\\ud800": 1}',
    b"null",
    b"3",
    b'"x"',
    b"[]",
    b"true",
    b"NaN",
    b'{"id": 123456789012345678901234567890, "conversations": [{"from": "human", "value": "hi"}]}',
    b'{"conversations": [{"from": "human", "value": 1e999}]}',
    b"\xff\xfe{}",
    b'{"id": "\xc3\x28"}',
    b"{",
    b'{"a": 1,}',
    b"\x00",
]


def _deep(depth: int, balanced: bool) -> bytes:
    return b'{"id": "d", "x": ' + b"[" * depth + b"]" * (depth - (0 if balanced else 1)) + b"}"


def _wrong_types(value: Any, where: int) -> bytes:
    if where == 0:
        record: Any = {"id": "w", "conversations": value}
    elif where == 1:
        record = {"id": "w", "conversations": [{"from": "human", "value": value}]}
    elif where == 2:
        record = {"id": "w", "messages": [{"role": value, "content": "x"}]}
    elif where == 4:  # a ShareGPT role of any type: a list or an object once crashed the run
        record = {"id": "w", "conversations": [{"from": value, "value": "x"}]}
    elif where == 5:  # record fields beside the turns, of any type, on a row long enough to compress
        record = {**make_trajectory(3, steps=5, output_lines=8), "id": value, "tools": value, "system": value}
    elif where in (6, 7, 8):  # an OpenAI tool call's id / arguments, a tool message's name, of any type
        record = _openai_run(value, where)
    else:
        record = {"id": "w", "messages": [{"role": "assistant", "content": None, "tool_calls": value}]}
    return json.dumps(record).encode()


def _openai_run(value: Any, where: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for step in range(4):
        call = {"id": f"c{step}", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
        if where == 6:
            call["id"] = value
        elif where == 7:
            call["function"]["arguments"] = value
        result = {"role": "tool", "tool_call_id": f"c{step}", "content": "\n".join(["output line"] * 30)}
        if where == 8:
            result["name"] = value
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]}, result]
    return {"id": "o", "messages": [*messages, {"role": "assistant", "content": "done"}]}


LINES = st.one_of(
    st.integers(0, 7).map(_good),
    st.builds(_good_with_text, st.integers(0, 7), _tool_text),
    st.sampled_from(FIXED_BAD),
    st.builds(_deep, st.integers(500, 3000), st.booleans()),
    st.builds(_wrong_types, _json_values, st.integers(0, 8)),
    _json_values.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=30).filter(lambda raw: b"\n" not in raw and b"\r" not in raw),
    st.sampled_from([b"", b"   ", b"\t"]),
)


def _is_json(raw: bytes) -> bool:
    """An oracle independent of the reader: the standard library, with room for deep nesting."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        json.loads(text)
    except ValueError:
        return False
    finally:
        sys.setrecursionlimit(limit)
    return True


def _check_run(path: Path, lines: list[bytes], out_dir: Path, counter: Any) -> None:
    messages: list[str] = []
    config = RunConfig(
        summarizer="extractive", plan=PlanConfig(target_max_tokens=TARGET, summary_target_tokens=100), quiet=True
    )
    out = out_dir / "x.jsonl"
    (result,) = compress(
        [str(path)], out, with_values(config, "output", resume=False), counter=counter, on_message=messages.append
    )
    assert result.exit_code in (0, 4), (result.message, messages)
    assert not any("internal error" in m or "Traceback" in m for m in messages), messages

    records = [(number, raw) for number, raw in enumerate(lines, start=1) if raw.strip()]
    metrics = read_jsonl(out_dir / "x.metrics.jsonl")
    # Exit 4 when, and only when, every row read was rejected (the outputs hold nothing compressed).
    assert (result.exit_code == 4) == (bool(metrics) and all(m["rejected"] for m in metrics)), result.message
    assert [m["index"] for m in metrics] == list(range(len(records)))
    assert [m["line"] for m in metrics] == [number for number, _ in records]
    data = out.read_bytes().splitlines()
    rejects = {r["line"]: r for r in read_jsonl(out_dir / "x.rejects.jsonl")}
    written = iter(data)
    for (number, raw), row in zip(records, metrics, strict=True):
        if not _is_json(raw):
            assert row["rejected"] and not row["written"], (number, raw, row)
            assert number in rejects and rejects[number]["file"] == str(path)
            continue
        assert row["written"], (number, raw, row)
        line = next(written)
        if row["was_compressed"]:
            assert json.loads(line)["id"] == json.loads(raw)["id"]
        else:
            assert line == raw, (number, raw, line)
        assert row["rejected"] == (number in rejects)
    assert next(written, None) is None  # nothing else in the dataset
    event(f"rows compressed: {any(m['was_compressed'] for m in metrics)}")
    event(f"valid-JSON rejects: {any(m['rejected'] and m['written'] for m in metrics)}")
    assert all(not r["rejected"] or r["line"] in rejects for r in metrics)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(lines=st.lists(LINES, min_size=1, max_size=10), bom=st.booleans(), crlf=st.booleans())
def test_every_line_of_a_fuzzed_file_is_accounted_for(counter: Any, lines: list[bytes], bom: bool, crlf: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_bytes((BOM if bom else b"") + b"".join(raw + (b"\r\n" if crlf else b"\n") for raw in lines))
        # A BOM at the very start of the file is dropped, as documented, even when it is the
        # first line's own bytes (then that line is read without it).
        read = list(lines)
        if not bom and read[0].startswith(BOM):
            read[0] = read[0][len(BOM) :]
        _check_run(path, read, Path(tmp) / "out", counter)
        analysis = analyze_sources(expand_inputs([str(path)]), RunConfig(), counter)
        assert analysis.rows == sum(1 for raw in read if raw.strip())


def test_the_command_survives_every_kind_of_bad_line(tmp_path: Path) -> None:
    lines = [_good(5), *FIXED_BAD, _deep(3000, True), _deep(3000, False), b"", _good(6)]
    path = tmp_path / "in.jsonl"
    path.write_bytes(BOM + b"\r\n".join(lines) + b"\r\n")
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli(
        "compress",
        str(path),
        "-o",
        str(out),
        "--summarizer",
        "extractive",
        "--target-max-tokens",
        str(TARGET),
        "--summary-target-tokens",
        "100",
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [m["line"] for m in metrics] == [n for n, raw in enumerate(lines, start=1) if raw.strip()]
    expected = [raw for raw in lines if raw.strip() and _is_json(raw)]
    data = out.read_bytes().splitlines()
    assert len(data) == len(expected) and any(m["was_compressed"] for m in metrics)
    assert [d for d, m in zip(data, [m for m in metrics if m["written"]], strict=True) if not m["was_compressed"]] == [
        raw for raw, m in zip(expected, [m for m in metrics if m["written"]], strict=True) if not m["was_compressed"]
    ]


def test_on_reject_drop_leaves_bad_records_out_of_the_dataset_so_datasets_loads_it(tmp_path: Path) -> None:
    """Kept (the default), a record that is valid JSON but no trajectory (`{"foo": 1}`, `[1, 2]`,
    `"conversations": "x"`) makes `load_dataset("json")` fail on the file; `--on-reject drop`
    leaves it out of the dataset, still in the rejects file and the metrics, in order."""
    from datasets import load_dataset

    lines = [_good(1), b'{"foo": 1}', b"[1, 2]", b'{"conversations": "x"}', b"not json", _good(2)]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    results = {}
    for policy in ("keep", "drop"):
        out = tmp_path / policy / "x.jsonl"
        results[policy] = run_cli("compress", str(path), "-o", str(out), "--on-reject", policy)
        assert results[policy].returncode == 0, results[policy].stderr
    kept, dropped = (tmp_path / "keep" / "x.jsonl"), (tmp_path / "drop" / "x.jsonl")
    assert kept.read_bytes().splitlines() == [lines[0], *lines[1:4], lines[5]]
    assert "3 bad records (valid JSON) are in the dataset unchanged" in results["keep"].stderr
    assert dropped.read_bytes().splitlines() == [lines[0], lines[5]]
    assert "are in the dataset unchanged" not in results["drop"].stderr
    assert len(load_dataset("json", data_files=str(dropped))["train"]) == 2
    metrics = read_jsonl(tmp_path / "drop" / "x.metrics.jsonl")
    assert [(m["line"], m["rejected"], m["written"]) for m in metrics] == [
        (1, False, True), (2, True, False), (3, True, False), (4, True, False), (5, True, False), (6, False, True)
    ]  # fmt: skip
    assert [r["line"] for r in read_jsonl(tmp_path / "drop" / "x.rejects.jsonl")] == [2, 3, 4, 5]
    report = json.loads((tmp_path / "drop" / "x.report.json").read_text())
    assert report["rows"]["rejected"] == 4 and report["rows"]["rejected_in_data"] == 0


def test_a_dry_run_says_no_bad_record_is_in_a_dataset_it_does_not_write(tmp_path: Path) -> None:
    lines = [_good(1), b'{"foo": 1}', _good(2)]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "dry" / "x.jsonl"
    result = run_cli("compress", str(path), "-o", str(out), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "in the dataset unchanged" not in result.stderr and not out.exists()
    report = json.loads((tmp_path / "dry" / "x.report.json").read_text())
    assert report["rows"]["rejected_in_data"] == 0 and report["rows"]["written"] == 0
    assert not any(m["written"] for m in read_jsonl(tmp_path / "dry" / "x.metrics.jsonl"))
