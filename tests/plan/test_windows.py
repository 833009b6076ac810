"""The window replay, pure: every turn new in exactly one window, windows within the target or
flagged with one oversized group, each summary covering more than the one before."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.plan.prune import answered_results
from trajectory_compressor.plan.windows import (
    WindowReplay,
    group_starts,
    summary_budget,
    window_layout,
)
from trajectory_compressor.settings import PlanConfig
from trajectory_compressor.types import EditedTurn, KeptTurn, NewTurn, Turn


@st.composite
def rows(draw: st.DrawFn) -> tuple[list[str], list[int]]:
    """Role sequences agents produce: system?, human, then gpt calls with tool results, users now and then."""
    roles = ["system"] if draw(st.booleans()) else []
    roles.append("human")
    for _ in range(draw(st.integers(0, 40))):
        if draw(st.integers(0, 9)) == 0:
            roles.append("human")
        roles.append("gpt")
        if draw(st.integers(0, 9)) == 0:  # a system turn mid-run, between a call and its results
            roles.append("system")
        roles.extend(["tool"] * draw(st.integers(0, 3)))
    if draw(st.integers(0, 4)) == 0:  # a run ending on a user (or system) turn
        roles.append(draw(st.sampled_from(["human", "system"])))
    counts = [draw(st.integers(1, 900)) for _ in roles]
    return roles, counts


def _config(draw_target: int, ratio: float, last_n: int) -> PlanConfig:
    return PlanConfig(
        target_max_tokens=draw_target,
        summary_target_tokens=min(300, draw_target - 1),
        tail_ratio=ratio,
        protect_last_n_turns=last_n,
        windows=True,
    )


@settings(max_examples=400, deadline=None)
@given(
    rows(),
    st.integers(1500, 9000),
    st.sampled_from([0.1, 0.2, 0.4]),
    st.integers(0, 6),
    st.integers(0, 30),
)
def test_every_turn_is_new_in_exactly_one_window(
    row: tuple[list[str], list[int]], target: int, ratio: float, last_n: int, notice: int
) -> None:
    roles, counts = row
    config = _config(target, ratio, last_n)
    replay = WindowReplay(roles, counts, config, notice_tokens=notice)
    windows = replay.replay_at_budget()
    if replay.fits_whole():
        assert len(windows) == 1 and windows[0].end == len(roles)
        return
    head = replay.head
    starts = set(group_starts(roles, head)) | {len(roles)}
    first = windows[0]
    assert (first.index, first.context_start, first.new_start) == (0, head, head)
    assert windows[-1].end == len(roles)
    new_turns: list[int] = list(range(head))
    for k, window in enumerate(windows):
        assert window.index == k
        new_turns.extend(range(window.new_start, window.end))
        # Windows end and resume at group boundaries: a call never leaves its results. The kept
        # context opens past its group's leading user turns, which join the summary (a user turn:
        # two in a row break alternating templates), unless nothing but user turns would be left.
        assert {window.new_start, window.end} <= starts
        group = max(start for start in starts if start <= window.context_start)
        assert all(roles[i] == "human" for i in range(group, window.context_start))
        context = roles[window.context_start : window.new_start]
        assert not context or context[0] != "human" or set(context) == {"human"}
        assert window.end > window.new_start  # progress: at least one new group
        # Every window trains a turn: one of its new turns, or window 0's head (TRL drops a row without one).
        assert "gpt" in roles[window.new_start : window.end] or (k == 0 and "gpt" in roles[:head]), (k, roles)
        summary = (notice + window.summary_tokens) if k else 0
        assert window.tokens == replay.tokens(0, head) + summary + replay.tokens(window.context_start, window.end)
        assert window.over == (window.tokens > target)
        if window.over:  # only a single new group that cannot fit (beside the head and a summary) is ever over
            assert replay.group_end(window.new_start) == window.end
        if k:
            before = windows[k - 1]
            assert window.new_start == before.end
            assert before.context_start < window.context_start <= before.end  # each summary covers more
            floor = max(1, int(config.summary_target_tokens * 0.25))
            assert floor <= window.summary_tokens <= config.summary_target_tokens
            if window.over:  # and no smaller summary would let it fit: its summary is at the floor
                assert window.summary_tokens == floor
    assert new_turns == list(range(len(roles)))


@settings(max_examples=200, deadline=None)
@given(rows(), st.integers(2000, 9000))
def test_the_tail_kept_after_a_cut_is_within_its_share_unless_protected(
    row: tuple[list[str], list[int]], target: int
) -> None:
    roles, counts = row
    config = _config(target, 0.2, 0)
    replay = WindowReplay(roles, counts, config)
    windows = replay.replay_at_budget()
    for before, window in itertools.pairwise(windows):
        assert replay.tokens(window.context_start, before.end) <= 0.2 * target


def test_groups_keep_users_with_the_call_they_lead_to_and_results_with_their_call() -> None:
    roles = ["system", "human", "gpt", "tool", "tool", "human", "gpt", "gpt", "tool", "human"]
    assert group_starts(roles, 2) == [2, 5, 7]  # the trailing user turn leads to no gpt turn: it joins the last


def test_turns_that_lead_to_no_gpt_turn_join_the_group_before() -> None:
    """A system turn between a call and its result would otherwise open a group of its own
    with the result and no gpt turn: a window of it alone trains nothing."""
    roles = ["system", "human", "gpt", "tool", "gpt", "system", "tool", "gpt", "tool", "system"]
    assert group_starts(roles, 2) == [2, 4, 7]


def test_summary_budget_scales_with_what_it_replaces_within_floor_and_ceiling() -> None:
    assert summary_budget(100, 750) == 187
    assert summary_budget(2000, 750) == 400
    assert summary_budget(100_000, 750) == 750


def test_a_head_over_the_target_is_one_window() -> None:
    config = _config(1000, 0.2, 2)
    replay = WindowReplay(["system", "human", "gpt", "tool", "gpt", "tool"], [1500, 10, 10, 10, 10, 10], config)
    assert replay.fits_whole()
    [window] = replay.replay_at_budget()
    assert window.over and window.end == 6


def test_layout_marks_train_only_the_turns_new_in_the_window() -> None:
    roles = ["system", "human", "gpt", "tool", "gpt", "tool", "gpt", "tool", "gpt"]
    turns = [Turn(role, f"{role} {i}") for i, role in enumerate(roles)]
    config = _config(1000, 0.3, 0)
    replay = WindowReplay(roles, [100, 50, 100, 200, 100, 200, 100, 200, 100], config)
    windows = replay.replay_at_budget()
    assert len(windows) >= 2
    layout, marks = window_layout(turns, replay.head, windows[0], None)
    assert all(isinstance(item, KeptTurn) for item in layout)
    assert [m for m in marks if m is not None] == [True] * sum(1 for i in range(windows[0].end) if roles[i] == "gpt")
    second = windows[1]
    layout, marks = window_layout(turns, replay.head, second, "the summary", notice_text=" N", notice_index=0)
    assert layout[0] == EditedTurn(0, "system 0 N")
    assert (
        isinstance(layout[replay.head], NewTurn) and layout[replay.head].turn.value == "[CONTEXT SUMMARY]: the summary"
    )
    kept = [item.index for item in layout if isinstance(item, KeptTurn)]
    trained = [item.index for item, mark in zip(layout, marks, strict=True) if mark]
    assert trained == [i for i in range(second.new_start, second.end) if roles[i] == "gpt"]
    assert all(roles[i] != "gpt" or i in trained or i < second.new_start for i in kept)


@settings(max_examples=400, deadline=None)
@given(
    rows(),
    st.integers(1500, 9000),
    st.sampled_from([0.1, 0.2, 0.4]),
    st.integers(0, 6),
    st.booleans(),
    st.data(),
)
def test_pruning_clears_only_context_results_oldest_first_and_only_as_far_as_needed(
    row: tuple[list[str], list[int]], target: int, ratio: float, last_n: int, summaries: bool, data: st.DataObject
) -> None:
    roles, counts = row
    config = _config(target, ratio, last_n)
    # A placeholder cost for some turns of any role: only tool results after the head that it
    # makes cheaper may ever be cleared.
    costs = {i: data.draw(st.integers(1, 80)) for i in range(len(roles)) if data.draw(st.booleans())}
    replay = WindowReplay(roles, counts, config, notice_tokens=7, placeholders=costs, summaries=summaries)
    windows = replay.replay_at_budget()
    if replay.fits_whole():
        assert len(windows) == 1 and not windows[0].cleared
        return
    new_turns: list[int] = list(range(replay.head))
    for k, window in enumerate(windows):
        new_turns.extend(range(window.new_start, window.end))
        assert window.end > window.new_start
        # Only context results, each a saving: never a new turn, never a gpt turn, never the head.
        for index in window.cleared:
            assert roles[index] == "tool" and window.context_start <= index < window.new_start
            assert index >= replay.head and costs[index] < counts[index]
        fixed = (7 + window.summary_tokens) if k and summaries else 0
        assert window.summary_tokens == 0 or summaries
        assert window.tokens == replay.tokens(0, replay.head) + fixed + replay.shown(
            window.context_start, window.end, window.cleared
        )
        assert window.over == (window.tokens > target)
        if window.over:
            assert replay.group_end(window.new_start) == window.end
        if not k:
            assert not window.cleared  # window 0 has no context: nothing of it is cleared
            continue
        before = windows[k - 1]
        # The window's first trained (new) gpt turn sees every result it answers.
        first_gpt = next((i for i in range(window.new_start, len(roles)) if roles[i] == "gpt"), len(roles))
        answered = set(answered_results(roles, first_gpt))
        assert not answered & set(window.cleared)
        # A result once cleared stays cleared while it is context; the rest are cleared oldest first.
        inherited = [i for i in before.cleared if window.context_start <= i]
        assert set(inherited) <= set(window.cleared)
        fresh = [i for i in window.cleared if i not in inherited]
        candidates = [
            i
            for i in replay.savings
            if window.context_start <= i < window.new_start and i not in inherited and i not in answered
        ]
        assert fresh == candidates[: len(fresh)]
        # Only as far as needed: without the last one cleared, the window would be over the target
        # (or clearing every candidate could not even fit its first group).
        if fresh and not window.over:
            assert window.tokens + replay.savings[fresh[-1]] > target
    assert new_turns == list(range(len(roles)))


def test_without_summaries_a_cut_keeps_the_tail_and_adds_no_summary() -> None:
    roles = ["system", "human", "gpt", "tool", *(["gpt", "tool"] * 12), "gpt"]
    counts = [50, 50, 30, 300, *([30, 300] * 12), 30]
    config = _config(1500, 0.5, 2)  # a tail of a few groups: its older results can be cleared
    tools = [i for i, role in enumerate(roles) if role == "tool"]
    placeholders = dict.fromkeys(tools, 10)
    replay = WindowReplay(roles, counts, config, notice_tokens=9, placeholders=placeholders, summaries=False)
    windows = replay.replay_at_budget()
    assert len(windows) >= 3 and all(window.summary_tokens == 0 for window in windows)
    assert any(window.cleared for window in windows[1:])
    head = replay.tokens(0, replay.head)
    for window in windows:  # head + what the window shows: no summary, no notice
        assert window.tokens == head + replay.shown(window.context_start, window.end, window.cleared) <= 1500


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["system", "human", "gpt", "tool"]), max_size=30),
    st.data(),
    st.integers(300, 4000),
    st.integers(0, 5),
    st.booleans(),
    st.booleans(),
)
def test_any_roles_give_every_turn_one_window_and_each_window_a_trained_turn(
    roles: list[str], data: st.DataObject, target: int, last_n: int, first_gpt: bool, first_tool: bool
) -> None:
    """Any order of roles (tool-first rows, runs of system or user turns, rows ending on results):
    every group holds a gpt turn when one follows the head, every turn is new in one window, and
    every window trains a turn (a new one, or window 0 one of the head's)."""
    counts = [data.draw(st.integers(1, 900)) for _ in roles]
    config = replace(_config(target, 0.2, last_n), protect_first_gpt=first_gpt, protect_first_tool=first_tool)
    replay = WindowReplay(roles, counts, config)
    head, trains = replay.head, "gpt" in roles[replay.head :]
    bounds = [*group_starts(roles, head), len(roles)]
    assert not trains or all("gpt" in roles[begin:end] for begin, end in itertools.pairwise(bounds))
    if replay.fits_whole():
        return
    new_turns = list(range(head))
    for window in replay.replay_at_budget():
        new_turns.extend(range(window.new_start, window.end))
        _, marks = window_layout([Turn(role, "x") for role in roles], head, window, "s" if window.index else None)
        assert not trains or True in marks
    assert new_turns == list(range(len(roles)))


def _trained_turns(turns: list[Turn], replay: WindowReplay) -> list[list[int]]:
    """Per window of the replay at budget, the input turns its layout marks `True`."""
    trained = []
    for window in replay.replay_at_budget():
        summary = "s" if window.index and not replay.fits_whole() else None
        layout, marks = window_layout(turns, replay.head, window, summary, untrained=replay.untrained)
        trained.append(
            [item.index for item, mark in zip(layout, marks, strict=True) if mark and not isinstance(item, NewTurn)]
        )
    return trained


def test_an_untrained_gpt_turn_joins_the_next_group_that_trains_or_at_the_end_the_one_before() -> None:
    roles = ["system", "human", "gpt", "tool", "gpt", "tool", "gpt", "tool", "gpt", "tool"]
    assert group_starts(roles, 2) == [2, 4, 6, 8]
    # Turn 4 marked untrained leads to turn 6 (one group); turn 8, with nothing trained after it, joins it too.
    assert group_starts(roles, 2, untrained={4, 8}) == [2, 4]
    # The first group of the row trains nothing yet: the untrained turn stays in it until one that trains.
    assert group_starts(roles, 2, untrained={2}) == [2, 6, 8]
    # Every gpt turn after the start untrained: one group, which trains nothing.
    assert group_starts(roles, 2, untrained={2, 4, 6, 8}) == [2]


def test_an_untrained_turn_is_context_in_every_window_and_each_window_trains_a_turn() -> None:
    roles = ["system", "human", "gpt", "tool", *(["gpt", "tool"] * 10)]
    counts = [50, 50, 30, 100, *([30, 300] * 10)]
    turns = [Turn(role, f"{role} {i}") for i, role in enumerate(roles)]
    untrained = {6, 12, 22}  # one in the middle, one more, and the row's last gpt turn
    replay = WindowReplay(roles, counts, _config(1200, 0.3, 2), untrained=untrained)
    windows = replay.replay_at_budget()
    assert len(windows) >= 3
    trained = _trained_turns(turns, replay)
    assert all(trained), trained
    gpt = [i for i, role in enumerate(roles) if role == "gpt"]
    assert list(itertools.chain(*trained)) == [i for i in gpt if i not in untrained]
    shown_untrained = set()
    for window in windows:
        layout, marks = window_layout(turns, replay.head, window, "s" if window.index else None, untrained=untrained)
        for item, mark in zip(layout, marks, strict=True):
            if isinstance(item, KeptTurn) and item.index in untrained:
                assert mark is False
                shown_untrained.add(item.index)
    assert shown_untrained == untrained  # each shown, in the window where it is new at least
    assert windows[-1].end == len(roles)


def test_a_row_whose_gpt_turns_after_the_head_are_all_untrained_is_one_window() -> None:
    roles = ["system", "human", "gpt", "tool", *(["gpt", "tool"] * 10)]
    counts = [50, 50, 30, 100, *([30, 300] * 10)]
    untrained = {i for i, role in enumerate(roles) if role == "gpt" and i >= 4}
    replay = WindowReplay(roles, counts, _config(1200, 0.3, 2), untrained=untrained)
    assert replay.trains_nothing_after_head and replay.fits_whole()
    [window] = replay.replay_at_budget()
    assert window.end == len(roles) and window.over
    _, marks = window_layout([Turn(role, "x") for role in roles], replay.head, window, None, untrained=untrained)
    assert [m for m in marks if m is not None] == [True] + [False] * 10  # the head's gpt turn only
    # No marks at all: the same row is cut into windows as before.
    assert not WindowReplay(roles, counts, _config(1200, 0.3, 2)).fits_whole()


@settings(max_examples=400, deadline=None)
@given(rows(), st.integers(1500, 9000), st.sampled_from([0.1, 0.2, 0.4]), st.integers(0, 6), st.data())
def test_untrained_turns_are_never_marked_and_the_rest_are_trained_once_in_order(
    row: tuple[list[str], list[int]], target: int, ratio: float, last_n: int, data: st.DataObject
) -> None:
    roles, counts = row
    gpt = [i for i, role in enumerate(roles) if role == "gpt"]
    untrained = {i for i in gpt if data.draw(st.integers(0, 3)) == 0}
    turns = [Turn(role, f"{role} {i}") for i, role in enumerate(roles)]
    replay = WindowReplay(roles, counts, _config(target, ratio, last_n), notice_tokens=5, untrained=untrained)
    bounds = [*group_starts(roles, replay.head, untrained), len(roles)]
    trainable = [i for i in gpt if i not in untrained]
    if any(i >= replay.head for i in trainable):  # every group trains a turn
        assert all(any(i in trainable for i in range(begin, end)) for begin, end in itertools.pairwise(bounds)), (
            roles,
            untrained,
        )
    trained = _trained_turns(turns, replay)
    assert list(itertools.chain(*trained)) == trainable
    windows = replay.replay_at_budget()
    if len(windows) > 1:
        assert all(trained), (roles, untrained)  # a split row: every window trains a turn
    new_turns = list(range(replay.head))
    for window in windows:
        new_turns.extend(range(window.new_start, window.end))
    assert new_turns == list(range(len(roles)))
    assert windows[-1].end == len(roles)
