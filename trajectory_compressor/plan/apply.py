"""The compressed conversation's layout: which original turns stay, and what is new.

Pure: it returns a recipe (keep turn i / keep turn i with a new value / a new turn), and the
format writer applies it to the original record, so kept turns are written back exactly as
they came in, whatever extra keys they carry.
"""

from __future__ import annotations

from collections.abc import Sequence

from trajectory_compressor.types import (
    SUMMARY_PREFIX,
    CompressionRegion,
    EditedTurn,
    KeptTurn,
    NewTurn,
    OutputTurn,
    Turn,
)


def summary_value(body: str) -> str:
    """The summary turn's value: exactly one `[CONTEXT SUMMARY]:` prefix, then the body."""
    return f"{SUMMARY_PREFIX} {body.strip()}"


def compressed_layout(
    turns: Sequence[Turn],
    region: CompressionRegion,
    summary_body: str,
    notice_text: str | None,
    notice_index: int | None,
) -> list[OutputTurn]:
    """Head (with the notice appended to its system turn) + one human summary turn + the rest."""
    layout: list[OutputTurn] = []
    for index in range(region.start):
        if index == notice_index and notice_text:
            layout.append(EditedTurn(index, turns[index].value + notice_text))
        else:
            layout.append(KeptTurn(index))
    layout.append(NewTurn(Turn("human", summary_value(summary_body))))
    layout.extend(KeptTurn(index) for index in range(region.end, len(turns)))
    return layout
