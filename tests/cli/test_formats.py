"""Input and output formats through the real command: Parquet, HF datasets, gzip, OpenAI messages."""

from __future__ import annotations

import gzip
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl

BUDGET = ["--summarizer", "extractive", "--target-max-tokens", "3000", "--summary-target-tokens", "300", "-q"]
NOTICE = "\n\nSome of your previous tool responses may be summarized to preserve context."
SUMMARY = "[CONTEXT SUMMARY]:"


def _rows() -> list[dict[str, Any]]:
    """874 to 7562 tokens: the first two are under the 3000 budget, the other three are compressed."""
    return [
        make_trajectory(i, steps=1 + 2 * i, extra={"score": i / 2, "tags": ["agent", f"t{i}"], "meta": {"k": i}})
        for i in range(5)
    ]


def _check_sharegpt_row(before: dict[str, Any], after: dict[str, Any], metrics: dict[str, Any]) -> None:
    """Other columns unchanged; an unchanged row's turns equal; a compressed row is head + summary + tail."""
    assert {k: v for k, v in after.items() if k != "conversations"} == {
        k: v for k, v in before.items() if k != "conversations"
    }
    turns, original = after["conversations"], before["conversations"]
    if not metrics["was_compressed"]:
        assert turns == original
        return
    region = metrics["compression_region"]
    start, end = region["start_idx"], region["end_idx"] + 1
    assert turns[0] == {"from": "system", "value": original[0]["value"] + NOTICE}
    assert turns[1:start] == original[1:start]
    assert turns[start]["from"] == "human" and turns[start]["value"].startswith(SUMMARY)
    assert [t["value"].startswith(SUMMARY) for t in turns].count(True) == 1
    assert turns[start + 1 :] == original[end:]
    assert len(turns) == metrics["compressed_turns"]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("formats") / "in.jsonl", _rows())


@pytest.fixture(scope="module")
def gz_outputs(source: Path) -> tuple[Path, Path]:
    """The same command run twice, into two directories."""
    first, second = source.parent / "a" / "x.jsonl.gz", source.parent / "b" / "x.jsonl.gz"
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda out: run_cli("compress", str(source), "-o", str(out), *BUDGET), (first, second)))
    for result in results:
        assert result.returncode == 0, result.stderr
    return first, second


