"""`fidelity.future` on every compressed row and window, pooled in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl


@pytest.mark.parametrize("windows", [False, True], ids=["single-row", "windows"])
def test_every_summary_is_judged_by_what_the_kept_turns_need(tmp_path: Path, windows: bool) -> None:
    rows = [make_trajectory(i, steps=6 + 2 * i, output_lines=30) for i in range(4)]
    for row in rows:  # each result names a ticket; the last answer quotes the first ones
        turns = row["conversations"]
        for n, turn in enumerate(t for t in turns if t["from"] == "tool"):
            turn["value"] = turn["value"].replace("exit code: 0", f"exit code: 0, ticket TK{n}X{n * 7}")
        turns[-1]["value"] += " Tickets TK1X7, TK2X14 and TK3X21 are closed."
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    flags = ["--target-max-tokens", "2500", "--summary-target-tokens", "300", "--summarizer", "extractive"]
    result = run_cli("compress", str(source), "-o", str(out), *flags, *(["--windows"] if windows else []))
    assert result.returncode == 0, result.stderr
    compressed = [m for m in read_jsonl(out.parent / "x.metrics.jsonl") if m["was_compressed"]]
    assert compressed
    for m in compressed:
        future = m["fidelity"]["future"]
        assert set(future) == {"score", "anchors", "kept", "missed"}
        assert 0 <= future["kept"] <= future["anchors"]
        assert future["score"] == (round(future["kept"] / future["anchors"], 4) if future["anchors"] else None)
    report = json.loads((out.parent / "x.report.json").read_text())["fidelity"]
    assert report["future_anchors"] == sum(m["fidelity"]["future"]["anchors"] for m in compressed) > 0
    assert report["future_kept"] == sum(m["fidelity"]["future"]["kept"] for m in compressed)
