"""Streaming JSONL (`.jsonl`, `.jsonl.gz`) reading with line numbers.

Lines are read as bytes, one at a time, so memory does not grow with the file and no text
decoding is paid twice: orjson parses bytes directly, and an unchanged row is written back
from the very bytes it came in as. A line that cannot be used becomes a `SourceRecord`
carrying the error and the raw text, so the run can report it and go on; no line, however
broken, ends the run:

- not JSON (or not UTF-8): rejected, only in the rejects file (it cannot go in a JSON dataset);
- valid JSON nested deeper than `MAX_DEPTH`, holding an integer of more digits than Python
  converts (4300), or holding a lone UTF-16 surrogate escape
  (``"\\ud800"``, valid JSON grammar but not Unicode text): rejected, and because it is valid
  JSON its original bytes are still written to a JSONL dataset unchanged (`raw_is_json`);
- a UTF-8 byte order mark at the start of a file is dropped (it is not part of the first
  record, and would land in the middle of a dataset made of several inputs).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from trajectory_compressor.types import SourceRecord

BOM = b"\xef\xbb\xbf"
# Deeper records are rejected (and written back unchanged): orjson parses 1024 levels, but the
# standard library, which writes what orjson cannot (>255 levels), fails near Python's recursion limit.
MAX_DEPTH = 512
_INT_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300


class TooDeepError(ValueError):
    """Valid or not, the text nests arrays/objects deeper than the parsers go."""


class HugeIntegerError(ValueError):
    """Valid JSON with an integer longer than Python converts (4300 digits, its guard against
    quadratic parsing): the record cannot be read, its bytes can still be written back."""


class LoneSurrogateError(ValueError):
    """The JSON is valid but a string holds an unpaired UTF-16 surrogate: not writable as UTF-8.

    `value` is the parsed value, kept so the reject can still name the record's id.
    """

    def __init__(self, message: str, value: Any) -> None:
        super().__init__(message)
        self.value = value


# A run of 19+ digits may be an integer beyond 64 bits, which orjson silently turns into a float:
# -9223372036854775809 (below int64) has 19, 18446744073709551616 (2**64) has 20.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_NINETEEN_ZEROS = b"0" * 19


def parse_json_line(line: bytes) -> Any:
    """orjson first (fast); the standard library for what orjson refuses but Python's json
    accepts (NaN, Infinity, lone surrogate escapes).

    Raises `ValueError` (or `UnicodeDecodeError`) for text that is not JSON, `TooDeepError`
    for nesting beyond `MAX_DEPTH` and `LoneSurrogateError` for an unpaired surrogate escape,
    never `RecursionError`.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise TooDeepError(f"nested deeper than {MAX_DEPTH} levels") from None
        try:
            value = json.loads(line)
        except RecursionError:
            raise TooDeepError(f"nested deeper than {MAX_DEPTH} levels") from None
        except ValueError as exc:
            if "integer string conversion" in str(exc):
                raise HugeIntegerError(f"an integer of more than {_INT_DIGITS} digits") from None
            raise
        if _has_lone_surrogate(value):
            message = "a string holds a lone UTF-16 surrogate escape (not valid Unicode)"
            raise LoneSurrogateError(message, value) from None
    # Counting brackets is a C-speed scan; only a line with enough of them can be too deep.
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and json_depth(value) > MAX_DEPTH:
        raise TooDeepError(f"nested deeper than {MAX_DEPTH} levels")
    return value


