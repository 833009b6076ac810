"""Tests for the pure planner: the protected head and tail, and the compressible region.

Trajectories are written in a one-letter notation (`S` system, `H` human, `G` gpt, `T` tool) so
each scenario can be read at a glance; token counts are chosen so every expected number can be
checked by hand. The property tests at the end run the planner on a few thousand seeded random
trajectories and check the invariants the issue asks for against an independent model of the
specification (`spec_head`, `spec_tail`), not against the planner's own helpers.

"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Sequence

import pytest

from trajectory_compressor.plan.protect import head_end, tail_start
from trajectory_compressor.plan.region import (
    MIN_SUMMARY_ROOM,
    NO_NET_SAVING,
    NO_REGION,
    PROTECTED_OVER_BUDGET,
    REGION_TOO_SMALL,
    UNDER_TARGET,
    Plan,
    plan_region,
    system_turn_in_head,
)
from trajectory_compressor.settings import PlanConfig
from trajectory_compressor.types import CompressionRegion

CODES = {"S": "system", "H": "human", "G": "gpt", "T": "tool"}
SWITCHES = ("protect_first_system", "protect_first_human", "protect_first_gpt", "protect_first_tool")
ALL_OFF = dict.fromkeys(SWITCHES, False)


def roles(spec: str) -> list[str]:
    """`"S H G T"` -> `["system", "human", "gpt", "tool"]`."""
    return [CODES[code] for code in spec.split()]


def only(*switches: str) -> dict[str, bool]:
    """Protect-first switches with only the named ones on."""
    return {name: name in switches for name in SWITCHES}


# --------------------------------------------------------------------------------------------
# An independent model of the specification, used by the property tests and for contrast.
# --------------------------------------------------------------------------------------------


def spec_tail(rs: Sequence[str], config: PlanConfig) -> int:
    """The last N turns; if they begin inside a tool-call group, the whole group joins the tail.
    If they begin with a user turn after a gpt or tool turn, that turn's group joins too (the
    summary before the tail is a user turn: two in a row break alternating templates)."""
    start = max(0, len(rs) - config.protect_last_n_turns)
    if start < len(rs):
        # Walk back to the group's opening (non-tool) turn.
        start = next((j for j in range(start, -1, -1) if rs[j] != "tool"), 0)
        if start > 0 and rs[start] == "human" and rs[start - 1] in ("gpt", "tool"):
            start = next((j for j in range(start - 1, -1, -1) if rs[j] != "tool"), 0)
    return start


def spec_protected_firsts(rs: Sequence[str], config: PlanConfig, limit: int) -> set[int]:
    """Indices (below `limit`) of the protected first system/human/gpt turns and the first gpt's tools."""
    firsts: dict[str, int] = {}
    for index, role in enumerate(rs[:limit]):
        firsts.setdefault(role, index)
    protected = {
        firsts[role]
        for role, switch in (
            ("system", config.protect_first_system),
            ("human", config.protect_first_human),
            ("gpt", config.protect_first_gpt),
        )
        if switch and role in firsts
    }
    if config.protect_first_tool and "gpt" in firsts:
        index = firsts["gpt"] + 1
        while index < limit and rs[index] == "tool":
            protected.add(index)
            index += 1
    return protected


def spec_head(rs: Sequence[str], config: PlanConfig, limit: int) -> int:
    """Shortest prefix holding the protected first turns below `limit`, never ending before a tool."""
    protected = spec_protected_firsts(rs, config, limit)
    end = max(protected) + 1 if protected else 0
    while end < limit and rs[end] == "tool":
        end += 1
    # Ending on a user turn that a gpt turn answers (a greeting first: S G H), the answer and its
    # results join: the summary after the head is a user turn.
    if 0 < end < limit and rs[end - 1] == "human" and rs[end] == "gpt":
        end += 1
        while end < limit and rs[end] == "tool":
            end += 1
    return end