def _gz_rows(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_parquet_save_to_disk_and_hf_json_inputs_into_one_jsonl(tmp_path: Path) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    plain = write_jsonl(tmp_path / "plain" / "rows.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli(
        "compress", str(tmp_path / "in.parquet"), str(tmp_path / "saved"), "hf:json", "--data-files", str(plain),
        "-o", str(out), *BUDGET,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    outputs = read_jsonl(out)
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    # The three inputs follow each other, each numbered from 1.
    assert [m["index"] for m in metrics] == list(range(15))
    assert [(Path(m["source"]).name, m["line"]) for m in metrics] == [
        (name, line) for name in ("in.parquet", "saved", "hf:json") for line in range(1, 6)
    ]
    assert [row["id"] for row in outputs] == [row["id"] for row in rows] * 3
    assert [m["was_compressed"] for m in metrics] == [False, False, True, True, True] * 3
    for position, (after, m) in enumerate(zip(outputs, metrics, strict=True)):
        _check_sharegpt_row(rows[position % 5], after, m)
    # Three readers, one result.
    assert outputs[0:5] == outputs[5:10] == outputs[10:15]


def test_jsonl_gz_output_is_byte_identical_across_runs(source: Path, gz_outputs: tuple[Path, Path]) -> None:
    first, second = gz_outputs
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes()[4:8] == b"\0\0\0\0", "gzip header mtime must be fixed"
    inputs = source.read_bytes().splitlines()
    with gzip.open(first, "rb") as handle:
        lines = handle.read().splitlines()
    metrics = read_jsonl(first.parent / "x.metrics.jsonl")
    assert len(lines) == len(inputs) == len(metrics)
    for line, original, m in zip(lines, inputs, metrics, strict=True):
        if not m["was_compressed"]:
            assert line == original, "an unchanged row is written byte for byte"
        _check_sharegpt_row(json.loads(original), json.loads(line), m)


def test_parquet_output_carries_columns_and_matches_the_jsonl_rows(source: Path, gz_outputs: tuple[Path, Path]) -> None:
    import pyarrow.parquet as pq

    out = source.parent / "p" / "x.parquet"
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    table = pq.read_table(out)
    assert table.column_names == ["id", "conversations", "score", "tags", "meta"]
    assert table.to_pylist() == _gz_rows(gz_outputs[0])
    metrics = read_jsonl(source.parent / "p" / "x.metrics.jsonl")
    for before, after, m in zip(_rows(), table.to_pylist(), metrics, strict=True):
        _check_sharegpt_row(before, after, m)
    assert sum(m["was_compressed"] for m in metrics) == 3


def test_hf_output_format_is_a_loadable_dataset(source: Path, gz_outputs: tuple[Path, Path]) -> None:
    import datasets

    out = source.parent / "hf" / "ds"
    result = run_cli("compress", str(source), "-o", str(out), "--output-format", "hf", *BUDGET)
    assert result.returncode == 0, result.stderr
    dataset = datasets.load_from_disk(str(out))
    assert isinstance(dataset, datasets.Dataset)
    assert set(dataset.column_names) == {"id", "conversations", "score", "tags", "meta"}
    loaded = list(dataset)
    assert loaded == _gz_rows(gz_outputs[0])
    metrics = read_jsonl(source.parent / "hf" / "ds.metrics.jsonl")
    for before, after, m in zip(_rows(), loaded, metrics, strict=True):
        _check_sharegpt_row(before, after, m)
    assert json.loads((source.parent / "hf" / "ds.report.json").read_text())["rows"]["written"] == 5


def openai_trajectory(index: int, steps: int) -> dict[str, Any]:
    """OpenAI messages: assistant tool_calls (content text or null) answered by tool messages."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Tools: bash."},
        {"role": "user", "content": f"Task {index}: make the tests pass."},
    ]
    for step in range(steps):
        call_id = f"call_{index}_{step}"
        arguments = json.dumps({"command": f"pytest tests/test_m{index}.py -k case{step}"})
        messages.append(
            {
                "role": "assistant",
                "content": None if step % 2 else f"Step {step}.",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}
                ],
            }
        )
        body = "\n".join(f"tests/test_m{index}.py::case{step}_{line} PASSED" for line in range(60))
        messages.append({"role": "tool", "tool_call_id": call_id, "content": body, "weight": 0})
    messages.append({"role": "assistant", "content": "All green.", "weight": 1})
    return {"id": f"oa-{index}", "messages": messages, "meta": {"index": index}}


def _check_tool_messages_follow_their_call(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers a call of the nearest assistant message before it."""
    for position, message in enumerate(messages):
        if message["role"] != "tool":
            continue
        caller = next(m for m in reversed(messages[:position]) if m["role"] != "tool")
        assert caller["role"] == "assistant"
        assert message["tool_call_id"] in {call["id"] for call in caller["tool_calls"]}


def test_openai_and_sharegpt_records_in_one_file_are_written_back_in_their_own_format(tmp_path: Path) -> None:
    records = [
        openai_trajectory(0, steps=6),
        make_trajectory(1, steps=6),
        openai_trajectory(2, steps=1),  # under the budget
        make_trajectory(3, steps=1),
        openai_trajectory(4, steps=9),
    ]
    source = write_jsonl(tmp_path / "mixed.jsonl", records)
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    lines = out.read_bytes().splitlines()
    inputs = source.read_bytes().splitlines()
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    assert [m["was_compressed"] for m in metrics] == [True, True, False, False, True]
    assert not any(m["rejected"] for m in metrics)
    assert lines[2] == inputs[2] and lines[3] == inputs[3]
    _check_sharegpt_row(records[1], json.loads(lines[1]), metrics[1])
    for position in (0, 4):
        before, after, m = records[position], json.loads(lines[position]), metrics[position]
        assert "conversations" not in after
        assert {k: v for k, v in after.items() if k != "messages"} == {
            k: v for k, v in before.items() if k != "messages"
        }
        original, messages = before["messages"], after["messages"]
        start, end = m["compression_region"]["start_idx"], m["compression_region"]["end_idx"] + 1
        assert messages[0] == {"role": "system", "content": original[0]["content"] + NOTICE}
        summary = messages[start]
        assert set(summary) == {"role", "content"}
        assert summary["role"] == "user" and summary["content"].startswith(SUMMARY)
        kept = messages[1:start] + messages[start + 1 :]
        expected = original[1:start] + original[end:]
        # Kept messages are the original objects: same keys, same order, same serialization.
        assert [json.dumps(k) for k in kept] == [json.dumps(e) for e in expected]
        assert len(messages) == m["compressed_turns"]
        _check_tool_messages_follow_their_call(messages)


def test_conversation_key_selects_the_turn_list(tmp_path: Path) -> None:
    decoy = [{"from": "human", "value": "a short decoy"}, {"from": "gpt", "value": "left alone"}]
    records = []
    for i in (0, 2, 4):
        row = make_trajectory(i, steps=1 + 2 * i)
        records.append({"id": row["id"], "trajectory": row["conversations"], "conversations": decoy})
    records.append(make_trajectory(9, steps=5))  # no 'trajectory' key: rejected, written unchanged
    source = write_jsonl(tmp_path / "in.jsonl", records)
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--conversation-key", "trajectory", *BUDGET)
    assert result.returncode == 0, result.stderr
    outputs = read_jsonl(out)
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    assert [m["was_compressed"] for m in metrics] == [False, True, True, False]
    assert [m["original_turns"] for m in metrics[:3]] == [len(r["trajectory"]) for r in records[:3]]
    for before, after, m in zip(records[:3], outputs[:3], metrics[:3], strict=True):
        assert after["conversations"] == decoy
        renamed = {"conversations": before["trajectory"]}
        _check_sharegpt_row(renamed, {"conversations": after["trajectory"]}, m)
    assert metrics[3]["rejected"] and "'trajectory'" in metrics[3]["reason"]
    assert outputs[3] == records[3]


# --- bad input through the real command ---------------------------------------------------------

DEEP = '{"id": "deep", "extra": ' + "[" * 3000 + "]" * 3000 + ', "conversations": []}'
BAD_BUT_JSON = [
    '{"id": "a\\ud800b", "conversations": [{"from": "human", "value": "x"}]}',  # lone surrogate in id
    '{"id": "s", "conversations": [{"from": "human", "value": "a\\ud800b"}]}',  # ... and in a value
    DEEP,
    "null",
    "3",
    '"x"',
    "[]",
]


def test_bad_lines_are_flagged_rejects_and_valid_json_is_written_back_unchanged(tmp_path: Path) -> None:
    """Lone surrogates, 3,000-deep nesting and non-object JSON: each one reject with file:line, the
    line itself back in the dataset byte for byte; a BOM of a later input does not land mid-file."""
    good = [make_trajectory(i, steps=1 + 6 * i) for i in range(2)]
    first = tmp_path / "a.jsonl"
    first.write_text("\n".join([json.dumps(good[0]), *BAD_BUT_JSON, "{not json"]) + "\n")
    second = tmp_path / "b.jsonl"
    second.write_bytes(b"\xef\xbb\xbf" + json.dumps(good[1]).encode() + b"\r\n")
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(first), str(second), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    lines = out.read_bytes().splitlines()
    assert lines[1 : 1 + len(BAD_BUT_JSON)] == [line.encode() for line in BAD_BUT_JSON]
    assert len(lines) == 2 + len(BAD_BUT_JSON)  # every line but the one that is not JSON
    assert not out.read_bytes().count(b"\xef\xbb\xbf")
    assert json.loads(lines[-1]) == good[1] or json.loads(lines[-1])["id"] == good[1]["id"]
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [m["index"] for m in metrics] == list(range(10))
    assert [m["rejected"] for m in metrics] == [False] + [True] * 8 + [False]
    assert [m["written"] for m in metrics] == [True] * 8 + [False, True]
    assert metrics[1]["id"] == "a\\ud800b"  # the lone surrogate written as its escape
    rejects = read_jsonl(out.parent / "x.rejects.jsonl")
    assert [(r["file"], r["line"]) for r in rejects] == [(str(first), n) for n in range(2, 10)]
    assert "surrogate" in rejects[0]["error"] and "nested deeper" in rejects[2]["error"]
    assert "(got null)" in rejects[3]["error"] and "invalid JSON" in rejects[7]["error"]


def test_analyze_reports_bad_lines_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join([json.dumps(make_trajectory(0)), *BAD_BUT_JSON]) + "\n")
    result = run_cli("analyze", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    report = json.loads(result.stdout)
    assert (report["rows"], report["rejected"]) == (1 + len(BAD_BUT_JSON), len(BAD_BUT_JSON))


def _typed_table() -> Any:
    import datetime as dt
    from decimal import Decimal

    import pyarrow as pa

    n = 3
    return pa.table(
        {
            "id": [f"r{i}" for i in range(n)],
            "conversations": [make_trajectory(i, steps=1 + 6 * i)["conversations"] for i in range(n)],
            "blob": pa.array([b"\x00\xffab", None, b""], pa.binary()),
            "price": pa.array([Decimal("12.30"), Decimal("-0.01"), None], pa.decimal128(7, 2)),
            "ts": pa.array(
                [dt.datetime(2024, 5, 1, 12, 0, 0, 123456), None, dt.datetime(1999, 1, 1)], pa.timestamp("us", tz="UTC")
            ),
            "day": pa.array([dt.date(2024, 5, 1)] * n, pa.date32()),
            "meta": pa.array(
                [{"when": dt.datetime(2024, 1, 1), "raw": b"x"}] * n,
                pa.struct([("when", pa.timestamp("ms")), ("raw", pa.binary())]),
            ),
        }
    )


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "hf"])
def test_parquet_binary_decimal_and_timestamp_columns_survive_every_output_format(tmp_path: Path, fmt: str) -> None:
    """Parquet and HF outputs hold the input's Arrow types and values; JSONL holds the documented encoding."""
    import pyarrow.parquet as pq

    table = _typed_table()
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / ("out.jsonl" if fmt == "jsonl" else "out.parquet" if fmt == "parquet" else "out_hf")
    result = run_cli("compress", str(tmp_path / "in.parquet"), "-o", str(out), "--output-format", fmt, *BUDGET)
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(tmp_path / f"{'out_hf' if fmt == 'hf' else 'out'}.metrics.jsonl")
    assert sum(m["was_compressed"] for m in metrics) >= 1
    others = [name for name in table.column_names if name != "conversations"]
    if fmt == "jsonl":
        rows = read_jsonl(out)
        assert [(r["blob"], r["price"], r["ts"], r["day"]) for r in rows] == [
            ("AP9hYg==", "12.30", "2024-05-01T12:00:00.123456+00:00", "2024-05-01"),
            (None, "-0.01", None, "2024-05-01"),
            ("", None, "1999-01-01T00:00:00+00:00", "2024-05-01"),
        ]
        assert rows[0]["meta"] == {"when": "2024-01-01T00:00:00", "raw": "eA=="}
        return
    if fmt == "parquet":
        written = pq.read_table(out)
    else:
        import datasets

        written = datasets.load_from_disk(str(out)).data.table
    assert written.select(others).equals(table.select(others))
    assert written.schema.field("meta").type == table.schema.field("meta").type


