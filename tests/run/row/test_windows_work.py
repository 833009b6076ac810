"""`--windows` does work in proportion to what it writes: each turn of a row is read once by the
extractive summarizer and by the windows' fidelity, whatever the number of windows (counted, not
timed: `scripts/bench.py` times the row-length series)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.summarize.anchor_rank import AnchorRanking
from trajectory_compressor.summarize.extractive.digest import RegionDigest
from trajectory_compressor.summarize.fidelity import anchor_tokens
from trajectory_compressor.summarize.fidelity.salient import GrowingItems


def test_each_turn_is_read_once_however_many_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read: Counter[str] = Counter()
    anchored: Counter[str] = Counter()

    def counting(cls: type, key: str) -> None:
        extend = cls.extend

        def counted(self: object, turns: object) -> object:
            turns = list(turns)  # type: ignore[call-overload]
            read[key] += len(turns)
            return extend(self, turns)

        monkeypatch.setattr(cls, "extend", counted)

    counting(RegionDigest, "digest")
    counting(AnchorRanking, "ranking")
    counting(GrowingItems, "items")
    anchors_in = anchor_tokens.anchors_in
    monkeypatch.setattr(
        "trajectory_compressor.summarize.fidelity.windows.anchors_in",
        lambda text: (anchored.update([text]), anchors_in(text))[1],
    )
    row = make_trajectory(1, steps=60, output_lines=30)
    source = write_jsonl(tmp_path / "in.jsonl", [row])
    out = tmp_path / "out" / "x.jsonl"
    flags = ["--target-max-tokens", "2500", "--summary-target-tokens", "300", "--summarizer", "extractive"]
    result = run_cli("compress", str(source), "-o", str(out), "--windows", *flags)
    assert result.returncode == 0, result.stderr
    windows = read_jsonl(out)
    assert len(windows) > 10
    turns = len(row["conversations"])
    # The last region ends before the last window's context: every turn read at most once.
    assert 0 < read["digest"] == read["ranking"] <= turns
    assert 0 < read["items"] <= turns
    assert 0 < sum(anchored.values()) <= turns  # each turn's anchors read once for the windows' fidelity