def reference_split(rs: Sequence[str], config: PlanConfig) -> tuple[int, int]:
    """The reference tool's region: first occurrences (any tool turn) + last N, split at n // 2."""
    n = len(rs)
    protected = {
        rs.index(role)
        for role, switch in (
            ("system", config.protect_first_system),
            ("human", config.protect_first_human),
            ("gpt", config.protect_first_gpt),
            ("tool", config.protect_first_tool),
        )
        if switch and role in rs
    }
    protected.update(range(max(0, n - config.protect_last_n_turns), n))
    head = [i for i in protected if i < n // 2]
    tail = [i for i in protected if i >= n // 2]
    return (max(head) + 1 if head else 0), (min(tail) if tail else n)


# --------------------------------------------------------------------------------------------
# The basic 10-turn trajectory.
# --------------------------------------------------------------------------------------------

#            0    1    2    3    4    5    6    7    8    9
BASIC = roles("S    H    G    H    G    T    G    T    H    G")
BASIC_COUNTS = [200, 300, 400, 500, 600, 700, 100, 100, 100, 100]  # total 3100


def test_basic_head_and_tail() -> None:
    config = PlanConfig()
    # The first gpt turn (2) calls no tool, so the head is S H G; the last 4 turns start at 6.
    assert head_end(BASIC, config) == 3
    assert tail_start(BASIC, config) == 6


def test_basic_region_is_the_first_group_when_it_saves_enough() -> None:
    config = PlanConfig(target_max_tokens=2800, summary_target_tokens=100)
    plan = plan_region(BASIC, BASIC_COUNTS, config, notice_tokens=10)
    # needed = 3100 - 2800 + 100 + 10 = 410; turn 3 alone saves 500.
    assert plan == Plan(
        total_tokens=3100,
        region=CompressionRegion(3, 4),
        region_tokens=500,
        summary_tokens=100,
        notice_tokens=10,
        estimated_tokens=3100 - 500 + 100 + 10,
        still_over_limit=False,
        reason=None,
    )
    assert plan.region is not None


def test_basic_region_takes_the_tool_results_of_its_last_gpt_turn() -> None:
    config = PlanConfig(target_max_tokens=2500, summary_target_tokens=100)
    plan = plan_region(BASIC, BASIC_COUNTS, config, notice_tokens=10)
    # needed = 710: turns 3 + 4 reach it (1100), and turn 5 answers turn 4, so it comes too.
    assert plan.region == CompressionRegion(3, 6)
    assert plan.region_tokens == 1800
    assert plan.estimated_tokens == 3100 - 1800 + 110 == 1410
    assert not plan.still_over_limit
    assert plan.reason is None


def test_summary_tokens_defaults_to_the_configured_budget() -> None:
    config = PlanConfig(target_max_tokens=2800, summary_target_tokens=100)
    assert plan_region(BASIC, BASIC_COUNTS, config) == plan_region(BASIC, BASIC_COUNTS, config, summary_tokens=100)
    assert plan_region(BASIC, BASIC_COUNTS, config).summary_tokens == 100


def test_planner_does_not_mutate_its_inputs_and_accepts_tuples() -> None:
    config = PlanConfig(target_max_tokens=2500, summary_target_tokens=100)
    rs, counts = list(BASIC), list(BASIC_COUNTS)
    from_lists = plan_region(rs, counts, config, notice_tokens=10)
    assert rs == BASIC and counts == BASIC_COUNTS
    assert plan_region(tuple(rs), tuple(counts), config, notice_tokens=10) == from_lists


# --------------------------------------------------------------------------------------------
# Too short, last N = 0, empty, under target, length mismatch.
# --------------------------------------------------------------------------------------------


def test_too_short_to_compress_leaves_the_row_and_flags_it() -> None:
    rs = roles("S H G T H G")  # head S H G T = [0, 4); the last 4 turns start at 2
    counts = [1000] * 6
    config = PlanConfig(target_max_tokens=2000, summary_target_tokens=100)
    assert head_end(rs, config) == 4
    assert tail_start(rs, config) == 2
    plan = plan_region(rs, counts, config, notice_tokens=10)
    # Every turn is protected, so the protected turns alone are over the target.
    assert plan == Plan(6000, None, 0, 0, 0, 6000, True, PROTECTED_OVER_BUDGET)
    assert plan.region is None
    # With the row under the target (and skipping off) there is simply nothing to compress.
    relaxed = PlanConfig(target_max_tokens=7000, summary_target_tokens=100)
    assert plan_region(rs, counts, relaxed, skip_under_target=False) == Plan(
        6000, None, 0, 0, 0, 6000, False, NO_REGION
    )


def test_too_short_but_under_target_is_skipped_not_flagged() -> None:
    plan = plan_region(roles("S H G"), [10, 10, 10], PlanConfig(target_max_tokens=100))
    assert plan == Plan(30, None, 0, 0, 0, 30, False, UNDER_TARGET)


def test_last_n_zero_lets_the_region_reach_the_last_turn() -> None:
    rs = roles("S H G T G T G T")
    counts = [100] * 8
    config = PlanConfig(target_max_tokens=500, summary_target_tokens=50, protect_last_n_turns=0)
    assert tail_start(rs, config) == 8
    assert head_end(rs, config) == 4
    # needed = 800 - 500 + 50 = 350: turns 4..6 reach it, and the trailing tool turn 7 joins.
    plan = plan_region(rs, counts, config)
    assert plan.region == CompressionRegion(4, 8)
    assert plan.region_tokens == 400
    assert plan.estimated_tokens == 450
    assert not plan.still_over_limit


def test_last_n_zero_keeps_the_greedy_minimum() -> None:
    rs = roles("S H G H G G T G")
    config = PlanConfig(target_max_tokens=700, summary_target_tokens=50, protect_last_n_turns=0)
    plan = plan_region(rs, [100] * 8, config)  # needed = 150: turns 3 and 4
    assert plan.region == CompressionRegion(3, 5)


def test_last_n_larger_than_the_trajectory_protects_everything() -> None:
    config = PlanConfig(target_max_tokens=100, summary_target_tokens=10, protect_last_n_turns=50)
    rs = roles("S H G H G H G")
    assert tail_start(rs, config) == 0
    plan = plan_region(rs, [100] * 7, config)
    assert plan == Plan(700, None, 0, 0, 0, 700, True, PROTECTED_OVER_BUDGET)


def test_empty_trajectory() -> None:
    config = PlanConfig()
    assert head_end([], config) == 0
    assert tail_start([], config) == 0
    assert plan_region([], [], config) == Plan(0, None, 0, 0, 0, 0, False, UNDER_TARGET)
    assert plan_region([], [], config, skip_under_target=False).reason == NO_REGION


def test_under_target_is_skipped_and_exactly_at_target_too() -> None:
    config = PlanConfig(target_max_tokens=3100, summary_target_tokens=100)
    plan = plan_region(BASIC, BASIC_COUNTS, config, notice_tokens=10)
    assert plan == Plan(3100, None, 0, 0, 0, 3100, False, UNDER_TARGET)
    over_by_one = plan_region(BASIC, BASIC_COUNTS, PlanConfig(target_max_tokens=3099), notice_tokens=10)
    assert over_by_one.region is not None


def test_under_target_with_skip_disabled_is_not_compressed_for_no_gain() -> None:
    config = PlanConfig(target_max_tokens=10_000, summary_target_tokens=100)
    plan = plan_region(BASIC, BASIC_COUNTS, config, notice_tokens=10, skip_under_target=False)
    assert plan.region is None
    assert not plan.still_over_limit
    assert plan.estimated_tokens == 3100
    assert plan.reason == NO_NET_SAVING


@pytest.mark.parametrize(("rs", "counts"), [(BASIC, BASIC_COUNTS[:-1]), (BASIC[:-1], BASIC_COUNTS), ([], [1])])
def test_length_mismatch_is_an_error(rs: list[str], counts: list[int]) -> None:
    with pytest.raises(ValueError, match="same length"):
        plan_region(rs, counts, PlanConfig(target_max_tokens=10**9))


# --------------------------------------------------------------------------------------------
# The system notice.
# --------------------------------------------------------------------------------------------


def test_no_system_turn_counts_no_notice() -> None:
    rs = roles("H G H G G T G T")  # head [0, 2), tail [6, 8) with N = 2
    config = PlanConfig(target_max_tokens=700, summary_target_tokens=50, protect_last_n_turns=2)
    plan = plan_region(rs, [100] * 8, config, notice_tokens=50)
    # needed = 800 - 700 + 50 = 150 (no notice): turns 2 and 3.
    assert plan.region == CompressionRegion(2, 4)
    assert plan.notice_tokens == 0
    assert plan.estimated_tokens == 800 - 200 + 50


def test_notice_tokens_count_towards_the_needed_saving() -> None:
    rs = roles("S H G H G G G G G")  # head [0, 3), tail [7, 9) with N = 2 (text replies in a row)
    config = PlanConfig(target_max_tokens=800, summary_target_tokens=50, protect_last_n_turns=2)
    counts = [100] * 9
    # needed = 900 - 800 + 50 + 50 = 200: exactly turns 3 and 4.
    fits = plan_region(rs, counts, config, notice_tokens=50)
    assert fits.region == CompressionRegion(3, 5)
    assert fits.notice_tokens == 50
    assert fits.estimated_tokens == 900 - 200 + 50 + 50 == 800
    assert not fits.still_over_limit
    # One more notice token and two turns are no longer enough.
    one_more = plan_region(rs, counts, config, notice_tokens=51)
    assert one_more.region == CompressionRegion(3, 6)
    assert one_more.estimated_tokens == 900 - 300 + 50 + 51


def test_notice_counts_for_an_unprotected_system_turn_that_stays_in_the_head() -> None:
    # protect_first_system off, but the system turn precedes the protected human turn: it is kept,
    # and it is the turn that receives the notice.
    rs = roles("S H G H G H G H G")
    config = PlanConfig(
        target_max_tokens=800, summary_target_tokens=50, protect_last_n_turns=2, protect_first_system=False
    )
    assert system_turn_in_head(rs, head_end(rs, config)) == 0
    assert plan_region(rs, [100] * 9, config, notice_tokens=50).notice_tokens == 50


def test_no_notice_when_the_system_turn_is_not_in_the_head() -> None:
    rs = roles("S H G H G H G H G")
    config = PlanConfig(target_max_tokens=800, summary_target_tokens=50, protect_last_n_turns=2, **ALL_OFF)
    plan = plan_region(rs, [100] * 9, config, notice_tokens=50)
    # Nothing is protected at the front, so the region starts at the system turn itself.
    assert plan.region is not None and plan.region.start == 0
    assert plan.notice_tokens == 0
    assert plan.region == CompressionRegion(0, 2)  # needed = 900 - 800 + 50 = 150
    assert system_turn_in_head(rs, 0) is None


# --------------------------------------------------------------------------------------------
# The protect-first switches.
# --------------------------------------------------------------------------------------------

NO_TOOL_FIRST = "S H G H G T H G H G H G"  # the first gpt turn (2) calls no tool; turn 5 is a later tool
TOOL_FIRST = "S H G T T H G H G H G H G"  # the first gpt turn (2) is answered by tools 3 and 4


@pytest.mark.parametrize(
    ("spec", "switches", "expected_head"),
    [
        (NO_TOOL_FIRST, ALL_OFF, 0),
        (NO_TOOL_FIRST, only("protect_first_system"), 1),
        # A head ending on a user turn takes the gpt turn answering it (the summary is a user turn).
        (NO_TOOL_FIRST, only("protect_first_human"), 3),
        (NO_TOOL_FIRST, only("protect_first_gpt"), 3),
        # The tool switch protects the first gpt turn's results only; a later tool is middle.
        (NO_TOOL_FIRST, only("protect_first_tool"), 0),
        (NO_TOOL_FIRST, dict.fromkeys(SWITCHES, True), 3),
        (TOOL_FIRST, ALL_OFF, 0),
        (TOOL_FIRST, only("protect_first_system"), 1),
        (TOOL_FIRST, only("protect_first_human"), 5),
        (TOOL_FIRST, only("protect_first_system", "protect_first_human"), 5),
        # Protecting the tool results protects the call they answer (the shortest prefix).
        (TOOL_FIRST, only("protect_first_tool"), 5),
        # Protecting the call keeps its results with it: the region never starts on a tool turn.
        (TOOL_FIRST, only("protect_first_gpt"), 5),
        (TOOL_FIRST, dict.fromkeys(SWITCHES, True), 5),
    ],
)
def test_protect_first_switches(spec: str, switches: dict[str, bool], expected_head: int) -> None:
    rs = roles(spec)
    config = PlanConfig(target_max_tokens=100, summary_target_tokens=10, protect_last_n_turns=2, **switches)
    assert head_end(rs, config) == expected_head
    # The last 2 turns open on a user turn: the gpt turn before it joins the tail.
    assert tail_start(rs, config) == len(rs) - 3
    plan = plan_region(rs, [100] * len(rs), config)
    # More than the whole middle is needed: the region runs from the head to the tail.
    assert plan.region == CompressionRegion(expected_head, len(rs) - 3)


def test_first_occurrences_out_of_order_still_give_the_shortest_prefix() -> None:
    rs = roles("H S H G H G H G")
    assert head_end(rs, PlanConfig()) == 4  # first human 0, system 1, gpt 3
    assert head_end(rs, PlanConfig(**only("protect_first_human"))) == 1


def test_leading_tool_turns_never_start_the_region() -> None:
    rs = roles("T T H G H G H G")
    assert head_end(rs, PlanConfig(**ALL_OFF)) == 2


# --------------------------------------------------------------------------------------------
# The summary is a user turn: never beside another (templates that want alternating roles, and
# LLaMA-Factory's converter, refuse two in a row).
# --------------------------------------------------------------------------------------------


def test_a_run_opening_with_the_assistant_s_greeting_keeps_the_answer_to_the_first_user_turn() -> None:
    #          0 1 2 3 4 5 6 7 8 9     tau-bench's shape: system, greeting, the user's request
    rs = roles("S G H G T H G H G H")
    assert head_end(rs, PlanConfig()) == 5  # S G H, then gpt 3 answering it and its result 4
    plan = plan_region(
        rs, [100] * 10, PlanConfig(target_max_tokens=850, summary_target_tokens=50, protect_last_n_turns=2)
    )
    assert plan.region == CompressionRegion(5, 8)  # needed = 1000 - 850 + 50: turns 5 and 6, then user turn 7
    assert rs[plan.region.start - 1] == "tool" and rs[plan.region.end] == "gpt"


@pytest.mark.parametrize(("last_n", "expected"), [(1, 7), (2, 7), (3, 4), (4, 4)])
def test_a_tail_opening_on_a_user_turn_takes_the_turn_before_it(last_n: int, expected: int) -> None:
    #          0 1 2 3 4 5 6 7 8
    rs = roles("S H G H G T H G H")
    assert tail_start(rs, PlanConfig(protect_last_n_turns=last_n)) == expected


def test_a_user_turn_after_the_greedy_cut_is_summarized_too() -> None:
    #          0 1 2 3 4 5 6 7 8 9
    rs = roles("S H G H G H H G G T")
    config = PlanConfig(target_max_tokens=900, summary_target_tokens=50, protect_last_n_turns=2)
    plan = plan_region(rs, [100] * 10, config)  # needed = 150: turns 3 and 4; then user turns 5, 6
    assert plan.region == CompressionRegion(3, 7)
    assert plan.estimated_tokens == 1000 - 400 + 50
    # A region that reaches the tail stops there: here the tail opens on the second of the input's
    # own two user turns in a row, which the summary cannot part.
    rs = roles("S H G H G H H")
    config = PlanConfig(target_max_tokens=600, summary_target_tokens=50, protect_last_n_turns=1)
    assert tail_start(rs, config) == 6
    assert plan_region(rs, [100] * 7, config).region == CompressionRegion(3, 6)


# --------------------------------------------------------------------------------------------
# Tool-call groups at the greedy cut and at the tail.
# --------------------------------------------------------------------------------------------


def test_tool_pair_straddling_the_greedy_cut_extends_the_region() -> None:
    #         0 1 2 3 4 5 6 7 8 9 10 11 12 13 14
    rs = roles("S H G H G T T H G T G  H  G  H  G")
    config = PlanConfig(target_max_tokens=1400, summary_target_tokens=100)
    # needed = 1500 - 1400 + 100 = 200: the cut falls after gpt turn 4, whose results are 5 and 6;
    # the user turn 7 after them comes too (the summary, a user turn, is never followed by one).
    plan = plan_region(rs, [100] * 15, config)
    assert plan.region == CompressionRegion(3, 8)
    assert plan.region_tokens == 500
    assert plan.estimated_tokens == 1500 - 500 + 100
    assert rs[plan.region.end] == "gpt"


def test_cut_inside_a_block_of_several_tool_turns_takes_the_whole_block() -> None:
    #         0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
    rs = roles("S H G H G T T T H G T  G  H  G  H  G")
    config = PlanConfig(target_max_tokens=1400, summary_target_tokens=100)
    # needed = 1600 - 1400 + 100 = 300: reached at the first tool turn (5); 6 and 7 come too, and
    # the user turn 8 after them.
    plan = plan_region(rs, [100] * 16, config)
    assert plan.region == CompressionRegion(3, 9)
    assert plan.region_tokens == 600
    assert plan.estimated_tokens == 1100


def test_tool_extension_counts_the_extra_tokens() -> None:
    rs = roles("S H G H G T T H G H G H G")
    counts = [10, 10, 10, 10, 10, 500, 7, 10, 10, 10, 10, 10, 10]
    config = PlanConfig(target_max_tokens=560, summary_target_tokens=5)
    # needed = 617 - 560 + 5 = 62 is reached at turn 5; turn 6 (7 tokens) is added as well, and the
    # user turn 7 (10) after it, up to the tail (the last 4 open on user turn 9: gpt turn 8 joins).
    plan = plan_region(rs, counts, config)
    assert plan.region == CompressionRegion(3, 8)
    assert plan.region_tokens == 537
    assert plan.estimated_tokens == 617 - 537 + 5


@pytest.mark.parametrize("last_n", [3, 4, 5])
def test_tail_beginning_with_tool_turns_takes_their_gpt_turn(last_n: int) -> None:
    #         0 1 2 3 4 5 6 7 8 9 10
    rs = roles("S H G H G H G T T H G")
    config = PlanConfig(target_max_tokens=200, summary_target_tokens=50, protect_last_n_turns=last_n)
    assert tail_start(rs, config) == 6
    plan = plan_region(rs, [100] * 11, config)
    assert plan.region == CompressionRegion(3, 6)
    assert plan.still_over_limit


def test_tail_of_only_tool_turns_after_the_head_leaves_no_region() -> None:
    rs = roles("S H G T T T")
    config = PlanConfig(target_max_tokens=100, summary_target_tokens=10, protect_last_n_turns=2)
    assert tail_start(rs, config) == 2
    assert plan_region(rs, [100] * 6, config) == Plan(600, None, 0, 0, 0, 600, True, PROTECTED_OVER_BUDGET)


# --------------------------------------------------------------------------------------------
# Net saving, protected turns over budget, region too small.
# --------------------------------------------------------------------------------------------

#               0 1 2 3 4 5 6     head [0, 3), middle [3, 5), tail [5, 7) with N = 2
GUARD = roles("S H G H G G T")


def test_net_savings_guard_region_no_larger_than_summary_and_notice() -> None:
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=50, protect_last_n_turns=2)
    counts = [100, 100, 100, 30, 30, 300, 400]  # middle 60 == summary 50 + notice 10
    plan = plan_region(GUARD, counts, config, notice_tokens=10)
    assert plan.region is None
    assert plan.still_over_limit
    assert plan.estimated_tokens == plan.total_tokens == 1060
    assert plan.reason not in (None, UNDER_TARGET)


def test_net_savings_guard_boundary_one_token_more_compresses() -> None:
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=50, protect_last_n_turns=2)
    counts = [100, 100, 100, 31, 30, 300, 400]  # middle 61 > 60
    plan = plan_region(GUARD, counts, config, notice_tokens=10)
    assert plan.region == CompressionRegion(3, 5)
    assert plan.region_tokens == 61
    assert plan.estimated_tokens == 1061 - 61 + 60
    assert plan.still_over_limit  # protected 1000 + summary 50 + notice 10 > 1000