def _every_type_table() -> Any:
    import pyarrow as pa

    n = 3
    conversations = [make_trajectory(i, steps=1 + 6 * i)["conversations"] for i in range(n)]
    turn = pa.struct([("from", pa.string()), ("value", pa.string())])
    return pa.table(
        {
            "id": pa.array([f"r{i}" for i in range(n)], pa.large_string()),
            "conversations": pa.array(conversations, pa.list_(turn)),
            "i8": pa.array([1, -2, None], pa.int8()),
            "i32": pa.array([7, 8, 9], pa.int32()),
            "u16": pa.array([0, 65535, 3], pa.uint16()),
            "f32": pa.array([0.5, 1.25, None], pa.float32()),
            "flag": pa.array([True, None, False], pa.bool_()),
            "label": pa.array(["a", "b", "a"]).dictionary_encode(),
            "nothing": pa.array([None, None, None], pa.string()),
            "scores": pa.array([[1, 2], [], None], pa.list_(pa.int16())),
            "pos": pa.array([{"x": 1, "y": 2.5}] * n, pa.struct([("x", pa.int16()), ("y", pa.float32())])),
        }
    )


@pytest.mark.parametrize("fmt", ["parquet", "hf"])
def test_every_parquet_column_type_is_carried_into_columnar_outputs(tmp_path: Path, fmt: str) -> None:
    """Not only binary/decimal/time: int8, int32, uint16, float32, dictionary, all-null, list<int16>
    and struct columns, and the conversation column, come out with the type they came in with."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = _every_type_table()
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / ("out.parquet" if fmt == "parquet" else "out_hf")
    result = run_cli("compress", str(tmp_path / "in.parquet"), "-o", str(out), "--output-format", fmt, *BUDGET)
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(tmp_path / f"{out.stem}.metrics.jsonl")
    assert sum(m["was_compressed"] for m in metrics) >= 1
    if fmt == "parquet":
        written = pq.read_table(out)
    else:
        import datasets

        written = datasets.load_from_disk(str(out)).data.table
    for field in table.schema:
        expected = field.type
        if fmt == "hf" and pa.types.is_dictionary(expected):
            expected = expected.value_type  # `datasets` stores dictionary columns as their values
        assert written.schema.field(field.name).type == expected, field.name
    others = [name for name in table.column_names if name not in {"conversations", "label"}]
    assert written.select(others).to_pylist() == table.select(others).to_pylist()
    assert written.column("label").to_pylist() == ["a", "b", "a"]


def test_a_column_whose_values_no_longer_fit_its_type_is_inferred_without_an_error(tmp_path: Path) -> None:
    """Two inputs giving a column different types, and a float32 column read back from JSONL work
    files: nothing is cut or rounded silently, and the run does not fail."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    conversations = [make_trajectory(i, steps=1)["conversations"] for i in range(2)]
    pq.write_table(pa.table({"conversations": conversations, "x": pa.array([1, 2], pa.int8())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"conversations": conversations, "x": pa.array([1.5, 2.5])}), tmp_path / "b.parquet")
    out = tmp_path / "out.parquet"
    result = run_cli("compress", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    assert pq.read_table(out).column("x").to_pylist() == [1, 2, 1.5, 2.5]


@pytest.mark.parametrize("output", ["x.parquet", "x_hf"])
def test_an_id_column_of_ints_and_strings_is_written_as_strings_and_the_user_told(tmp_path: Path, output: str) -> None:
    """Issue 20 F19: tau-bench's `task_id` (int in one file, str in the next) became Arrow JSON text,
    which pandas reads as '"48"'. Now a string column ("0", "48"), and one warning line names it."""
    first = write_jsonl(tmp_path / "tau.jsonl", [make_trajectory(i, extra={"task_id": i}) for i in range(2)])
    second = write_jsonl(tmp_path / "tau2.jsonl", [make_trajectory(9, extra={"task_id": "48"})])
    out = tmp_path / "out" / output
    flags = ["--output-format", "hf"] if output == "x_hf" else []
    result = run_cli("compress", str(first), str(second), "-o", str(out), *BUDGET, *flags)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"warning: columns stored with another type in {out}: task_id as text (numbers and strings mixed)"
    ]
    if output == "x.parquet":
        import pyarrow.parquet as pq

        assert pq.read_table(out).column("task_id").to_pylist() == ["0", "1", "48"]
        pandas = pytest.importorskip("pandas")
        assert pandas.read_parquet(out)["task_id"].tolist() == ["0", "1", "48"]
    else:
        import datasets

        assert datasets.load_from_disk(str(out))["task_id"] == ["0", "1", "48"]
