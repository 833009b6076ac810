"""The pruning plan, pure: tool results only, never the protected head or tail, oldest first,
only as far as needed, every candidate when nothing less fits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.plan.prune import placeholder, plan_prune, protected_bounds, prunable_turns
from trajectory_compressor.settings import PlanConfig


@st.composite
def rows(draw: st.DrawFn) -> tuple[list[str], list[int], list[int], dict[int, int]]:
    """An agent's roles, per-turn counts, tool output sizes, and a placeholder cost per tool turn."""
    roles = ["system"] if draw(st.booleans()) else []
    roles.append("human")
    for _ in range(draw(st.integers(0, 30))):
        if draw(st.integers(0, 9)) == 0:
            roles.append("human")
        roles.append("gpt")
        roles.extend(["tool"] * draw(st.integers(0, 3)))
    counts = [draw(st.integers(1, 900)) for _ in roles]
    chars = [draw(st.integers(0, 4000)) if role == "tool" else 0 for role in roles]
    # Placeholder costs of any turn, tool or not, cheaper or dearer than it: the plan must sort them out.
    costs = {i: draw(st.integers(1, 60)) for i in range(len(roles)) if draw(st.booleans())}
    return roles, counts, chars, costs


@settings(max_examples=500, deadline=None)
@given(rows(), st.integers(200, 12_000), st.integers(0, 6), st.integers(0, 1000))
def test_the_plan_clears_old_tool_results_oldest_first_and_only_as_far_as_needed(
    row: tuple[list[str], list[int], list[int], dict[int, int]], target: int, last_n: int, min_chars: int
) -> None:
    roles, counts, chars, costs = row
    config = PlanConfig(
        target_max_tokens=target,
        summary_target_tokens=min(100, target - 1),
        protect_last_n_turns=last_n,
        prune_min_chars=min_chars,
    )
    candidates = prunable_turns(roles, chars, config)
    head, tail = protected_bounds(roles, config)
    # A result the next gpt turn answers is never cleared: that turn was written seeing it.
    answered = {i for i in range(len(roles)) if roles[i] == "tool" and "gpt" in roles[i + 1 :]}
    assert all(roles[i] == "tool" and head <= i < tail and chars[i] > min_chars for i in candidates)
    assert not answered & set(candidates)
    # The candidates, plus costs offered for turns the plan must leave alone (head, tail, not tool).
    offered = {**costs, **{i: costs.get(i, 20) for i in candidates}}
    plan = plan_prune(roles, counts, offered, config)
    total = sum(counts)
    # Only tool results outside the head and tail, each one a saving; never a gpt (or any other) turn.
    saving = [
        i
        for i in sorted(offered)
        if roles[i] == "tool" and head <= i < tail and offered[i] < counts[i] and i not in answered
    ]
    assert all(roles[i] == "tool" and head <= i < tail and i not in answered for i in plan.turns)
    assert plan.saved_tokens == sum(counts[i] - offered[i] for i in plan.turns)
    assert plan.total_tokens == total - plan.saved_tokens
    # Oldest first: the cleared turns are the first of the turns that save tokens.
    assert list(plan.turns) == saving[: len(plan.turns)]
    if total <= target:
        assert plan.turns == ()
    elif plan.total_tokens > target:
        assert list(plan.turns) == saving  # nothing less fits: every candidate is cleared
    else:
        # Only as far as needed: one turn fewer would leave the row over the target.
        last = plan.turns[-1]
        assert plan.total_tokens + counts[last] - offered[last] > target


def test_the_protected_head_and_tail_are_the_region_planners_own() -> None:
    roles = ["system", "human", "gpt", "tool", "gpt", "tool", "gpt", "tool", "gpt", "tool", "gpt"]
    config = PlanConfig(protect_last_n_turns=3)
    # Head: system, human, the first gpt and its result; tail: the last 3 turns, pulled back to a call.
    assert protected_bounds(roles, config) == (4, 8)
    # Every result between them is answered by the gpt turn after it: none is a candidate.
    assert prunable_turns(roles, [0, 0, 0, 999, 0, 999, 0, 150, 0, 999, 0], config) == []


def test_only_a_result_no_gpt_turn_answers_is_a_candidate() -> None:
    roles = ["system", "human", "gpt", "tool", "gpt", "tool", "human", "gpt", "tool", "tool", "human"]
    config = PlanConfig(protect_last_n_turns=0)
    # Turn 5 is answered by gpt 7 (a human turn between them changes nothing); 8 and 9 by no one.
    assert prunable_turns(roles, [0, 0, 0, 999, 0, 999, 0, 0, 999, 999, 0], config) == [8, 9]


def test_a_placeholder_is_one_line_naming_the_tools_and_the_characters_cleared() -> None:
    assert placeholder(["bash"], 12345) == "[tool output cleared: bash, 12,345 characters]"
    named_twice = placeholder(["read_file", "bash", "read_file"], 980)
    assert named_twice == "[tool output cleared: read_file, bash, 980 characters]"
    assert placeholder([], 1_000_000) == "[tool output cleared: 1,000,000 characters]"
    assert "\n" not in placeholder(["a"], 5)
