"""`--prune-tool-outputs`: which old tool results to clear before any summary. Pure.

A long agent run is mostly tool output: files read, test logs, listings. The turns a model is
trained to write are the assistant's; a tool result older than the protected tail is context
it has already acted on. Replacing such results by a one-line placeholder that says what was
cleared (`[tool output cleared: bash, 12,345 characters]`) keeps every assistant turn verbatim,
and often fits the row with no summary at all; when it does not, the summary is planned on the
pruned row, so the summarizer is sent less.

The plan is numbers only: roles, per-turn counts, and what each candidate's placeholder would
cost. Candidates are tool turns outside the protected head and tail (the same head and tail as
the region planner's) whose output is longer than `--prune-min-chars` and that no gpt turn the
row keeps reacts to; they are cleared oldest first, and only while the row is still over the
target.

A result is what the next gpt turn after it answers (`answering_turns`): that turn was written
seeing it, and trained on a row where it is cleared it would teach the model to react to output
it was never shown ("the transition failed because..." after `[tool output cleared]`). So a
result is cleared only where no training target answers it: in a single row every kept gpt turn
is one, which leaves the results no gpt turn follows; with `--windows`, a window's context turns
are not trained, so their results can be cleared, except the ones its first new (trained) gpt
turn answers (`plan/windows.py`). A turn whose placeholder would cost as
much as the turn itself is never cleared. When clearing every candidate cannot fit the row, every
candidate is cleared: the summary that must follow then covers fewer turns (more assistant turns
stay verbatim) and is sent less.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trajectory_compressor.plan.protect import head_end, tail_start
from trajectory_compressor.settings import PlanConfig

PLACEHOLDER_PREFIX = "[tool output cleared"


def placeholder(names: Sequence[str], chars: int) -> str:
    """The one line that replaces a cleared tool result: the tools it came from, and its size."""
    named = ", ".join(dict.fromkeys(name for name in names if name))
    return f"{PLACEHOLDER_PREFIX}: {named + ', ' if named else ''}{chars:,} characters]"


def protected_bounds(roles: Sequence[str], config: PlanConfig) -> tuple[int, int]:
    """(head end, tail start): the turns before and from which nothing is ever cleared.

    The region planner's own: a first occurrence inside the tail belongs to the tail.
    """
    tail = tail_start(roles, config)
    return head_end(roles[:tail], config), tail


def answering_turns(roles: Sequence[str]) -> list[int | None]:
    """For each turn, the gpt turn that answers it if it is a tool result: the next gpt turn after
    it (None for other turns, and for a result no gpt turn follows)."""
    answering: list[int | None] = [None] * len(roles)
    following: int | None = None
    for index in range(len(roles) - 1, -1, -1):
        if roles[index] == "gpt":
            following = index
        elif roles[index] == "tool":
            answering[index] = following
    return answering


def answered_results(roles: Sequence[str], gpt_index: int) -> list[int]:
    """The tool results gpt turn `gpt_index` answers: those since the gpt turn before it."""
    start = gpt_index
    while start > 0 and roles[start - 1] != "gpt":
        start -= 1
    return [index for index in range(start, gpt_index) if roles[index] == "tool"]


def prune_order(roles: Sequence[str], config: PlanConfig) -> list[int]:
    """The tool turns pruning looks at, oldest first: those outside the protected head and tail
    that no gpt turn answers (every gpt turn of a single row is kept, so a training target)."""
    head, tail = protected_bounds(roles, config)
    answering = answering_turns(roles)
    return [i for i in range(head, tail) if roles[i] == "tool" and answering[i] is None]


def worth_clearing(chars: int, config: PlanConfig) -> bool:
    """Whether a tool turn holding `chars` characters of output is a candidate: over `--prune-min-chars`."""
    return chars > config.prune_min_chars


def prunable_turns(roles: Sequence[str], chars: Sequence[int], config: PlanConfig) -> list[int]:
    """Tool turns outside the protected head and tail whose output holds more than
    `--prune-min-chars` characters, oldest first."""
    return [i for i in prune_order(roles, config) if worth_clearing(chars[i], config)]


def window_prunable_turns(roles: Sequence[str], chars: Sequence[int], config: PlanConfig) -> list[int]:
    """`--windows`: every tool turn after the head longer than `--prune-min-chars`, oldest first.
    Which of them a window may clear (its context's, never its new turns') is the replay's call."""
    head = head_end(roles, config)
    return [i for i in range(head, len(roles)) if roles[i] == "tool" and worth_clearing(chars[i], config)]


@dataclass(frozen=True)
class PrunePlan:
    """The tool turns to clear (in order) and what the row then counts.

    `saved_tokens` is what the cleared turns held less what their placeholders cost;
    `total_tokens` the row's size once they are cleared.
    """

    turns: tuple[int, ...]
    saved_tokens: int
    total_tokens: int


def plan_prune(
    roles: Sequence[str],
    counts: Sequence[int],
    placeholder_counts: Mapping[int, int],
    config: PlanConfig,
) -> PrunePlan:
    """Clear candidates (the keys of `placeholder_counts`, each with its placeholder's tokens)
    oldest first until the row fits `target_max_tokens`; all of them if it cannot.

    A key that `prune_order` does not offer (a turn in the protected head or tail, a result a gpt
    turn answers, no tool turn) is ignored, as is one whose placeholder does not cost less than
    the turn: the plan never touches anything else.
    """
    if len(roles) != len(counts):
        raise ValueError("roles and counts must have the same length")
    total = sum(counts)
    target = config.target_max_tokens
    offered = set(prune_order(roles, config))
    cleared: list[int] = []
    saved = 0
    for index in sorted(placeholder_counts):
        if total - saved <= target:
            break
        if index not in offered:
            continue
        saving = counts[index] - placeholder_counts[index]
        if saving <= 0:
            continue
        cleared.append(index)
        saved += saving
    return PrunePlan(tuple(cleared), saved, total - saved)
