"""The anchor index end to end: no look-ahead, within the budget, the setting, the cache key, windows,
re-compression, the offline paths, all through the real command and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.summarize.anchor_index import INDEX_LABEL, split_index
from trajectory_compressor.summarize.fidelity.anchors import needed_anchors
from trajectory_compressor.types import SUMMARY_PREFIX, Turn

BUDGET = 300
ARGS = ["--target-max-tokens", "2500", "--summary-target-tokens", str(BUDGET)]


def _row(index: int, *, steps: int = 10, quoted: str = "TK1X7, TK2X14") -> dict[str, Any]:
    """A run whose tool results each name a ticket the assistant notes down in its next step, and
    whose last answer quotes some of them."""
    row = make_trajectory(index, steps=steps, output_lines=30)
    turns = row["conversations"]
    for n, turn in enumerate(t for t in turns if t["from"] == "tool"):
        turn["value"] = turn["value"].replace("exit code: 0", f"exit code: 0, ticket TK{n}X{n * 7}")
    for n, turn in enumerate(t for t in turns if t["from"] == "gpt" and "run the test." in t["value"]):
        if n:
            turn["value"] = turn["value"].replace("run the test.", f"noted ticket TK{n - 1}X{(n - 1) * 7}.")
    turns[-1]["value"] += f" Tickets {quoted} are closed."
    return row


def _llm(base_url: str, cache: Path | None, *extra: str) -> list[str]:
    store = ["--cache", str(cache)] if cache else ["--no-cache"]
    return ["--summarizer", "llm", "--base-url", base_url, "--model", "m", *store, "--retry-delay", "0.01", *extra]


def _compress(tmp_path: Path, name: str, rows: list[dict[str, Any]], *flags: str) -> Path:
    source = tmp_path / "in.jsonl"
    if not source.exists():
        write_jsonl(source, rows)
    out = tmp_path / name / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), *ARGS, *flags)
    assert result.returncode == 0, result.stderr
    return out


def _summaries(out: Path) -> list[str]:
    """The summary bodies of the compressed rows, in row order."""
    rows = read_jsonl(out)
    found = []
    for m in read_jsonl(out.parent / f"{out.stem}.metrics.jsonl"):
        if m["was_compressed"]:
            value = rows[m["index"]]["conversations"][m["compression_region"]["start_idx"]]["value"]
            found.append(value.removeprefix(SUMMARY_PREFIX).strip())
    return found


def _asked_budget(prompt: str) -> int:
    match = re.search(r"in at most (\d+) tokens", prompt)
    assert match, prompt[-400:]
    return int(match.group(1))


def _future(out: Path) -> tuple[int, int]:
    compressed = [m for m in read_jsonl(out.parent / "x.metrics.jsonl") if m["was_compressed"]]
    return sum(m["fidelity"]["future"]["kept"] for m in compressed), sum(
        m["fidelity"]["future"]["anchors"] for m in compressed
    )


@pytest.mark.parametrize("summarizer", ["extractive", "llm"])
def test_a_regions_summary_is_the_same_whatever_follows_it(tmp_path: Path, summarizer: str) -> None:
    """No look-ahead: two rows alike up to the end of the region, apart after it, get one summary."""
    rows = [_row(0, quoted="TK1X7, TK2X14"), _row(0, quoted="TK3X21, TK4X28")]
    rows[1]["conversations"][-1]["value"] += " The user was told."
    with FakeServerThread() as server:
        flags = _llm(server.base_url, None) if summarizer == "llm" else ["--summarizer", "extractive"]
        out = _compress(tmp_path, "out", rows, *flags)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert metrics[0]["compression_region"] == metrics[1]["compression_region"] is not None
    first, second = _summaries(out)
    assert first == second and INDEX_LABEL in first
    # ... while what the kept turns after it need differs.
    assert _needed(rows[0], metrics[0]) != _needed(rows[1], metrics[1])


def _needed(row: dict[str, Any], metrics: dict[str, Any]) -> tuple[str, ...]:
    turns = [Turn(t["from"], t["value"]) for t in row["conversations"]]
    start, end = metrics["compression_region"]["start_idx"], metrics["compression_region"]["end_idx"] + 1
    return needed_anchors(turns[:start], turns[start:end], turns[end:])


def test_an_llm_summary_ends_with_the_index_in_the_budget_the_prompt_leaves(tmp_path: Path, counter: Any) -> None:
    rows = [_row(i, steps=8 + 2 * i) for i in range(3)]
    with FakeServerThread() as server:
        out = _compress(tmp_path, "on", rows, *_llm(server.base_url, None))
        asked = [_asked_budget(prompt_text(r.body)) for r in server.requests]
        bodies = [r.body for r in server.requests]
    with FakeServerThread() as server:
        off = _compress(tmp_path, "off", rows, *_llm(server.base_url, None), "--no-anchor-index")
        asked_off = [_asked_budget(prompt_text(r.body)) for r in server.requests]
    assert asked and all(0 < n < BUDGET for n in asked) and set(asked_off) == {BUDGET}
    assert all(body["max_tokens"] == 2 * n for body, n in zip(bodies, asked, strict=True))
    summaries = _summaries(out)
    metrics = [m for m in read_jsonl(out.parent / "x.metrics.jsonl") if m["was_compressed"]]
    source = read_jsonl(tmp_path / "in.jsonl")
    for summary, m in zip(summaries, metrics, strict=True):
        text, listed = split_index(summary)
        assert listed and summary.count(INDEX_LABEL) == 1 and text.startswith("The user and the assistant")
        assert m["summary_tokens"] <= BUDGET
        region = source[m["index"]]["conversations"][m["compression_region"]["start_idx"] :]
        region_text = json.dumps(region)
        assert all(anchor in region_text for anchor in listed)  # exact strings of the region
    assert not any(INDEX_LABEL in s for s in _summaries(off))
    kept_on, needed = _future(out)
    kept_off, needed_off = _future(off)
    assert needed == needed_off > 0 and kept_on > kept_off


def test_the_setting_from_yaml_and_the_flag_give_the_same_bytes(tmp_path: Path) -> None:
    rows = [_row(i) for i in range(2)]
    flag = _compress(tmp_path, "flag", rows, "--summarizer", "extractive", "--no-anchor-index")
    config = tmp_path / "c.yaml"
    config.write_text("summarization:\n  anchor_index: false\n")
    yaml = _compress(tmp_path, "yaml", rows, "--summarizer", "extractive", "--config", str(config))
    assert flag.read_bytes() == yaml.read_bytes()
    assert not any(INDEX_LABEL in s for s in _summaries(flag))
    report = json.loads((flag.parent / "x.report.json").read_text())
    assert report["settings"]["llm"]["anchor_index"] is False


def test_a_changed_index_setting_never_reuses_a_summary_made_without_it(tmp_path: Path) -> None:
    rows = [_row(i) for i in range(3)]
    cache = tmp_path / "cache.sqlite3"
    with FakeServerThread() as server:
        _compress(tmp_path, "off", rows, *_llm(server.base_url, cache), "--no-anchor-index")
        asked_without = len(server.requests)
        on = _compress(tmp_path, "on", rows, *_llm(server.base_url, cache))
        asked_with = len(server.requests) - asked_without
        again = _compress(tmp_path, "again", rows, *_llm(server.base_url, cache))
        asked_again = len(server.requests) - asked_without - asked_with
    assert asked_without == asked_with > 0 and asked_again == 0
    assert on.read_bytes() == again.read_bytes()
    assert all(INDEX_LABEL in s for s in _summaries(on))


def _windows_row() -> dict[str, Any]:
    """A long run: a booking id the assistant keeps using, and a new ticket in every result."""
    row = _row(3, steps=18)
    for turn in row["conversations"]:
        turn["value"] = turn["value"].replace("noted ticket", "for booking BKG4417, noted ticket")
    return row


def test_windows_keep_one_cumulative_index_and_never_show_the_old_one_to_the_model(tmp_path: Path) -> None:
    with FakeServerThread() as server:
        out = _compress(tmp_path, "w", [_windows_row()], "--windows", *_llm(server.base_url, None))
        prompts = [prompt_text(r.body) for r in server.requests]
    records = read_jsonl(out)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert len(records) >= 3 and len(prompts) == len(records) - 1
    summaries = [r["conversations"][4]["value"] for r in records[1:]]
    for k, (summary, m) in enumerate(zip(summaries, metrics[1:], strict=True), start=1):
        assert summary.count(INDEX_LABEL) == 1, k
        assert m["summary_tokens"] <= BUDGET
        assert "BKG4417" in split_index(summary)[1]  # still used in every window: carried on
    for k, prompt in enumerate(prompts[1:], start=2):
        previous = prompt.split("<previous_summary>\n", 1)[1].split("\n</previous_summary>")[0]
        assert INDEX_LABEL not in prompt and previous == split_index(summaries[k - 2])[0].removeprefix(
            SUMMARY_PREFIX + " "
        )
    # Cumulative: a ticket listed by the first summary is still listed by the second when it ranks.
    first, second = split_index(summaries[0])[1], split_index(summaries[1])[1]
    assert set(first) & set(second) - {"BKG4417"}


def test_compressing_a_compressed_dataset_carries_its_index_once(tmp_path: Path) -> None:
    rows = [_row(i, steps=14) for i in range(2)]
    with FakeServerThread() as server:
        once = _compress(tmp_path, "once", rows, *_llm(server.base_url, None))
        source = tmp_path / "twice-in.jsonl"
        source.write_bytes(once.read_bytes())
        out = tmp_path / "twice" / "x.jsonl"
        flags = ["--target-max-tokens", "1200", "--summary-target-tokens", str(BUDGET)]
        result = run_cli("compress", str(source), "-o", str(out), *flags, *_llm(server.base_url, None))
        assert result.returncode == 0, result.stderr
        second_prompts = [prompt_text(r.body) for r in server.requests][len(_summaries(once)) :]
    earlier = {a for s in _summaries(once) for a in split_index(s)[1]}
    assert second_prompts and all(INDEX_LABEL not in p and "<previous_summary>" in p for p in second_prompts)
    for summary in _summaries(out):
        assert summary.count(INDEX_LABEL) == 1
        assert set(split_index(summary)[1]) & earlier  # the earlier index's values carried on
