"""Escaped text as it reads once decoded, and the way back to the original's offsets.

Much of a trajectory is text escaped once or more: a Hermes tool result is a JSON object whose
`content` keeps every newline as the two characters `\\n`; a JSON document printed by a tool
and then stored that way has `\\\\n`; OpenAI tool-call arguments are a JSON string inside
the call's JSON; Gson writes `=` as `\\u003d`. Credential rules written for plain text fail on
it: in `\\nghp_...` a word character (the `n`) is glued to the token, and in
`DB_PASSWORD=x\\nHOME=/root` the value runs on into the next line. So the rules read
`unescaped(text).text`, where every escape sequence, however many backslashes deep, is the one
character it stands for; `original_span` takes a span found there back to the original text,
widened to whole escape sequences, so that masking it never cuts a sequence in half and the
masked text decodes as before.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

Span = tuple[int, int]

# A run of backslashes with the character it escapes, or a run of two or more standing for a
# backslash: each is one unit, read as one character and masked whole. A lone backslash before
# any other character (`C:\Users`, `\d+`) is not an escape and is left as it is. A match
# always starts at a run's first backslash and takes the whole run (the second branch takes
# what the first leaves), so the search is linear; starting with a literal `\` lets `re`
# skip to each backslash at memory speed.
ESCAPE = re.compile(r"""(\\(?:\\*(?:[nrtbf"'/]|u[0-9a-fA-F]{4})|\\+))""")
_CHARACTER = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "'": "'", "/": "/", "": "\\"}
# The common sequences, decoded by one dictionary look-up.
_KNOWN = {"\\" * depth + code: char for depth in range(1, 8) for code, char in _CHARACTER.items() if code or depth > 1}


def _decoded(sequence: str) -> str:
    code = sequence.lstrip("\\")
    if len(code) == 5:  # uXXXX
        point = int(code[1:], 16)
        # Half of a UTF-16 pair (`json.dumps` writes an emoji as `\ud83d\ude00`): one sequence is
        # one character of the view, and a lone surrogate is no text a UTF-8 matcher takes.
        return "\ufffd" if 0xD800 <= point <= 0xDFFF else chr(point)
    return _CHARACTER[code]


class EscapeView:
    """`text` with its escape sequences decoded; `original_span` maps spans back."""

    def __init__(self, pieces: list[str], decoded: list[str]) -> None:
        self._pieces = pieces  # text, sequence, text, sequence, ..., text (as `ESCAPE.split` gives)
        decoded_pieces = pieces.copy()
        decoded_pieces[1::2] = decoded
        self.text = "".join(decoded_pieces)
        self._offsets: tuple[list[int], list[int], list[int]] | None = None

    def _sequences(self) -> tuple[list[int], list[int], list[int]]:
        """Each sequence's position in the view, and its start and end in the original."""
        if self._offsets is None:
            original_ends = list(accumulate(map(len, self._pieces)))
            view_lengths = [len(piece) if index % 2 == 0 else 1 for index, piece in enumerate(self._pieces)]
            view_ends = list(accumulate(view_lengths))
            at_view = [end - 1 for end in view_ends[1::2]]
            self._offsets = (at_view, original_ends[0::2][:-1], original_ends[1::2])
        return self._offsets

    def original_span(self, start: int, end: int) -> Span:
        """The original text's span for the view's `[start, end)`, taking in whole escape sequences."""
        at_view, starts, ends = self._sequences()
        index = bisect_right(at_view, start) - 1
        if index < 0:
            left = start
        elif at_view[index] == start:
            left = starts[index]
        else:
            left = ends[index] + start - at_view[index] - 1
        last = end - 1
        index = bisect_right(at_view, last) - 1
        if index < 0:
            right = end
        elif at_view[index] == last:
            right = ends[index]
        else:
            right = ends[index] + last - at_view[index]
        return left, right


def unescaped(text: str) -> EscapeView | None:
    """The decoded view of `text`, or None when it holds no escape sequence."""
    if "\\" not in text:
        return None
    pieces = ESCAPE.split(text)
    if len(pieces) == 1:
        return None
    decoded = [_KNOWN.get(sequence) or _decoded(sequence) for sequence in pieces[1::2]]
    return EscapeView(pieces, decoded)
