"""Where a YAML value given to a key starts and ends, past the syntax in front of it.

`password: value` is read by the assignment rules as any `name: value`; YAML adds two shapes in
which the value is not the token after the colon:

- node properties before it: a tag (`!!str`, `!<tag:yaml.org,2002:str>`) or an anchor (`&pw`);
  a local tag (`!secret db_password`, `!Ref DbPassword`) makes the node a reference, not a value;
- a block scalar: `password: |` (or `>`, with chomping and indentation indicators: `|-`, `>2`),
  the value being the lines under it indented deeper than the key's line.

Pure readers of one text, bounded so that a rule calling them at each match stays linear.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.secret_rules import Span

# A node's properties: a tag (`!!str`, `!<tag:yaml.org,2002:str>`, `!` alone; a local one,
# letters only: `!secret`, `!Ref`) or an anchor (`&pw`), each followed by blanks.
_PROPERTY = re.compile(
    r"(?:(?P<local>![A-Za-z_]{2,64})(?![\w/.:!<-])|!![\w/.:-]{0,64}|!<[^>\n]{0,128}>|!|&\w{1,64})[ \t]{1,16}"
)
# A block scalar's header ending its line: the indicator, its chomping and indentation indicators
# in either order, a comment.
_BLOCK_HEADER = re.compile(r"[|>](?:[1-9][+-]?|[+-][1-9]?)?[ \t]{0,16}(?:#[^\n]{0,256})?\r?\n")
_BLOCK_LINES = 64  # a credential's block (a password, a PEM key) is short; prose runs on
_KEY_LINE_CHARS = 256  # how far back the key's line may start


def value_after_properties(text: str, start: int) -> int | None:
    """Where the value starting at `start` really starts, past at most two node properties;
    None after a local tag (a reference). `start` itself when there are none."""
    position = start
    for _ in range(2):
        node = _PROPERTY.match(text, position)
        if node is None:
            break
        if node.group("local"):
            return None
        position = node.end()
    return position


def block_scalar(text: str, key: int, header: int) -> Span | None:
    """The span of a block scalar's lines (from the first one's text to the last one's end) when
    a block header starts at `header`, for the key starting at `key`; None otherwise or when no
    line is indented deeper than the key's line."""
    found = _BLOCK_HEADER.match(text, header)
    if found is None:
        return None
    line_start = text.rfind("\n", max(0, key - _KEY_LINE_CHARS), key) + 1
    if line_start == 0 and key >= _KEY_LINE_CHARS:
        return None
    line = text[line_start:key]
    key_indent = len(line) - len(line.lstrip(" "))
    start = end = None
    position = found.end()
    for _ in range(_BLOCK_LINES):
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        content = text[position:line_end].rstrip("\r")
        stripped = content.lstrip(" ")
        if stripped:
            if len(content) - len(stripped) <= key_indent:
                break
            start = position + len(content) - len(stripped) if start is None else start
            end = position + len(content)
        if line_end >= len(text):
            break
        position = line_end + 1
    return None if start is None or end is None else (start, end)
