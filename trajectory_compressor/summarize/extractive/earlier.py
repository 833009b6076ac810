"""An earlier summary read back: the lists an extractive summary wrote, carried into the next one.

When a compressed row is compressed again, the earlier `[CONTEXT SUMMARY]:` turn lies inside the
new region. Flattened into one clipped line, its user requests, its error lines and the last
note would be cut to their first words; the next summary would then know less than the one it
replaces. So a summary this summarizer wrote (its sections are recognisable by their headers) is
read back into its lists, which join the new digest's lists; any other text (an LLM's prose, a
Hermes compaction) stays whole as the earlier summary, its error classes and identifiers picked
out as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The first line of every extractive summary: "22 turns (11 assistant, 11 tool)." or "1 turn (...)."
_TURNS_LINE = re.compile(r"\d+ turns? \(")
# A list item's call numbers refer to the earlier region's calls, which the new summary renumbers.
_CALL_NUMBERS = re.compile(r" \(calls? [\d, …]+\)$")
_OLDER_ERRORS = re.compile(r"\d+ earlier distinct errors?: (.*)")
_SECTIONS = ("User requests:", "Actions (", "Errors:", "Errors (", "Files touched:", "Earlier identifiers:")


@dataclass(frozen=True)
class EarlierSummary:
    """What an earlier summary carries into the next one."""

    text: str  # shown as "Earlier summary: ...": its first line, or the whole text when not ours
    requests: tuple[str, ...] = ()  # its user requests, oldest first
    errors: tuple[str, ...] = ()  # its error lines, without the earlier call numbers
    note: str = ""  # its last assistant note
    structured: bool = False  # read from the sections of an extractive summary


def read_earlier(text: str) -> EarlierSummary:
    """`text` (an earlier summary's body, its index already split off) as lists when it is ours."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    if not lines or not _TURNS_LINE.match(lines[0]) or not any(line.startswith(_SECTIONS) for line in lines[1:]):
        return EarlierSummary(text.strip())
    shown = [lines[0]]
    requests: list[str] = []
    errors: list[str] = []
    note = ""
    section = ""
    for line in lines[1:]:
        if line.startswith("Earlier summary: "):
            shown.append(line.removeprefix("Earlier summary: "))  # the one before it, as it was shown
        elif line.startswith("Last user request: "):
            requests.append(line.removeprefix("Last user request: "))
        elif line.startswith("Last assistant note: "):
            note = line.removeprefix("Last assistant note: ")
        elif line.startswith("Errors ("):  # compact: "Errors (3): KeyError, ValueError"
            errors.extend(key.strip() for key in line.split(": ", 1)[-1].split(", ") if key.strip())
        elif line.startswith(_SECTIONS):  # ("Errors (" went above)
            section = line.split(":", 1)[0].split(" (", 1)[0]
        elif line.startswith("- ") and section == "User requests" and not line.startswith("- … "):
            requests.append(line[2:])
        elif line.startswith("- ") and section == "Errors":
            item = _CALL_NUMBERS.sub("", line[2:])
            older = _OLDER_ERRORS.fullmatch(item)
            if older or item.startswith("earlier: "):  # keys only: "KeyError, ValueError"
                keys = older.group(1) if older else item.removeprefix("earlier: ")
                errors.extend(key.strip() for key in keys.split(", ") if key.strip())
            else:
                errors.append(item)
    return EarlierSummary(
        " ".join(shown),
        requests=tuple(requests),
        errors=tuple(dict.fromkeys(errors)),
        note=note,
        structured=True,
    )