def test_net_savings_guard_ignores_the_notice_without_a_system_turn() -> None:
    rs = roles("H G H G G T")  # head [0, 2), middle [2, 4), tail [4, 6)
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=50, protect_last_n_turns=2)
    plan = plan_region(rs, [100, 100, 30, 30, 400, 400], config, notice_tokens=10)
    assert plan.region == CompressionRegion(2, 4)  # 60 > 50: only the summary counts here
    assert plan.notice_tokens == 0


def test_net_savings_guard_reason_when_protected_turns_fit() -> None:
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=50, protect_last_n_turns=2)
    counts = [100, 100, 100, 30, 30, 300, 400]  # protected 1000 <= target 1000
    assert plan_region(GUARD, counts, config, notice_tokens=10).reason == NO_NET_SAVING


def test_net_savings_guard_when_protected_turns_alone_exceed_the_target() -> None:
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=50, protect_last_n_turns=2)
    counts = [500, 500, 500, 10, 10, 100, 100]  # protected 1700 > 1000, middle 20 <= 50
    plan = plan_region(GUARD, counts, config)
    assert plan == Plan(1720, None, 0, 0, 0, 1720, True, PROTECTED_OVER_BUDGET)


#                 0 1 2 3 4 5 6 7 8     head [0, 3), middle [3, 7), tail [7, 9) with N = 2
SANDWICH = roles("S H G H G H G G T")


