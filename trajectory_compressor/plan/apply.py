"""The compressed conversation's layout: which original turns stay, and what is new.

Pure: it returns a recipe (keep turn i / keep turn i with a new value / a new turn), and the
format writer applies it to the original record, so kept turns are written back exactly as
they came in, whatever extra keys they carry.
"""

from __future__ import annotations

from collections.abc import Sequence

from trajectory_compressor.types import (
    EARLIER_SUMMARY_PREFIXES,
    SUMMARY_PREFIX,
    CompressionRegion,
    EditedTurn,
    KeptTurn,
    NewTurn,
    OutputTurn,
    Turn,
)


def earlier_summary(turn: Turn) -> str | None:
    """The body of `turn` if it is the summary turn of an earlier compaction, else None.

    Ours start with `[CONTEXT SUMMARY]:`; the Hermes agent's with `[CONTEXT COMPACTION ...]`
    and a one-line preamble ending in a colon, then the summary. Only user and assistant turns
    carry them.
    """
    if turn.role not in ("human", "gpt"):
        return None
    text = turn.value.lstrip()
    if text.startswith(SUMMARY_PREFIX):
        return text[len(SUMMARY_PREFIX) :].strip()
    if not text.startswith(EARLIER_SUMMARY_PREFIXES[1:]):
        return None
    first_line, _, rest = text.partition("\n")
    if first_line.rstrip().endswith(":") and rest.strip():
        return rest.strip()
    return text[text.find("]") + 1 :].strip()


def has_notice(value: str, notice: str) -> bool:
    """Whether a system turn already carries the notice (a row compressed before): never twice."""
    return bool(notice.strip()) and notice.strip() in value


def carries_notice(turns: Sequence[Turn], notice: str) -> bool:
    """Whether the row's first system turn (the one the notice goes to) already carries it."""
    first_system = next((turn for turn in turns if turn.role == "system"), None)
    return first_system is not None and has_notice(first_system.value, notice)


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
