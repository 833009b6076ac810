"""A ranking put in order only as far as it is read reads as the whole sort, whatever is read."""

from __future__ import annotations

from itertools import islice

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize import ranked_anchors
from trajectory_compressor.summarize.ranked_anchors import RankedAnchors, _first_part

# Few distinct scores and both groups, so that ties at the selection's bound are common.
anchors = st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.25, 2.0, 3.5]), st.booleans()), min_size=1, max_size=60)


def _ranking(figures: list[tuple[float, bool]]) -> tuple[RankedAnchors, list[str]]:
    names = [f"anchor_{index}" for index in range(len(figures))]
    first = np.array([7 * ((index * 37) % len(figures)) for index in range(len(figures))], dtype=np.int64)
    minus_score = -np.array([score for score, _ in figures])
    not_plain = np.array([not plain for _, plain in figures])
    keys = (first, minus_score, not_plain)
    whole = [names[index] for index in np.lexsort(keys).tolist()]
    return RankedAnchors(names, keys, sum(map(len, names)), min(map(len, names))), whole


@settings(max_examples=300, deadline=None)
@given(anchors, st.data())
def test_the_first_part_picked_by_selection_is_the_head_of_the_whole_sort(
    figures: list[tuple[float, bool]], data: st.DataObject
) -> None:
    ranking, whole = _ranking(figures)
    count = data.draw(st.integers(1, max(1, len(figures) - 1)))
    if count >= len(figures):
        return
    part = _first_part(ranking._keys, count)
    assert len(part) >= count
    assert [ranking._names[index] for index in part.tolist()] == whole[: len(part)]


@pytest.mark.parametrize("first_part", [1, 3, 512])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(figures=anchors, stop=st.integers(0, 70))
def test_every_way_of_reading_gives_the_whole_sorts_order(
    monkeypatch: pytest.MonkeyPatch, first_part: int, figures: list[tuple[float, bool]], stop: int
) -> None:
    monkeypatch.setattr(ranked_anchors, "FIRST_PART", first_part)
    ranking, whole = _ranking(figures)
    assert list(islice(ranking, stop)) == whole[:stop]  # a walk that stops early
    assert list(ranking) == whole  # then one that reads on
    fresh, _ = _ranking(figures)
    assert [fresh[index] for index in range(len(whole))] == whole
    assert fresh[-1] == whole[-1] and _ranking(figures)[0][stop:] == tuple(whole[stop:])
    with pytest.raises(IndexError):
        fresh[len(whole)]
