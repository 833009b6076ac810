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
# What a tool shows before each line of a file: `cat -n`'s number and tab, `grep -n`'s `12:` /
# `13-`, a diff's `+` / `-` / ` `, a quote's `>`; then the line's own indentation.
_LINE_PREFIX = re.compile(r"(?:[ \t]{0,16}\d{1,9}(?:\t|[:-])|[+>-](?=[ \t]))?")
_INDENT = re.compile(r"[ \t]{0,256}")
# One line's value: a run with no blank, ended by a quote too (the string holding the text closes:
# `"content": "password: |\n  …", "tool_call_id": …`).
_LINE_VALUE = re.compile(r"[\"'`]?[^\s\"'`]{1,1024}")  # a quote opening it is the value's (`|-` then `'…'`)
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
    """The span of a block scalar's value when a block header starts at `header`, for the key
    starting at `key`: its first line's value and each next line's at the same indentation that
    is one value too (a PEM body); None when there is no header, no line indented deeper than
    the key's, or the first line holds words (prose, not a credential).

    Lines are read after what a tool shows before them (`cat -n`, `grep -n`, a diff, a quote), and
    a line's value ends at a quote as well as at a blank (the string holding the text may close
    there). YAML's own end of the block (a line indented less) ends it, and so does a line that is
    not one value (a comment, `... 3 more lines`)."""
    found = _BLOCK_HEADER.match(text, header)
    if found is None:
        return None
    line_start = text.rfind("\n", max(0, key - _KEY_LINE_CHARS), key) + 1
    if line_start == 0 and key >= _KEY_LINE_CHARS:
        return None
    key_prefix = _matched_end(_LINE_PREFIX, text, line_start, key)
    key_indent = _matched_end(_INDENT, text, key_prefix, key) - key_prefix
    span: Span | None = None
    indent = None
    position = found.end()
    for _ in range(_BLOCK_LINES):
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        after_prefix = _matched_end(_LINE_PREFIX, text, position, line_end)
        value_start = _matched_end(_INDENT, text, after_prefix, line_end)
        depth = value_start - after_prefix
        if value_start < line_end and text[value_start] != "\r":  # not a blank line
            if depth <= key_indent or (indent is not None and depth != indent):
                break
            if span is not None or text[value_start] != "#":  # a first `# generated …` line is passed over
                value = _line_value(text, value_start, line_end)
                if value is None:
                    return None if span is None else span  # words: prose under the key, or the block's end
                value_end, closed = value
                indent, span = depth, (value_start if span is None else span[0], value_end)
                if closed:
                    break
        if line_end >= len(text):
            break
        position = line_end + 1
    return span


def _matched_end(pattern: re.Pattern[str], text: str, start: int, end: int) -> int:
    """Where `pattern`, which matches the empty string too, ends when matched at `start`."""
    found = pattern.match(text, start, end)
    return start if found is None else found.end()


def _line_value(text: str, start: int, end: int) -> tuple[int, bool] | None:
    """Where the one value of the line `text[start:end]` ends, and whether a quote closes it
    there (the text's enclosing string); None when the line holds more than one value."""
    value = _LINE_VALUE.match(text, start, end)
    if value is None:
        return None
    rest = text[value.end() : end].strip()
    closed = rest[:1] in ('"', "'", "`")
    return None if rest and not closed else (value.end(), closed)