def test_protected_turns_alone_over_budget_compress_all_and_flag() -> None:
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=50, protect_last_n_turns=2)
    counts = [500, 500, 500, 100, 100, 100, 100, 100, 100]  # protected 1700 > target
    plan = plan_region(SANDWICH, counts, config, notice_tokens=5)
    assert plan == Plan(
        total_tokens=2100,
        region=CompressionRegion(3, 7),
        region_tokens=400,
        summary_tokens=50,
        notice_tokens=5,
        estimated_tokens=2100 - 400 + 55,
        still_over_limit=True,
        reason=PROTECTED_OVER_BUDGET,
    )


def test_whole_region_not_enough_summarizes_all_of_it_and_flags() -> None:
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=100, protect_last_n_turns=2)
    counts = [300, 300, 300, 100, 100, 100, 100, 25, 25]  # protected 950 fits, + summary does not
    plan = plan_region(SANDWICH, counts, config)
    assert plan.region == CompressionRegion(3, 7)
    assert plan.region_tokens == 400
    assert plan.estimated_tokens == 1350 - 400 + 100 == 1050
    assert plan.still_over_limit
    assert plan.reason in (REGION_TOO_SMALL, PROTECTED_OVER_BUDGET)


def test_a_row_a_full_budget_summary_leaves_over_gets_the_room_it_has() -> None:
    """`summary_room`: with the anchor index a summary fills its budget, so a row over at the full
    budget is asked for a summary that fits it, when one of `MIN_SUMMARY_ROOM` tokens or more can."""
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=200, protect_last_n_turns=2)
    counts = [300, 300, 300, 100, 100, 100, 100, 5, 5]  # protected 910: room for a summary of 90
    plan = plan_region(SANDWICH, counts, config)
    assert plan.still_over_limit and plan.summary_room(200, 1000) == 90
    assert not plan_region(SANDWICH, counts, config, summary_tokens=90).still_over_limit
    fits = plan_region(SANDWICH, [100] * 9, config)
    assert not fits.still_over_limit and fits.summary_room(200, 1000) == 200  # fits: the budget
    tight = plan_region(SANDWICH, [300, 300, 300, 100, 100, 100, 100, 25, 25], config)  # room 50
    assert tight.summary_room(200, 1000) == 200 and MIN_SUMMARY_ROOM > 50
    over = plan_region(SANDWICH, [400, 400, 400, 100, 100, 100, 100, 25, 25], config)  # no room at all
    assert over.summary_room(200, 1000) == 200


