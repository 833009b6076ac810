"""Which turns are protected: the head (first system / human / gpt / its tool results) and the tail.

Pure functions of the role sequence. They replace the reference tool's `n // 2` head/tail split,
which inverted the region on short trajectories and shrank it when the first tool turn came
late, leaving rows silently over the limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from trajectory_compressor.settings import PlanConfig


def _first(roles: Sequence[str], role: str) -> int | None:
    for index, value in enumerate(roles):
        if value == role:
            return index
    return None


def _past_results(roles: Sequence[str], index: int) -> int:
    """The first turn from `index` on that is not a tool turn (the end of a call's results)."""
    while index < len(roles) and roles[index] == "tool":
        index += 1
    return index


def _group_start(roles: Sequence[str], index: int) -> int:
    """`index`, or, when it is a tool turn, the turn that made the call it answers."""
    while 0 < index < len(roles) and roles[index] == "tool":
        index -= 1
    return index


def head_end(roles: Sequence[str], config: PlanConfig) -> int:
    """End (exclusive) of the shortest prefix holding every protected first occurrence.

    The tool turns protected with `protect_first_tool` are the ones that answer the first gpt
    turn (the tool turns directly after it); a tool turn that comes later is ordinary middle.
    A head never ends just before a tool turn: those tool results belong with the gpt turn
    that called them, so they stay in the head. Nor on a user turn that a gpt turn answers (a
    run opening with the assistant's greeting: system, gpt, human): the answer and its results
    join the head, since the summary after the head is a user turn and two in a row are refused
    by templates that want the roles to alternate (and by LLaMA-Factory's converter).
    """
    end = 0
    wanted = (
        ("system", config.protect_first_system),
        ("human", config.protect_first_human),
        ("gpt", config.protect_first_gpt),
    )
    for role, protected in wanted:
        index = _first(roles, role) if protected else None
        if index is not None:
            end = max(end, index + 1)
    if config.protect_first_tool:
        first_gpt = _first(roles, "gpt")
        if first_gpt is not None:
            answer_end = _past_results(roles, first_gpt + 1)
            if answer_end > first_gpt + 1:
                end = max(end, answer_end)
    end = _past_results(roles, end)
    if 0 < end < len(roles) and roles[end - 1] == "human" and roles[end] == "gpt":
        # the answer to the head's last user turn: a summary (a user turn) never follows one
        end = _past_results(roles, end + 1)
    return end


def tail_start(roles: Sequence[str], config: PlanConfig) -> int:
    """Start of the protected tail: the last `protect_last_n_turns` turns.

    If the tail would begin with tool turns, the gpt turn they answer joins the tail so a
    tool call is never separated from its results. If it would begin with a user turn, the turn
    before it joins too (with the call its results answer), for the reason the head's last user
    turn takes its answer: the summary before the tail is a user turn.
    """
    start = _group_start(roles, max(0, len(roles) - config.protect_last_n_turns))
    if 0 < start < len(roles) and roles[start] == "human" and roles[start - 1] in ("gpt", "tool"):
        # the turn before it too: a summary (a user turn) is never followed by a user turn
        start = _group_start(roles, start - 1)
    return start
