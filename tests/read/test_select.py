"""Sharding: every row in exactly one shard, the same for every run."""

from __future__ import annotations

import pytest

from trajectory_compressor.read.select import shard_filter


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