def test_whole_region_not_enough_reason_is_region_too_small() -> None:
    config = PlanConfig(target_max_tokens=1000, summary_target_tokens=100, protect_last_n_turns=2)
    counts = [300, 300, 300, 100, 100, 100, 100, 25, 25]  # protected 950 <= target 1000
    assert plan_region(SANDWICH, counts, config).reason == REGION_TOO_SMALL


# --------------------------------------------------------------------------------------------
# The reference's n // 2 split, and a first occurrence inside the tail.
# --------------------------------------------------------------------------------------------


def test_late_first_tool_turn_does_not_shrink_the_region() -> None:
    #          0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
    rs = roles("S H G H G H G T H G H  G  H  G  H  G")
    counts = [100, 100, 100, 1000, 1000, 1000, 1000, 1000, 100, 100, 100, 100, 100, 100, 100, 100]
    total = sum(counts)  # 6100
    config = PlanConfig(target_max_tokens=4000, summary_target_tokens=200)
    plan = plan_region(rs, counts, config)
    # The first tool turn (7) answers gpt turn 6, not the first gpt turn: it is ordinary middle.
    assert plan.region == CompressionRegion(3, 6)  # needed = 2300: turns 3, 4, 5
    assert plan.estimated_tokens == total - 3000 + 200 == 3300
    assert not plan.still_over_limit
    # The reference protects turn 7 and, since it falls below n // 2 = 8, starts its region at 8:
    # the heavy turns are out of reach and the row would stay over the limit.
    ref_start, ref_end = reference_split(rs, config)
    assert (ref_start, ref_end) == (8, 12)
    assert total - sum(counts[ref_start:ref_end]) + 200 > config.target_max_tokens


