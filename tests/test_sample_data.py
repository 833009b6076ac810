"""The synthetic data generator (scripts/make_sample_data.py) and the committed sample file.

The sample file is what users try first and what the benchmark's rows look like, so these tests
pin down what it promises: ShareGPT structure, parseable tool calls in most rows, every quirk
the compressor must survive, the advertised length mix, and no drift from the script.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data" / "agent_runs.jsonl"
sys.path.insert(0, str(REPO / "scripts"))

import make_sample_data as gen  # noqa: E402  (a script, not a package: imported the way bench.py does)

CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)
RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)
ROLES = {"system", "human", "gpt", "tool"}


@pytest.fixture(scope="module")
def committed() -> list[dict[str, Any]]:
    with open(SAMPLE, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def generated() -> list[dict[str, Any]]:
    """A different seed from the committed file, so the checks do not only hold for one sample."""
    return list(gen.generate_trajectories(300, seed=1))


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_same_seed_same_rows_and_different_seed_different_rows() -> None:
    first = list(gen.generate_trajectories(25, seed=3))
    assert first == list(gen.generate_trajectories(25, seed=3))
    assert first != list(gen.generate_trajectories(25, seed=4))


def test_small_run_is_a_prefix_of_a_large_one() -> None:
    # The benchmark relies on this: row i depends only on (seed, i).
    assert list(gen.generate_trajectories(8, seed=2)) == list(gen.generate_trajectories(40, seed=2))[:8]


def test_rows_are_sharegpt_with_metadata(generated: list[dict[str, Any]]) -> None:
    ids = [row["id"] for row in generated]
    assert ids == [f"sample-{i:06d}" for i in range(len(generated))]
    for row in generated:
        assert {"conversations", "source", "task_family", "model", "quirks", "meta"} <= row.keys()
        assert row["source"] == "synthetic"
        turns = row["conversations"]
        assert len(turns) >= 4
        for turn in turns:
            assert set(turn) == {"from", "value"}
            assert turn["from"] in ROLES
            assert isinstance(turn["value"], str) and turn["value"]
        assert any(t["from"] == "human" for t in turns)
        assert turns[0]["from"] in ({"human", "gpt"} if "no_system_turn" in row["quirks"] else {"system"})


def test_tool_calls_parse_in_most_rows_and_break_in_a_few(generated: list[dict[str, Any]]) -> None:
    clean_rows = 0
    for row in generated:
        blocks = [b for t in row["conversations"] if t["from"] == "gpt" for b in CALL.findall(t["value"])]
        ok = [_parses(b) and isinstance(json.loads(b).get("arguments"), dict) for b in blocks]
        clean_rows += all(ok)
        if "invalid_tool_call_json" not in row["quirks"]:
            assert all(ok), row["id"]
    assert 0.9 <= clean_rows / len(generated) < 1.0


def test_every_call_gets_its_responses_unless_the_run_was_cut(generated: list[dict[str, Any]]) -> None:
    for row in generated:
        turns = row["conversations"]
        for i, turn in enumerate(turns):
            if turn["from"] == "tool":
                assert turns[i - 1]["from"] in {"gpt", "tool"}, row["id"]
                for body in RESPONSE.findall(turn["value"]):
                    response = json.loads(body)
                    assert {"tool_call_id", "name", "content"} <= response.keys()
            if turn["from"] != "gpt" or "<tool_call>" not in turn["value"]:
                continue
            calls = len(CALL.findall(turn["value"]))
            following = []
            for later in turns[i + 1 :]:
                if later["from"] != "tool":
                    break
                following += RESPONSE.findall(later["value"])
            if i == len(turns) - 1:
                assert "ends_on_tool_call" in row["quirks"], row["id"]
            else:
                assert len(following) == calls, row["id"]


def test_committed_file_has_every_quirk(committed: list[dict[str, Any]]) -> None:
    quirks = Counter(q for row in committed for q in row["quirks"])
    for quirk in ("no_system_turn", "tools_field", "ends_on_tool_call", "invalid_tool_call_json", "human_followup"):
        assert quirks[quirk] >= 2, quirk
    assert quirks["non_english_fr"] + quirks["non_english_zh"] >= 4
    assert {row["task_family"] for row in committed} == set(gen.FAMILIES)
    for row in committed:
        if "tools_field" in row["quirks"]:
            assert isinstance(json.loads(row["tools"]), list)
        if "ends_on_tool_call" in row["quirks"]:
            assert "<tool_call>" in row["conversations"][-1]["value"]
        if "non_english_zh" in row["quirks"]:
            human = next(t["value"] for t in row["conversations"] if t["from"] == "human")
            assert re.search(r"[\u4e00-\u9fff]", human)


def test_committed_file_is_exactly_what_the_script_writes_by_default() -> None:
    """Regenerate with the defaults and compare bytes, so the script and the file never drift."""
    expected = hashlib.sha256()
    for row in gen.generate_trajectories(gen.DEFAULT_ROWS, gen.DEFAULT_SEED):
        expected.update(gen.dumps_row(row))
    actual = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert actual == expected.hexdigest(), "run: python scripts/make_sample_data.py"


def test_committed_file_is_under_10_mb() -> None:
    assert SAMPLE.stat().st_size < 10_000_000


def test_committed_file_length_mix(committed: list[dict[str, Any]], counter: Any) -> None:
    """The mix the README advertises, measured with the real tokenizer (sum of per-turn tokens)."""
    sizes = [sum(counter.count_many([t["value"] for t in row["conversations"]])) for row in committed]
    over = sum(size > 15_000 for size in sizes) / len(sizes)
    assert 0.35 <= over <= 0.45
    assert statistics.median(sizes) < 8_000
    assert min(sizes) >= 1_500
    assert sum(size > 40_000 for size in sizes) >= 2
    long_band = [size for size, row in zip(sizes, committed, strict=True) if row["meta"]["size_class"] == "long"]
    assert min(long_band) > 15_250  # the compressor's default target: every "long" row needs work


def test_size_bands_follow_the_per_hundred_plan() -> None:
    plan = Counter(gen.size_class_of(5, i).name for i in range(100, 200))
    assert plan == {size.name: size.per_hundred for size in gen.SIZE_CLASSES}


def test_cli_writes_the_same_rows_to_stdout_and_to_a_file(tmp_path: Path, capsysbinary: Any) -> None:
    expected = b"".join(gen.dumps_row(row) for row in gen.generate_trajectories(4, seed=9))
    assert gen.main(["--rows", "4", "--seed", "9", "--out", "-"]) == 0
    assert capsysbinary.readouterr().out == expected
    out = tmp_path / "nested" / "rows.jsonl"
    assert gen.main(["--rows", "4", "--seed", "9", "--out", str(out)]) == 0
    assert out.read_bytes() == expected
