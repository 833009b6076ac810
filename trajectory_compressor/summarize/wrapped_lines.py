"""A token a terminal wrapped over lines, read whole.

A tmux pane's capture (the terminal agents' transcripts), `fold`, or a console library's hard wrap
cuts a long token every N columns: `echo $OPENAI_API_KEY` in an 80-column pane prints a 164-character
key on three lines. The rules matched the first piece (when it was long enough) and never the
others, and a JWT cut inside its payload matched nothing, signature and all. `unwrapped` gives the
view of a text with those line breaks removed, for the rules to read the token whole; `redact`
takes what they find there back to the original, across the line breaks.

A line break is a wrap's only where a terminal would put one and a token goes on after it: the line
before is at least `MIN_WIDTH` characters (no terminal is narrower) and ends in at least 16
characters of a token's alphabet, in a run with a digit (a random token's, not a name's:
`table_alias.foreign_key`), and the line after holds nothing but the rest of one (a token's
characters, then at most the quote or bracket closing it), a piece no plain word, file name or
command (`python3 main.py`, `NAME=value`, `DONE`, `config.yaml`, a shell prompt) looks like. A
line after it is joined too while the one before is as wide as the first (a full line). Only
lines holding a rule's literal are looked at: the token's own prefix, or its name, stands on the
first line of a wrapped run.

A wrap can also fall inside the literal itself (`GITHUB_TOKEN=gh` at the end of a line, `p_...` on
the next; `sk-` then `proj-...`): the first line then holds no literal, nor ends in a token's run.
`split_literals` gives each literal cut by a line break at each place inside it (as written, and
JSON-escaped, `gh\\np_`, so that an escaped text is read decoded), found in the same pass as the
literals; a line break found so, after a line at least `MIN_WIDTH` wide, is a wrap's, and the lines
after it are joined as after a literal's line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from trajectory_compressor.summarize.escapes import SplicedView

MIN_WIDTH = 40
_TAIL = 16  # characters of a token's alphabet ending the line before a wrap
_TOKEN_END = re.compile(rf"[A-Za-z0-9_\-.+/=]{{{_TAIL}}}")
# The line after a wrap: the rest of a token, base64 padding, what closes a quoted value.
_CONTINUATION = re.compile(r"([A-Za-z0-9_\-.+/]+={0,2})([\"'`,;)\]}]{0,4})\r?")
# A plain word alone on its line (`DONE`, `Done.`, `exit`), or a file's name of words with no
# digit (`config.yaml`, `README.md`, `settings_local.py`): no piece of a random token.
_DIGIT = re.compile(r"[0-9]")
_PLAIN_WORD = re.compile(r"(?:[A-Za-z][a-z]*(?:[_-][a-z]+)*|[A-Z]+)(?:\.[a-z]{1,8})*\.?")


# What a literal cut by a line break is found as: the break as written, and JSON-escaped.
_BREAKS = ("\n", "\r\n", "\\n", "\\r\\n")
_SPLIT = re.compile(r"[a-z0-9_.-]{3,}")  # a literal a wrap can cut: a token's or a name's characters


def split_literals(literals: Iterable[str]) -> dict[str, int]:
    """Each of `literals` (lower-cased) a token's characters long enough to be cut, cut by a line
    break at each place inside it; with where its `\\n` stands in it (-1 when escaped: such a
    text is read decoded, where the break is found again as written)."""
    cut_literals: dict[str, int] = {}
    for literal in literals:
        if _SPLIT.fullmatch(literal) is None:
            continue
        for cut in range(1, len(literal)):
            for line_break in _BREAKS:
                newline = cut + line_break.find("\n") if "\\" not in line_break else -1
                cut_literals.setdefault(literal[:cut] + line_break + literal[cut:], newline)
    return cut_literals


def unwrapped(
    text: str, starts: Iterable[int], breaks: Iterable[int] = (), prefixes: Iterable[int] = ()
) -> SplicedView | None:
    """`text` with the line breaks a terminal's wrap put into a token removed, looking only at the
    lines holding a position of `starts` (sorted: where rule literals occur), at the line breaks
    `breaks` (where one cuts a literal: `split_literals`), and after the lines that end in a token
    begun at one of `prefixes` (where a token's prefix occurs: `OPENAI_API_KEY=sk-pr` ending a
    line, however short the piece); None when none is a wrap's. Linear: each line is looked at once
    (a few times at most, by a start, a break and a prefix)."""
    splices: list[tuple[int, int, str]] = []
    breaks = [*breaks, *_after_prefixes(text, prefixes)]
    for newline in breaks:
        if newline < MIN_WIDTH or text.rfind("\n", newline - MIN_WIDTH, newline) >= 0:
            continue  # a line narrower than any terminal: no wrap's
        splices.append((_body_end(text, newline), newline + 1, ""))
        next_end = text.find("\n", newline + 1)
        if next_end >= 0:
            _join(text, newline + 1, next_end, splices)
    done = 0  # where the lines looked at so far end
    for start in starts:
        if start < done:
            continue
        line_end = text.find("\n", start)
        if line_end < 0:
            break
        line_start = text.rfind("\n", done, start) + 1 if start else 0
        done = _join(text, line_start, line_end, splices)
    return SplicedView(text, sorted(set(splices))) if splices else None


_PREFIX_RUN = 256  # how long a token begun at its prefix may run to its line's end
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-.+/=]*\r?")


def _after_prefixes(text: str, prefixes: Iterable[int]) -> list[int]:
    """The line breaks that end a line in a token begun at one of `prefixes` (nothing but a
    token's characters from there on, within `_PREFIX_RUN`) where `_join` would not look: a piece
    shorter than `_TAIL` (`OPENAI_API_KEY=sk-pr`) or without a digit, the next line all the rest
    of a token (as `_join` asks of it)."""
    found = []
    for start in prefixes:
        newline = text.find("\n", start, start + _PREFIX_RUN)
        if newline < 0 or _TOKEN_RUN.fullmatch(text, start, newline) is None:
            continue
        if newline - start >= _TAIL and _DIGIT.search(text, start, newline) is not None:
            continue  # `_join`'s own case
        next_end = text.find("\n", newline + 1)
        piece = _CONTINUATION.fullmatch(text, newline + 1, len(text) if next_end < 0 else next_end)
        if piece is not None and _PLAIN_WORD.fullmatch(piece.group(1)) is None:
            found.append(newline)
    return found


def _join(text: str, line_start: int, line_end: int, splices: list[tuple[int, int, str]]) -> int:
    """Add to `splices` the wrap's line breaks after the line `text[line_start:line_end]`; return
    where the last line looked at ends."""
    width = _body_end(text, line_end) - line_start
    while True:
        body_end = _body_end(text, line_end)
        if body_end - line_start < MIN_WIDTH or _TOKEN_END.fullmatch(text, body_end - _TAIL, body_end) is None:
            return line_end
        if _DIGIT.search(text, _run_start(text, line_start, body_end), body_end) is None:
            return line_end  # a name (`table_alias.foreign_key`), not a random token
        next_start = line_end + 1
        next_end = text.find("\n", next_start)
        next_end = len(text) if next_end < 0 else next_end
        piece = _CONTINUATION.fullmatch(text, next_start, next_end)
        if piece is None or _PLAIN_WORD.fullmatch(piece.group(1)) is not None:
            return line_end
        splices.append((body_end, next_start, ""))
        full = not piece.group(2) and _body_end(text, next_end) - next_start == width
        if not full or next_end == len(text):
            return next_end
        line_start, line_end = next_start, next_end


def _run_start(text: str, line_start: int, body_end: int) -> int:
    """Where the run of characters other than blanks that ends the line starts."""
    blank = max(text.rfind(" ", line_start, body_end), text.rfind("\t", line_start, body_end))
    return line_start if blank < 0 else blank + 1


def _body_end(text: str, line_end: int) -> int:
    """Where the line ending at `line_end` (its `\\n`) ends without its `\\r`."""
    return line_end - 1 if line_end > 0 and text[line_end - 1] == "\r" else line_end
