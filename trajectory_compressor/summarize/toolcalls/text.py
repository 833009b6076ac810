"""Small helpers the tool-markup readers share: tolerant JSON and short, clipped text.

Tool arguments and results are JSON more often than not, but not always, and not always JSON
that orjson accepts; summaries show them in a few words. Kept apart so the markup parser, the
output verdicts and the shell heuristics read and show values the same way.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from trajectory_compressor.read.jsonl import json_depth


def clip(text: str, limit: int) -> str:
    """`text` with whitespace squeezed to single spaces, cut to `limit` chars with an ellipsis.

    The cut backs up to a word boundary when one is near, so words are not left half-shown; in
    a path it backs up to the last `/` (`git diff -- astropy/wcs/…`, not `astropy/wcs/wcs.p…`),
    so no part of a path is shown that names another file.
    """
    if limit <= 0:
        return ""
    # Squeezing only shortens, so a generous prefix is enough and keeps huge values cheap.
    squeezed = " ".join(text[: limit * 4 + 64].split())
    if len(squeezed) <= limit:
        return squeezed
    cut = squeezed[: max(limit - 1, 0)]
    space = cut.rfind(" ", max(len(cut) - 12, 0))
    if space > 0:
        cut = cut[:space]
    else:
        slash = cut.rfind("/", cut.rfind(" ") + 1)
        if 0 < slash < len(cut) - 1 and squeezed[len(cut)] not in " /":
            cut = cut[: slash + 1]
    return cut.rstrip() + "…"


def plural(n: int, word: str) -> str:
    """ "1 line", "2 lines": a count with its noun."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# JSON in a tool's text nested deeper than this is read as text: the readers of tool calls and
# results recurse into what they parse, and orjson parses 1024 levels, past Python's recursion
# limit (a 1000-deep `[[[...]]]` in a tool output once stopped the run).
NESTING_LIMIT = 200


def loads(text: str) -> Any:
    """Parsed JSON, or None when `text` is not JSON (orjson first; json for ints beyond 64 bits)
    or nests deeper than `NESTING_LIMIT`."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
    return None if too_deep(text, value) else value


def too_deep(text: str | bytes, value: Any) -> bool:
    """Whether `value`, parsed from `text`, nests deeper than `NESTING_LIMIT` (counting brackets
    first, at C speed: only text with enough of them is walked)."""
    brackets = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    return brackets > NESTING_LIMIT and json_depth(value) > NESTING_LIMIT


def dumps(value: Any) -> str:
    """Compact JSON text of `value`, keeping non-ASCII characters as they are."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # ints beyond 64 bits, which json.loads accepted
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
