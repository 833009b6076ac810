"""`--over-limit truncate`: cut kept middle turns from the end until the row fits.

Pure. Turns are removed from the end of the kept middle (just before the protected tail), a
gpt turn together with the tool turns that answer it, so no tool result is left orphaned, and
only where the turns left on either side of the cut follow each other as a conversation does:
a gpt turn after a human or a tool turn, a human turn after a gpt (or a tool) turn. Cutting a
lone human turn would leave two assistant turns in a row, which a chat template refuses
("roles must alternate") or trains as one reply answering a question no longer there.
"""

from __future__ import annotations

from collections.abc import Sequence

# What may come right before a turn of each role, once the turns between are cut.
_MAY_FOLLOW = {"gpt": ("human", "tool"), "human": ("gpt", "tool")}


def truncate_middle(
    roles: Sequence[str],
    token_counts: Sequence[int],
    start: int,
    stop: int,
    excess: int,
    *,
    before: str | None = None,
) -> int:
    """New end of the kept middle [start, stop) so that the removed turns hold >= `excess` tokens.

    `before` is the role of the turn written just before `start` (the summary's, `human`, when
    the row is compressed; by default `roles[start - 1]`). A cut at `b` removes [b, stop); it is
    taken only where `roles[b]` is not a tool turn and the turn before `b` may precede the one
    at `stop` (`_MAY_FOLLOW`). When none removes enough, the deepest such cut; when there is
    none, `stop` (nothing cut): the caller flags the row as still over.
    """
    if before is None and start > 0:
        before = roles[start - 1]
    removed = 0
    deepest = stop
    for cut in range(stop - 1, start - 1, -1):
        removed += token_counts[cut]
        if _may_cut(roles, cut, stop, before if cut == start else roles[cut - 1]):
            if removed >= excess:
                return cut
            deepest = cut
    return deepest


def _may_cut(roles: Sequence[str], cut: int, stop: int, previous: str | None) -> bool:
    if roles[cut] == "tool":
        return False
    if stop == len(roles):  # nothing after the cut
        return True
    allowed = _MAY_FOLLOW.get(roles[stop])
    return allowed is not None and previous in allowed