def json_depth(value: Any) -> int:
    """How deep arrays and objects nest in `value`; iterative, visiting containers only (a
    record's strings, however many, cost nothing here)."""
    if not isinstance(value, (dict, list)):
        return 0
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return deepest


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string (key or value) in `value` cannot be encoded as UTF-8; iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def holds_float(value: Any) -> bool:
    """Whether a float is anywhere in decoded JSON `value`; iterative (records nest deep).

    What orjson reads an integer beyond 64 bits as, and what the standard library reads NaN and
    Infinity as: a value without one is exact as orjson read it."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            return True
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


def needs_standard_json(raw: bytes) -> bool:
    """Whether a record must be re-read and re-written with the standard library to keep it exact.

    orjson turns integers beyond 64 bits into floats and writes NaN and Infinity (which Python's
    json reads) as null, without raising. Called only for rows that are rewritten (unchanged rows
    are written from their raw bytes), so the scan costs nothing on the common path; a match
    inside a string only costs the slower path.
    """
    # Nineteen digits in a row, found as nineteen zeros once every digit is one (two passes in C,
    # twice the speed of the regex, which tries a match at every digit of a long row).
    return b"NaN" in raw or b"Infinity" in raw or _NINETEEN_ZEROS in raw.translate(_DIGITS_AS_ZERO)


def parse_record(source: str, line: int, raw: bytes) -> SourceRecord:
    """One `SourceRecord` from the bytes of one record; never raises for bad input."""
    try:
        record = parse_json_line(raw)
    except LoneSurrogateError as exc:
        # The parsed value is kept for the record's id only (escaped where it is shown).
        return SourceRecord(source=source, line=line, record=exc.value, raw=raw, error=str(exc), raw_is_json=True)
    except (TooDeepError, HugeIntegerError) as exc:
        if not is_valid_json(raw):
            return SourceRecord(source=source, line=line, raw=raw, error=f"invalid JSON: {exc}")
        return SourceRecord(source=source, line=line, raw=raw, error=str(exc), raw_is_json=True)
    except (ValueError, UnicodeDecodeError) as exc:
        return SourceRecord(source=source, line=line, raw=raw, error=f"invalid JSON: {exc}")
    # The raw line is kept so an unchanged row is written back byte for byte.
    return SourceRecord(source=source, line=line, record=record, raw=raw)


def record_lines(handle: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes) of each non-blank line of an open JSONL stream, BOM dropped.

    Apart from opening, so a line is numbered and skipped the same wherever its file lies
    (`read.json_files` reads local files and URIs through it).
    """
    for line_number, line in enumerate(handle, start=1):
        raw = line.rstrip(b"\r\n")
        if line_number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        if raw and not raw.isspace():  # not strip(): a copy of every line only to test it
            yield line_number, raw


# --- validating JSON too deep to parse ------------------------------------------------------------

_TOKEN = re.compile(
    rb'\s*(?:(?P<s>"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")'
    rb"|(?P<n>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    rb"|(?P<l>true|false|null|NaN|-?Infinity)"
    rb"|(?P<p>[\[\]{},:]))"
)


def json_spans(text: bytes) -> list[tuple[int, int]] | None:
    """Byte spans of the top-level values of `text` if it is one valid JSON value, else None.

    For a top-level array the spans are its elements; otherwise the one span is the whole value.
    Iterative (an explicit stack), so depth costs memory, not recursion: this is how text
    nested deeper than the parsers go is still recognised as JSON and kept.
    """
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    stack: list[bytes] = []  # open containers: b"[" or b"{"
    expect = "value"  # value | value_or_close | key | key_or_close | colon | comma_or_close | end
    spans: list[tuple[int, int]] = []
    element_start = -1
    top_is_array = False
    position = 0
    end = len(text.rstrip())
    while position < end:
        match = _TOKEN.match(text, position)
        if match is None:
            return None
        start = match.start(match.lastgroup or 0)
        position = match.end()
        kind, token = match.lastgroup, match.group(match.lastgroup or 0)
        if len(stack) == 1 and top_is_array and expect in ("value", "value_or_close") and token != b"]":
            element_start = start
        if expect in ("value", "value_or_close"):
            if token == b"]" and expect == "value_or_close":
                stack.pop()
            elif kind == "p" and token in (b"[", b"{"):
                if not stack and token == b"[":
                    top_is_array = True
                stack.append(token)
                expect = "value_or_close" if token == b"[" else "key_or_close"
                continue
            elif kind == "p":
                return None
        elif expect in ("key", "key_or_close"):
            if token == b"}" and expect == "key_or_close":
                stack.pop()
            elif kind == "s":
                expect = "colon"
                continue
            else:
                return None
        elif expect == "colon":
            if token != b":":
                return None
            expect = "value"
            continue
        elif expect == "comma_or_close":
            if token == b",":
                expect = "value" if stack[-1] == b"[" else "key"
                continue
            if token != (b"]" if stack[-1] == b"[" else b"}"):
                return None
            stack.pop()
        else:  # end: nothing may follow the top-level value
            return None
        # A value (scalar or closed container) is complete.
        if len(stack) == 1 and top_is_array and element_start >= 0:
            spans.append((element_start, position))
            element_start = -1
        expect = "comma_or_close" if stack else "end"
        if not stack and not top_is_array:
            spans = [(len(text) - len(text.lstrip()), position)]
    if expect != "end":
        return None
    return spans


def is_valid_json(text: bytes) -> bool:
    """Whether `text` is one valid JSON value (NaN and Infinity allowed, as the reader allows)."""
    return json_spans(text) is not None
