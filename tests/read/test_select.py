"""Sharding: every row in exactly one shard, the same for every run; `--limit` bounds the whole input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.select import RowSelection, shard_filter
from trajectory_compressor.settings import SelectConfig


def test_shards_are_disjoint_complete_and_deterministic() -> None:
    rows = range(103)
    shards = [[i for i in rows if shard_filter(i, 4, s)] for s in range(4)]
    assert sorted(i for shard in shards for i in shard) == list(rows)
    assert sum(len(shard) for shard in shards) == 103  # no row in two shards
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert shards == [[i for i in rows if shard_filter(i, 4, s)] for s in range(4)]
    assert all(shard_filter(i, 1, 0) for i in rows)


@pytest.mark.parametrize(("num_shards", "shard_index"), [(0, 0), (2, 2), (2, -1)])
def test_bad_shard_arguments_raise(num_shards: int, shard_index: int) -> None:
    with pytest.raises(ValueError):
        shard_filter(0, num_shards, shard_index)


def _indices(path: Path, **select: int | float | None) -> list[int]:
    return [index for index, _, _ in RowSelection(expand_inputs([str(path)]), select=SelectConfig(**select))]


@pytest.mark.parametrize("sample_percent", [None, 50.0])
def test_the_shards_of_a_limited_run_take_the_rows_the_unsharded_run_takes(
    tmp_path: Path, sample_percent: float | None
) -> None:
    """docs/reliability.md: the merged shards equal one unsharded run of the same command, `--limit` too."""
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(40)), encoding="utf-8")
    whole = _indices(path, limit=7, sample_percent=sample_percent)
    assert len(whole) == 7
    shards = [_indices(path, limit=7, sample_percent=sample_percent, num_shards=3, shard_index=i) for i in range(3)]
    assert sorted(i for shard in shards for i in shard) == whole
