"""`--over-limit truncate`: cut kept middle turns from the end until the row fits.

Pure. Turns are removed from the end of the kept middle (just before the protected tail),
a gpt turn together with the tool turns that answer it, so no tool result is left orphaned.
"""

from __future__ import annotations

from collections.abc import Sequence


def truncate_middle(roles: Sequence[str], token_counts: Sequence[int], start: int, stop: int, excess: int) -> int:
    """New end of the kept middle [start, stop) so that the removed turns hold >= `excess` tokens.

    Returns `start` when even removing the whole middle is not enough (the caller flags the
    row). The turn at the returned index, if any is removed, is never a tool turn, so the
    kept part never ends with a gpt call whose results were cut.
    """
    removed = 0
    cut = stop
    while cut > start and removed < excess:
        cut -= 1
        removed += token_counts[cut]
    while cut > start and roles[cut] == "tool":
        cut -= 1
        removed += token_counts[cut]
    return cut
