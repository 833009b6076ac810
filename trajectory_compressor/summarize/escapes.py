"""Escaped text as it reads once decoded, and the way back to the original's offsets.

Much of a trajectory is text escaped once or more: a Hermes tool result is a JSON object whose
`content` keeps every newline as the two characters `\\n`; a JSON document printed by a tool
and then stored that way has `\\\\n`; OpenAI tool-call arguments are a JSON string inside
the call's JSON; Gson writes `=` as `\\u003d`. Credential rules written for plain text fail on
it: in `\\nghp_...` a word character (the `n`) is glued to the token, and in
`DB_PASSWORD=x\\nHOME=/root` the value runs on into the next line. So the rules read
`unescaped(text).text`, where every escape sequence, however many backslashes deep, is the one
character it stands for (`\\xNN` too: a Python repr shows a colour code as `\\x1b[36m`);
`original_span` takes a span found there back to the original text, widened to whole escape
sequences, so that masking it never cuts a sequence in half and the masked text decodes as before.

A second view, `as_shown(text)`, reads text as a terminal or a browser shows it: terminal
escape sequences (ANSI colours, cursor moves; the delimiters of an OSC command such as a
hyperlink, whose payload stays readable), invisible characters (zero-width space, joiners,
word joiner, BOM, soft hyphen) are gone, and an `=` written as `%3D`, `&#61;` or `&#x3d;` (an
`&` as `%26`), and a percent-escape of white space, ASCII punctuation or a token's own characters
(`%20`, `%22`, `%3A`, `%2F`, `%40`, `%7B`…, `%67` for `g`) is that character, as is an HTML numeric
entity of a printable ASCII character (`&#103;hp_…`, `&#x67;`).
`gh<U+200B>p_...` or `\x1b[36mghp_...` shows as `ghp_...`, and the rules see what a reader sees.
The two views compose: a JSON-escaped colour code (`\\u001b[32m`) is decoded first, then removed.
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
ESCAPE = re.compile(r"""(\\(?:\\*(?:[nrtbf"'/]|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2})|\\+))""")
_CHARACTER = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "'": "'", "/": "/", "": "\\"}
# The common sequences, decoded by one dictionary look-up.
_KNOWN = {"\\" * depth + code: char for depth in range(1, 8) for code, char in _CHARACTER.items() if code or depth > 1}


def _decoded(sequence: str) -> str:
    code = sequence.lstrip("\\")
    if code[:1] == "x":  # xNN
        return chr(int(code[1:], 16))
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


# The percent-escapes read as their character: white space and the ASCII punctuation a
# credential's context is written with (`%22password%22%3A%22…`, `Authorization%3A%20Bearer`).
_PERCENT_CODES = ("09", "0a", "0d", *(f"2{digit}" for digit in "0123456789abcdef"), "3a", "3b", "3c", "3e", "3f")
_PERCENT_CODES += ("40", "5b", "5d", "7b", "7d")
# And a token's own characters, which no URL needs escaped but an encoder may escape anyway, or an
# agent to hide it (`%67hp_…` for `ghp_…`): letters, digits, `_` and `~` (`-` and `.` are above).
_PERCENT_CODES += (*(f"3{digit}" for digit in "0123456789"), *(f"{code:x}" for code in range(0x41, 0x5B)))
_PERCENT_CODES += ("5f", *(f"{code:x}" for code in range(0x61, 0x7B)), "7e")
# What a terminal or a browser does not show, or shows as another character. Terminal escape
# sequences (ECMA-48): a CSI (`ESC [ params final`: colours, cursor moves), a charset choice
# (`ESC ( B`), any other two-character escape, removed; an OSC command's opening (`ESC ]`) and
# its end (BEL or `ESC \`) become a line break, so that its payload (a hyperlink's URL) is read
# apart from the text around it. Zero-width and invisible characters, removed. An `=` or `&`
# escaped for a URL or HTML, that character.
_SHOWN = re.compile(
    "(?P<csi>\x1b\\[[0-?]{0,64}[ -/]{0,8}[@-~])"
    "|(?P<osc>\x1b\\]|\x07|\x1b\\\\)"
    "|(?P<esc>\x1b(?:[()*+-./][ -~]|[ -~])?)"
    "|(?P<invisible>[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff])"
    "|(?P<eq>%3[dD]|&#0{0,4}61;|&#[xX]0{0,4}3[dD];)"
    "|(?P<amp>%26|&#0{0,4}38;|&#[xX]0{0,4}26;|&amp;)"
    "|(?P<percent>%(?i:" + "|".join(_PERCENT_CODES) + "))"
    # Any other printable ASCII character as an HTML numeric entity (`&#103;hp_…`, `&#x67;`).
    "|(?P<entity>&#0{0,4}(?:3[3-9]|[4-9][0-9]|1[01][0-9]|12[0-6]);|&#[xX]0{0,4}(?:2[1-9a-fA-F]|[3-6][0-9a-fA-F]|7[0-9a-eA-E]);)"
    "|(?P<plus>\\+)"  # a form body's space (`%3A+%22`): read so only in text that holds a marker
)
_SHOWN_AS = {
    "csi": "",
    "osc": "\n",
    "esc": "",
    "invisible": "",
    "eq": "=",
    "amp": "&",
    "plus": " ",
}
_INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"


class SplicedView:
    """`text` with some pieces removed or replaced by one character; `original_span` maps back.

    A span of the view is taken back to the original from its first character to its last, so
    a piece removed inside it (a zero-width space in a token) is masked with it, and one removed
    just before or after it (the colour codes around a token) is kept.
    """

    def __init__(self, text: str, splices: list[tuple[int, int, str]]) -> None:
        parts: list[str] = []
        self._at: list[int] = []  # where each splice sits in the view
        self._starts: list[int] = []  # its start and end in the original
        self._ends: list[int] = []
        self._lengths: list[int] = []  # its length in the view: 0 or 1
        position = shown = 0
        for start, end, replacement in splices:
            parts += [text[position:start], replacement]
            shown += start - position
            self._at.append(shown)
            self._starts.append(start)
            self._ends.append(end)
            self._lengths.append(len(replacement))
            shown += len(replacement)
            position = end
        parts.append(text[position:])
        self.text = "".join(parts)

    def _original(self, at: int, *, end: bool) -> int:
        """Where the view's character `at` starts (or, `end`, ends) in the original."""
        index = bisect_right(self._at, at) - 1
        if index < 0:
            return at + end
        if self._at[index] + self._lengths[index] > at:  # `at` is this splice's own character
            return self._ends[index] if end else self._starts[index]
        return self._ends[index] + at - self._at[index] - self._lengths[index] + end

    def original_span(self, start: int, end: int) -> Span:
        return self._original(start, end=False), self._original(end - 1, end=True)


# What `as_shown` can change: a text holding none of these is shown as it is. `redact` finds
# them in the same pass as its rules' literals (lower-cased: `&AMP;` is found, and not spliced).
# A whole URL percent-encoded (`?next=https%3A%2F%2Fuser%3Apw%40host`), a JSON body or a header
# (`%7B%22password%22%3A%22…`, `Authorization%3A%20Bearer%20…`): any percent-escape `as_shown` reads.
SHOWN_MARKERS: tuple[str, ...] = (
    "\x1b",
    "\x07",
    "%3d",
    "&#",
    "&amp;",
    *(f"%{code}" for code in _PERCENT_CODES),
    *_INVISIBLE,
)


def as_shown(text: str) -> SplicedView | None:
    """The view of `text` as it is shown (see the module's docstring), or None when it is the same.

    Call it on text holding one of `SHOWN_MARKERS`: the regex pass is the cost of this view."""
    splices = [(m.start(), m.end(), _shown_as(m)) for m in _SHOWN.finditer(text)]
    return SplicedView(text, splices) if splices else None


def _shown_as(match: re.Match[str]) -> str:
    group = match.lastgroup or ""
    if group == "percent":
        return chr(int(match.group()[1:], 16))
    if group == "entity":
        code = match.group()[2:-1]
        return chr(int(code[1:], 16) if code[0] in "xX" else int(code))
    return _SHOWN_AS[group]
