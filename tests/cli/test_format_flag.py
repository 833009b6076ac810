"""`--format sharegpt|openai` and `--conversation-key` on mixed and ambiguous inputs.

README: conversations are ShareGPT (`conversations` of `from`/`value`) or OpenAI (`messages` of
`role`/`content`), "detected per record or set with `--format` / `--conversation-key`, and are
written back in the format they came in"; a record whose turns lack `from`/`value` (or an
unknown role) is a bad record: reported with file and line, in the rejects file, flagged in the
metrics and written unchanged. So forcing a format makes records of the other format rejects,
and on a record holding both lists it picks which one is compressed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_formats import BUDGET, SUMMARY, _check_sharegpt_row, openai_trajectory
from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl


def _run(tmp_path: Path, records: list[Any], *flags: str) -> tuple[list[bytes], list[bytes], list[dict], str]:
    source = write_jsonl(tmp_path / "in.jsonl", records)
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), *[a for a in BUDGET if a != "-q"], *flags)
    assert "Traceback" not in result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert result.returncode == (4 if all(m["rejected"] for m in metrics) else 0), result.stderr  # 4: every row
    return source.read_bytes().splitlines(), out.read_bytes().splitlines(), metrics, result.stderr


def _mixed() -> list[dict[str, Any]]:
    return [make_trajectory(0, steps=8), openai_trajectory(1, steps=8), make_trajectory(2, steps=8)]


def test_auto_detection_compresses_both_formats(tmp_path: Path) -> None:
    _, _, metrics, _ = _run(tmp_path, _mixed())
    assert [m["was_compressed"] for m in metrics] == [True, True, True]


@pytest.mark.parametrize(("fmt", "kept", "refused"), [("sharegpt", [0, 2], [1]), ("openai", [1], [0, 2])])
def test_forced_format_rejects_records_of_the_other_format_and_writes_them_unchanged(
    tmp_path: Path, fmt: str, kept: list[int], refused: list[int]
) -> None:
    inputs, lines, metrics, stderr = _run(tmp_path, _mixed(), "--format", fmt)
    assert len(lines) == 3 and [m["index"] for m in metrics] == [0, 1, 2]
    for i in kept:
        assert metrics[i]["was_compressed"] and not metrics[i]["rejected"]
        after = json.loads(lines[i])
        key = "conversations" if fmt == "sharegpt" else "messages"
        assert key in after and SUMMARY in json.dumps(after[key])
    for i in refused:
        m = metrics[i]
        assert m["rejected"] and not m["was_compressed"] and m["reason"]
        assert lines[i] == inputs[i], "a rejected record is written unchanged"
        assert f"in.jsonl:{i + 1}:" in stderr, "reported with file and line"
    rejects = read_jsonl(tmp_path / "out" / "x.rejects.jsonl")
    assert [r["line"] for r in rejects] == [i + 1 for i in refused]


def test_openai_messages_under_conversations_are_detected_and_can_be_forced(tmp_path: Path) -> None:
    record = openai_trajectory(3, steps=8)
    record["conversations"] = record.pop("messages")  # some datasets keep OpenAI messages there
    _, auto_out, auto_metrics, _ = _run(tmp_path / "auto", [record])
    _, forced_out, forced_metrics, _ = _run(tmp_path / "openai", [record], "--format", "openai")
    for lines, metrics in ((auto_out, auto_metrics), (forced_out, forced_metrics)):
        assert metrics[0]["was_compressed"] and not metrics[0]["rejected"]
        after = json.loads(lines[0])
        assert "messages" not in after, "written back under the key it came in"
        summary = after["conversations"][metrics[0]["compression_region"]["start_idx"]]
        assert summary["role"] == "user" and summary["content"].startswith(SUMMARY)
    assert auto_out == forced_out
    inputs, lines, metrics, _ = _run(tmp_path / "sharegpt", [record], "--format", "sharegpt")
    assert metrics[0]["rejected"] and lines == inputs


@pytest.mark.parametrize(
    ("flags", "compressed"),
    [
        ((), "conversations"),  # auto: `conversations` is looked for first
        (("--format", "sharegpt"), "conversations"),
        (("--format", "openai"), "messages"),
        (("--conversation-key", "messages"), "messages"),
        (("--conversation-key", "messages", "--format", "openai"), "messages"),
    ],
)
def test_a_record_with_both_lists_compresses_the_chosen_one_only(
    tmp_path: Path, flags: tuple[str, ...], compressed: str
) -> None:
    sharegpt = make_trajectory(4, steps=8)
    record = {
        "id": "both",
        "conversations": sharegpt["conversations"],
        "messages": openai_trajectory(5, steps=8)["messages"],
    }
    _, lines, metrics, _ = _run(tmp_path, [record], *flags)
    m = metrics[0]
    assert m["was_compressed"] and not m["rejected"], m
    after = json.loads(lines[0])
    other = "messages" if compressed == "conversations" else "conversations"
    assert after[other] == record[other], "the other list is left alone"
    assert after[compressed] != record[compressed]
    assert m["original_turns"] == len(record[compressed])
    if compressed == "conversations":
        _check_sharegpt_row(
            {"id": "both", "conversations": record["conversations"], "messages": record["messages"]}, after, m
        )


def test_a_run_that_rejects_every_row_exits_4_naming_the_flags_that_read_it(tmp_path: Path) -> None:
    """Turns kept under another key (`turns`): every row a reject, the outputs hold nothing compressed."""
    rows = []
    for i in range(3):
        row = make_trajectory(i, steps=8)
        rows.append({"id": row["id"], "turns": row.pop("conversations")})
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET, "--json")
    assert result.returncode == 4, result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "every row was rejected (3 of 3)" in error and "in.jsonl:1: missing conversation list" in error
    assert "--format" in error and "--conversation-key" in error
    assert json.loads(result.stdout)["exit_code"] == 4
    assert json.loads((out.parent / "x.report.json").read_text())["status"] == "completed"

    fixed = run_cli("compress", str(source), "-o", str(out), *BUDGET, "--conversation-key", "turns")
    assert fixed.returncode == 0, fixed.stderr
    assert all(m["was_compressed"] for m in read_jsonl(out.parent / "x.metrics.jsonl"))


def test_a_run_that_rejects_some_rows_only_exits_0(tmp_path: Path) -> None:
    _, _, metrics, _ = _run(tmp_path, _mixed(), "--format", "openai")  # asserts exit 0: not every row
    assert [m["rejected"] for m in metrics] == [True, False, True]


def test_a_run_whose_every_row_is_rejected_for_its_content_does_not_blame_the_format(tmp_path: Path) -> None:
    """Records read as OpenAI messages, each holding an image: the reason is the image, and the
    line says where every reason is, offering the format flags only as a possibility."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    rows = [
        {"id": f"r{i}", "messages": [{"role": "user", "content": [image]}, {"role": "assistant", "content": "A cat."}]}
        for i in range(2)
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    result = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"), *BUDGET)
    assert result.returncode == 4, result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "in.jsonl:1: turn 0: content part 0 has unsupported type 'image_url'" in error
    assert "every reason is in the rejects file" in error and "likely in another format" not in error