def test_late_first_tool_turn_past_the_middle_does_not_cut_the_region_short() -> None:
    #          0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
    rs = roles("S H G H G H G H G G T  G  H  G  H  G")
    counts = [100] * 9 + [1000, 1000, 1000] + [100] * 4
    total = sum(counts)  # 4300
    config = PlanConfig(target_max_tokens=2000, summary_target_tokens=100)
    plan = plan_region(rs, counts, config)
    assert plan.region == CompressionRegion(3, 11)  # needed = 2400: through turn 9 and its tool 10
    assert plan.estimated_tokens == total - 2600 + 100
    assert not plan.still_over_limit
    # The reference protects the first tool turn (10 >= n // 2) as "tail" and ends its region there.
    ref_start, ref_end = reference_split(rs, config)
    assert (ref_start, ref_end) == (3, 10)
    assert total - sum(counts[ref_start:ref_end]) + 100 > config.target_max_tokens


def test_first_gpt_inside_the_tail_belongs_to_the_tail() -> None:
    #          0 1 2 3 4 5 6 7 8
    rs = roles("S H H H G T G H G")  # the first gpt turn (4) is inside the last 4 turns' group
    counts = [100, 100, 2000, 2000, 100, 100, 100, 100, 100]
    config = PlanConfig(target_max_tokens=3000, summary_target_tokens=100)
    assert tail_start(rs, config) == 4
    plan = plan_region(rs, counts, config)
    # Head is S H; needed = 4700 - 3000 + 100 = 1800, reached by turn 2; the user turn 3 comes too.
    assert plan.region == CompressionRegion(2, 4)
    assert plan.estimated_tokens == 4700 - 4000 + 100
    assert not plan.still_over_limit


# --------------------------------------------------------------------------------------------
# The second pass.
# --------------------------------------------------------------------------------------------


def test_second_pass_with_the_real_summary_size_takes_a_larger_region() -> None:
    config = PlanConfig(target_max_tokens=2800, summary_target_tokens=100)
    first = plan_region(BASIC, BASIC_COUNTS, config, notice_tokens=10)
    assert first.region == CompressionRegion(3, 4)
    real_summary = 300  # overshot its 100-token budget
    assert first.total_tokens - first.region_tokens + real_summary + 10 > config.target_max_tokens
    second = plan_region(BASIC, BASIC_COUNTS, config, notice_tokens=10, summary_tokens=real_summary)
    # needed = 3100 - 2800 + 300 + 10 = 610: turns 3, 4 and turn 4's tool result 5.
    assert second == Plan(3100, CompressionRegion(3, 6), 1800, 300, 10, 3100 - 1800 + 310, False, None)


def test_smaller_summary_tokens_than_the_budget_is_honoured() -> None:
    config = PlanConfig(target_max_tokens=2500, summary_target_tokens=100)
    # needed = 3100 - 2500 + 0 = 600: turns 3 and 4 (and 4's tool result).
    plan = plan_region(BASIC, BASIC_COUNTS, config, summary_tokens=0)
    assert plan.summary_tokens == 0
    assert plan.region == CompressionRegion(3, 6)
    # needed = 500 exactly: turn 3 alone.
    assert plan_region(BASIC, BASIC_COUNTS, PlanConfig(target_max_tokens=2600), summary_tokens=0).region == (
        CompressionRegion(3, 4)
    )


# --------------------------------------------------------------------------------------------
# Property tests over seeded random trajectories.
# --------------------------------------------------------------------------------------------

SEEDS = range(3000)


