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


def head_end(roles: Sequence[str], config: PlanConfig) -> int:
    """End (exclusive) of the shortest prefix holding every protected first occurrence.

    The tool turns protected with `protect_first_tool` are the ones that answer the first gpt
    turn (the tool turns directly after it); a tool turn that comes later is ordinary middle.
    A head never ends just before a tool turn: those tool results belong with the gpt turn
    that called them, so they stay in the head.
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
            answer_end = first_gpt + 1
            while answer_end < len(roles) and roles[answer_end] == "tool":
                answer_end += 1
            if answer_end > first_gpt + 1:
                end = max(end, answer_end)
    while end < len(roles) and roles[end] == "tool":
        end += 1
    return end


def tail_start(roles: Sequence[str], config: PlanConfig) -> int:
    """Start of the protected tail: the last `protect_last_n_turns` turns.

    If the tail would begin with tool turns, the gpt turn they answer joins the tail so a
    tool call is never separated from its results.
    """
    start = max(0, len(roles) - config.protect_last_n_turns)
    while 0 < start < len(roles) and roles[start] == "tool":
        start -= 1
    return start
