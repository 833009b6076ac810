"""How a message names something the user chose: a file, a folder, a column, a config key.

Every warning and error is one line that a person reads and a script may parse. A name is
user data: a file name may hold a newline, a tab, an escape sequence or a quote. So every
message shows names through `quoted`: a plain name as it is, any other in single quotes with
its control and invisible characters escaped, so the message stays one line and it is clear
where the name ends.
"""

from __future__ import annotations

import os

# Characters that blur where a name ends in a sentence: written inside quotes.
_BLURRING = frozenset(" '\"\\`")


def quoted(name: str | os.PathLike[str]) -> str:
    """`name` as messages show it: unchanged when plain, else in single quotes with escapes.

    `in/a.jsonl` -> `in/a.jsonl`; `my runs.jsonl` -> `'my runs.jsonl'`;
    `bad<newline>name.jsonl` -> `'bad\\nname.jsonl'`; `it's` -> `'it\\'s'`.
    """
    text = os.fspath(name)
    if text and text.isprintable() and not _BLURRING.intersection(text):
        return text
    return "'" + "".join(_escaped(char) for char in text) + "'"


def _escaped(char: str) -> str:
    if char in "'\\":
        return "\\" + char
    if char.isprintable():
        return char
    return repr(char)[1:-1]  # \n, \t, \x1b, \u200b, \ud800: what Python would write
