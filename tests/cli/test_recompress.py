"""Re-compressing a compressed dataset: the notice once, the earlier summary carried, not cut.

A dataset compressed once (by this tool, or a Hermes run that compacted itself) holds a
`[CONTEXT SUMMARY]:` turn right after its head and the notice at the end of its system turn.
Compressing it again must not append the notice a second time, and must treat the earlier
summary as the summary to update, never as a user request cut to a few words.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.plan.apply import earlier_summary
from trajectory_compressor.settings.tree import DEFAULT_NOTICE
from trajectory_compressor.types import Turn

EARLIER = (
    "Earlier work: the agent edited src/payments/ledger.py and src/payments/refund_policy.py, "
    "hit KeyError and ZeroDivisionError in ledger.reconcile, and recorded booking id QX7RT2 and "
    "commit 9f3c2ab71d. " + "It also ran the suite several times with the same outcome. " * 12
)


def _recompressed_input(tmp_path: Path) -> Path:
    """A row as a first compression left it: notice on the system turn, summary after the head."""
    rows = []
    for index in range(3):
        row = make_trajectory(index, steps=14, output_lines=40)
        turns = row["conversations"]
        turns[0]["value"] += DEFAULT_NOTICE
        head = turns[:4]  # system, human, first gpt, its tool result
        summary = {"from": "human", "value": f"[CONTEXT SUMMARY]: {EARLIER}"}
        row["conversations"] = [*head, summary, *turns[4:]]
        rows.append(row)
    return write_jsonl(tmp_path / "in.jsonl", rows)


def test_the_notice_is_never_appended_twice(tmp_path: Path) -> None:
    source = _recompressed_input(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    args = ["--target-max-tokens", "2000", "--summary-target-tokens", "300", "--summarizer", "extractive"]
    result = run_cli("compress", str(source), "-o", str(out), *args)
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert all(m["was_compressed"] for m in metrics)
    for row in read_jsonl(out):
        system = row["conversations"][0]["value"]
        assert system.count(DEFAULT_NOTICE.strip()) == 1


def test_the_extractive_summary_keeps_the_earlier_summarys_lists(tmp_path: Path) -> None:
    source = _recompressed_input(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    args = ["--target-max-tokens", "2000", "--summary-target-tokens", "400", "--summarizer", "extractive"]
    assert run_cli("compress", str(source), "-o", str(out), *args).returncode == 0
    for row, metrics in zip(read_jsonl(out), read_jsonl(out.parent / "x.metrics.jsonl"), strict=True):
        summary = row["conversations"][metrics["compression_region"]["start_idx"]]["value"]
        assert summary.count("[CONTEXT SUMMARY]:") == 1
        assert "User requests:" not in summary or "Earlier work" not in summary.split("User requests:")[1]
        for item in ("ledger.py", "refund_policy.py", "KeyError", "ZeroDivisionError", "QX7RT2", "9f3c2ab71d"):
            assert item in summary, item


def test_the_llm_is_asked_to_update_the_earlier_summary_whole(tmp_path: Path) -> None:
    source = _recompressed_input(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    args = [
        "--target-max-tokens", "2000", "--summary-target-tokens", "300", "--summarizer", "llm",
        "--model", "m", "--no-cache", "--retry-delay", "0.01",
    ]  # fmt: skip
    with FakeServerThread() as server:
        result = run_cli("compress", str(source), "-o", str(out), *args, "--base-url", server.base_url)
        assert result.returncode == 0, result.stderr
        prompts = [prompt_text(request.body) for request in server.requests]
    assert len(prompts) == 3
    for prompt in prompts:
        previous = prompt.split("<previous_summary>\n", 1)[1].split("\n</previous_summary>", 1)[0]
        assert previous == EARLIER.strip()  # whole, not cut
        transcript = prompt.split("<transcript>", 1)[1]
        assert "Earlier work" not in transcript  # not shown again as a turn of the region
        assert "Update that summary" in prompt


def test_hermes_compaction_turns_are_recognized() -> None:
    hermes = (
        "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. "
        "IMPORTANT: memory stays. The current session state may reflect work described here — avoid repeating it:\n"
        "## Goal\nShip the fix."
    )
    assert earlier_summary(Turn("human", hermes)) == "## Goal\nShip the fix."
    assert earlier_summary(Turn("human", "[CONTEXT SUMMARY]: done x")) == "done x"
    assert earlier_summary(Turn("tool", "[CONTEXT SUMMARY]: done x")) is None
    assert earlier_summary(Turn("human", "please summarize [CONTEXT SUMMARY]:")) is None


def test_a_row_compressed_twice_has_one_summary_turn(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=20, output_lines=40) for i in range(2)])
    first, second = tmp_path / "a" / "x.jsonl", tmp_path / "b" / "x.jsonl"
    common = ["--summarizer", "extractive", "--summary-target-tokens", "300"]
    assert run_cli("compress", str(source), "-o", str(first), "--target-max-tokens", "4000", *common).returncode == 0
    assert run_cli("compress", str(first), "-o", str(second), "--target-max-tokens", "2500", *common).returncode == 0
    for row in read_jsonl(second):
        values = [turn["value"] for turn in row["conversations"]]
        assert sum(value.startswith("[CONTEXT SUMMARY]:") for value in values) == 1
        assert values[0].count(DEFAULT_NOTICE.strip()) == 1
    assert json.loads((second.parent / "x.report.json").read_text())["rows"]["compressed"] == 2