def random_case(seed: int) -> tuple[list[str], list[int], PlanConfig, int, int | None, bool]:
    """A plausible trajectory (system? human gpt [tool...] gpt ... human ...) and planner inputs."""
    rng = random.Random(seed)
    rs: list[str] = []
    if rng.random() < 0.8:
        rs.append("system")
    if rng.random() < 0.15:
        rs.append("gpt")  # the assistant's greeting first (tau-bench: S G H ...)
    for _ in range(rng.randint(1, 5)):
        rs.append("human")
        if rng.random() < 0.1:
            rs.append("human")  # a follow-up before the assistant answers
        for _ in range(rng.randint(1, 4)):
            rs.append("gpt")
            rs.extend(["tool"] * rng.choice((0, 0, 1, 1, 2, 3)))
    if rng.random() < 0.1:
        del rs[rng.randint(1, len(rs)) :]  # a run cut off mid-way (may end on a tool turn)

    def count() -> int:
        return rng.choice((rng.randint(0, 40), rng.randint(40, 600), rng.randint(600, 4000)))

    counts = [count() for _ in rs]
    total = sum(counts)
    target = max(2, int(total * rng.uniform(0.15, 1.2)))
    config = PlanConfig(
        target_max_tokens=target,
        summary_target_tokens=rng.randint(1, max(1, target // 3)),
        protect_last_n_turns=rng.randint(0, 7),
        **{name: rng.random() < 0.8 for name in SWITCHES},
    )
    notice = rng.choice((0, rng.randint(1, 40)))
    summary = None if rng.random() < 0.7 else rng.randint(0, 3 * config.summary_target_tokens)
    skip = rng.random() < 0.85
    # Exact boundaries, where off-by-one mistakes live: the row exactly at the target, the needed
    # saving reached exactly at a turn, the middle exactly as large as the summary and notice.
    tail = spec_tail(rs, config)
    head = spec_head(rs, config, limit=tail)
    notice_paid = notice if "system" in rs[:head] else 0
    new_text = (config.summary_target_tokens if summary is None else summary) + notice_paid
    boundary = rng.random()
    if boundary < 0.05 and total > config.summary_target_tokens:
        config = dataclasses.replace(config, target_max_tokens=total)
    elif boundary < 0.15 and head < tail:
        target = total + new_text - sum(counts[head : rng.randint(head + 1, tail)])
        if target > config.summary_target_tokens:
            config = dataclasses.replace(config, target_max_tokens=target)
    elif boundary < 0.2 and head < tail:
        summary = max(0, sum(counts[head:tail]) - notice_paid)
    return rs, counts, config, notice, summary, skip


def check_plan(
    rs: list[str],
    counts: list[int],
    config: PlanConfig,
    notice: int,
    summary_override: int | None,
    skip: bool,
    plan: Plan,
) -> str:
    """Assert every invariant of one plan; return the outcome's kind (for coverage counting)."""
    n = len(rs)
    total = sum(counts)
    target = config.target_max_tokens
    summary = config.summary_target_tokens if summary_override is None else summary_override
    tail = spec_tail(rs, config)
    head = spec_head(rs, config, limit=tail)
    why = f"roles={rs} counts={counts} {config} notice={notice} summary={summary} skip={skip} -> {plan}"

    assert plan.total_tokens == total, why
    assert plan.still_over_limit == (plan.estimated_tokens > target), why
    if skip and total <= target:
        assert plan == Plan(total, None, 0, 0, 0, total, False, UNDER_TARGET), why
        return "under target"

    if plan.region is None:
        assert plan.region_tokens == plan.summary_tokens == plan.notice_tokens == 0, why
        assert plan.estimated_tokens == total, why
        assert plan.reason is not None, why
        if total > target:
            assert plan.reason != UNDER_TARGET, why
            # Not compressing an over-target row needs a reason that holds: every turn protected
            # (then the protected turns alone are over), or a middle no larger than the summary and
            # notice would be.
            if head >= tail:
                assert plan.reason == PROTECTED_OVER_BUDGET, why
                return "no region"
            new_text = summary + (notice if "system" in rs[:head] else 0)
            assert sum(counts[head:tail]) <= new_text, why
            assert plan.reason in (NO_NET_SAVING, PROTECTED_OVER_BUDGET), why
            return "guard"
        return "under target, skip off"

    region = plan.region
    assert region is not None
    start, end = region.start, region.end
    # Where the region lies: right after the head, before the tail, on group boundaries.
    assert start == head, why
    assert head <= start < end <= tail <= n, why
    assert rs[start] != "tool", why
    assert end == n or rs[end] != "tool", why
    # The summary (a user turn) is next to no other: the region absorbs a user turn after it, up
    # to the tail, which never opens on one after a gpt or tool turn, nor does the head end on one
    # that a gpt turn answers.
    assert end == n or rs[end] != "human" or (end == tail and rs[end - 1] not in ("gpt", "tool")), why
    assert not (start > 0 and rs[start - 1] == "human" and rs[start] == "gpt"), why
    protected = spec_protected_firsts(rs, config, limit=n) | set(range(n - config.protect_last_n_turns, n))
    assert not protected & set(range(start, end)), why
    # The arithmetic.
    expected_notice = notice if "system" in rs[:start] else 0
    assert plan.summary_tokens == summary, why
    assert plan.notice_tokens == expected_notice, why
    assert plan.region_tokens == sum(counts[start:end]), why
    new_text = summary + expected_notice
    assert plan.estimated_tokens == total - plan.region_tokens + new_text, why
    assert plan.region_tokens > new_text, why  # net saving
    # Greedy: enough unless it is the whole middle, and dropping the last group is not enough.
    needed = total - target + new_text
    if end < tail:
        assert plan.region_tokens >= needed, why
    last_group = max((j for j in range(start, end) if rs[j] not in ("tool", "human")), default=start)
    assert sum(counts[start:last_group]) < needed, why
    if plan.still_over_limit:
        assert end == tail, why
        assert plan.reason in (REGION_TOO_SMALL, PROTECTED_OVER_BUDGET), why
        return "compressed, still over"
    assert plan.reason is None, why
    if end - 1 > start and rs[end - 1] == "human":
        return "compressed, user turn absorbed"
    return "compressed" + (", tool extension" if rs[end - 1] == "tool" else "")


def test_property_every_plan_meets_the_invariants() -> None:
    outcomes: Counter[str] = Counter()
    for seed in SEEDS:
        rs, counts, config, notice, summary, skip = random_case(seed)
        plan = plan_region(rs, counts, config, notice_tokens=notice, summary_tokens=summary, skip_under_target=skip)
        outcomes[check_plan(rs, counts, config, notice, summary, skip, plan)] += 1
        if spec_tail(rs, config) < max(0, len(rs) - config.protect_last_n_turns):
            outcomes["tail took a gpt turn"] += 1
        if plan.notice_tokens:
            outcomes["notice counted"] += 1
    # The generator must reach every branch, or the invariants above would hold vacuously.
    for kind in (
        "under target",
        "under target, skip off",
        "no region",
        "guard",
        "compressed",
        "compressed, tool extension",
        "compressed, user turn absorbed",
        "compressed, still over",
        "tail took a gpt turn",
        "notice counted",
    ):
        assert outcomes[kind] >= 10, (kind, outcomes)


def test_property_head_and_tail_match_the_specification() -> None:
    for seed in SEEDS:
        rs, _, config, *_ = random_case(seed)
        tail = tail_start(rs, config)
        assert tail == spec_tail(rs, config), (seed, rs, config)
        head = head_end(rs, config)
        assert head == spec_head(rs, config, limit=len(rs)), (seed, rs, config)
        assert head == len(rs) or rs[head] != "tool", (seed, rs)
        assert tail in (0, len(rs)) or rs[tail] != "tool", (seed, rs)


def test_property_second_pass_with_a_larger_summary_never_shrinks_the_region() -> None:
    grew = 0
    for seed in SEEDS:
        rs, counts, config, notice, _, _ = random_case(seed)
        first = plan_region(rs, counts, config, notice_tokens=notice)
        if first.region is None or first.still_over_limit:
            continue
        real = config.summary_target_tokens + 1 + random.Random(seed).randint(0, 2000)
        second = plan_region(rs, counts, config, notice_tokens=notice, summary_tokens=real)
        check_plan(rs, counts, config, notice, real, True, second)
        if second.region is not None:
            assert second.summary_tokens == real, seed
            assert second.region.start == first.region.start, seed
            assert second.region.end >= first.region.end, seed
            grew += second.region.end > first.region.end
    assert grew >= 10


def test_property_planning_is_deterministic_and_pure() -> None:
    for seed in range(0, 3000, 7):
        rs, counts, config, notice, summary, skip = random_case(seed)
        rs_copy, counts_copy = list(rs), list(counts)
        kwargs = {"notice_tokens": notice, "summary_tokens": summary, "skip_under_target": skip}
        assert plan_region(rs, counts, config, **kwargs) == plan_region(rs_copy, counts_copy, config, **kwargs)
        assert (rs, counts) == (rs_copy, counts_copy)


def test_property_reasons_and_in_tail_firsts_follow_the_specification() -> None:
    for seed in SEEDS:
        rs, counts, config, notice, summary, skip = random_case(seed)
        plan = plan_region(rs, counts, config, notice_tokens=notice, summary_tokens=summary, skip_under_target=skip)
        total, target = sum(counts), config.target_max_tokens
        if total <= target:
            continue
        tail = spec_tail(rs, config)
        head = spec_head(rs, config, limit=tail)
        protected = total - sum(counts[head:tail])
        new_text = (config.summary_target_tokens if summary is None else summary) + (
            notice if "system" in rs[:head] else 0
        )
        if head < tail and sum(counts[head:tail]) > new_text:
            assert plan.region is not None, seed
        if plan.still_over_limit and head < tail:
            too_big = protected > target
            if plan.region is not None:
                assert plan.reason == (PROTECTED_OVER_BUDGET if too_big else REGION_TOO_SMALL), seed
            else:
                assert plan.reason == (PROTECTED_OVER_BUDGET if too_big else NO_NET_SAVING), seed


# --------------------------------------------------------------------------------------------
# `--over-limit truncate`: the cut removes just enough, a call with its results.
# --------------------------------------------------------------------------------------------


def test_truncate_removing_exactly_the_excess_stops_there() -> None:
    from trajectory_compressor.plan.truncate import truncate_middle

    # Middle [2, 8): groups G T | G T T | G; the last group (turn 7) holds exactly the excess.
    rs = roles("S H G T G T T G H G")
    counts = [5, 5, 10, 20, 10, 30, 40, 60, 5, 5]
    assert truncate_middle(rs, counts, 2, 8, 60) == 7
    # One token more needs the next group too: the call at 4 with both its results.
    assert truncate_middle(rs, counts, 2, 8, 61) == 4
    assert truncate_middle(rs, counts, 2, 8, 140) == 4
    # Cutting from 2 would leave two human turns in a row (1 and 8): the deepest cut stops at 4.
    assert truncate_middle(rs, counts, 2, 8, 141) == 4
    assert truncate_middle(rs, counts, 2, 8, 10_000) == 4, "the most a cut may take when even that is not enough"


def test_truncate_never_cuts_a_lone_human_turn_between_two_assistant_turns() -> None:
    """A tau-bench row: the user's message just before the tail, alone, held the excess; cut,
    two gpt turns stood in a row and the reply answered a question no longer there."""
    from trajectory_compressor.plan.truncate import truncate_middle

    rs = roles("S H G H G T G H G")  # the tail is the last gpt turn (8)
    counts = [5, 5, 10, 10, 10, 10, 10, 30, 10]
    cut = truncate_middle(rs, counts, 2, 8, 25)
    assert cut == 6, "the exchange before the human turn goes with it: tool 5 is then followed by gpt 8"
    kept = [*rs[:cut], *rs[8:]]
    assert "gpt gpt" not in " ".join(kept)
    # The turn written before the middle decides whether all of it may go: a summary (a human
    # turn) may precede gpt 8; a gpt turn may not.
    assert truncate_middle(rs, counts, 2, 8, 10_000, before="human") == 2
    assert truncate_middle(rs, counts, 2, 8, 10_000, before="gpt") == 4
    assert truncate_middle(roles("S H G H G"), [1] * 5, 3, 4, 1) == 4, "the lone human turn stays: nothing is cut"


_MAY_FOLLOW = {"gpt": ("human", "tool"), "human": ("gpt", "tool")}


def spec_truncate(
    rs: Sequence[str], counts: Sequence[int], start: int, stop: int, excess: int, before: str | None
) -> int:
    """The largest allowed cut b in [start, stop) whose turns [b, stop) hold >= excess tokens; the
    smallest allowed cut when none is enough; `stop` when none is allowed. A cut is allowed at a
    turn that is not a tool turn, where the turn before it (`before` for `start`) may precede
    the turn at `stop` (any, when the row ends there)."""
    allowed = [
        b
        for b in range(start, stop)
        if rs[b] != "tool"
        and (stop == len(rs) or (before if b == start else rs[b - 1]) in _MAY_FOLLOW.get(rs[stop], ()))
    ]
    enough = [b for b in allowed if sum(counts[b:stop]) >= excess]
    return max(enough) if enough else min(allowed, default=stop)


def test_property_truncate_cuts_the_fewest_whole_groups() -> None:
    from trajectory_compressor.plan.truncate import truncate_middle

    rng = random.Random(10)
    for _ in range(3000):
        n = rng.randint(2, 14)
        rs = [rng.choice(["human", "gpt", "tool", "tool"]) for _ in range(n)]
        counts = [rng.randint(0, 50) for _ in range(n)]
        start = rng.randint(0, n)
        stop = rng.randint(start, n)
        excess = rng.randint(1, sum(counts[start:stop]) + 5)  # called only for rows over the target
        before = rng.choice([None, "human"]) if start else None
        cut = truncate_middle(rs, counts, start, stop, excess, before=before)
        expected_before = before if before is not None or not start else rs[start - 1]
        assert cut == spec_truncate(rs, counts, start, stop, excess, expected_before), (rs, counts, start, stop, excess)
