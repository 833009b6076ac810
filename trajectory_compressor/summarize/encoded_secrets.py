"""Credentials inside a base64 or hex blob: `echo c2stcHJvai1… | base64 -d`, `xxd -p key.bin`.

The rules of `redact` read text, and an escape of it (`escapes`); a blob that encodes text is
neither, so a key an agent printed through `base64` or `xxd` went through them whole, into a
prompt, or into the extractive summary's index as an exact value (a hex blob is kept there: hashes
look alike). Here each blob is decoded, and when its bytes are text (UTF-8, printable), the rules
read that text; a blob whose text holds a credential is masked whole.

Cheap where there is nothing to find: a blob is a whole run of at least `MIN_BLOB_CHARS` base64
or hex characters (from one character outside that alphabet to the next), and most runs of
ordinary tool output (a path without dots, an identifier, a hash) decode to bytes that are not
text, which one `decode` call tells. A blob inside a blob is read to `MAX_DEPTH` encodings; each
encoding is read once, so the work stays linear in the text.
"""

from __future__ import annotations

import binascii
import re
import string
from base64 import b64decode
from collections.abc import Callable

from trajectory_compressor.summarize.secret_rules import Span

MIN_BLOB_CHARS = 24  # 18 bytes of base64, 12 of hex: shorter encodes no credential the rules name
MAX_DEPTH = 2
_ALPHABET = frozenset(string.ascii_letters + string.digits + "+/_-")
# Each ASCII character to "a" (one of a blob) or " " (any other); other characters stay
# themselves, which no blob holds either. A blob is then a run of "a"s, found by `str.find`.
_SHAPE = str.maketrans({chr(code): "a" if chr(code) in _ALPHABET else " " for code in range(128)})
_LONG_RUN = "a" * MIN_BLOB_CHARS
_RUN_END = re.compile("[^a]")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")
_PRINTABLE_CONTROLS = str.maketrans("", "", "\n\r\t")
# A line break, as written or JSON-escaped (a wrapped blob inside a tool result's JSON string).
_LINE_BREAK_MARKS = ("\\r\\n", "\r\n", "\\n", "\n")
_LINE_BREAKS = re.compile(r"\\[rn]|[\r\n]")


def encoded_secret_spans(text: str, find: Callable[[str, int], list[Span]], depth: int) -> list[Span]:
    """The spans of `text`'s blobs whose decoded text holds a credential (`find(decoded, depth -
    1)` says where, decoding blobs within it while `depth` lasts).

    Found in C: the text's shape (`_SHAPE`) searched for runs of at least `MIN_BLOB_CHARS` blob
    characters (a regex over the text itself read ordinary output at a third of the speed)."""
    if depth <= 0 or len(text) < MIN_BLOB_CHARS:
        return []
    shape = text.translate(_SHAPE)
    spans: list[Span] = []
    start = shape.find(_LONG_RUN)
    while start >= 0:
        end = _run_end(shape, start + MIN_BLOB_CHARS)
        # `base64` wraps its output (76 characters a line; `\n` or `\r\n`, raw or JSON-escaped):
        # lines of the first line's width, in groups of four, then one line more, are one blob;
        # that last line may be the text after the blob (`exit code 0`), so the blob without it
        # is tried too.
        width, line_start, ends = end - start, start, [end]
        while width % 4 == 0 and ends[-1] - line_start == width:
            line_break = next((len(mark) for mark in _LINE_BREAK_MARKS if text.startswith(mark, ends[-1])), 0)
            if not line_break or not shape.startswith("a", ends[-1] + line_break):
                break
            line_start = ends[-1] + line_break
            ends.append(_run_end(shape, line_start))
        resume = ends[-2] if len(ends) > 1 else ends[-1]  # the last line is read on its own too
        for end in reversed(ends[-2:]):
            padded = end + 1 if text.startswith("=", end) else end
            padded = padded + 1 if padded > end and text.startswith("=", padded) else padded
            if _holds_secret(_LINE_BREAKS.sub("", text[start:padded]), find, depth):
                spans.append((start, padded))
                resume = end
                break
        start = shape.find(_LONG_RUN, resume)
    return spans


def _run_end(shape: str, position: int) -> int:
    found = _RUN_END.search(shape, position)
    return found.start() if found else len(shape)


def _holds_secret(blob: str, find: Callable[[str, int], list[Span]], depth: int) -> bool:
    decoded = decoded_text(blob)
    return decoded is not None and bool(find(decoded, depth - 1))


def decoded_text(blob: str) -> str | None:
    """The text a hex or base64 (standard or URL-safe, padded or not) `blob` encodes, or None
    when its bytes are not printable UTF-8 text (a hash, a random key, an image)."""
    try:
        if _HEX.fullmatch(blob):
            raw = bytes.fromhex(blob)
        else:
            body = blob.rstrip("=")
            if len(body) % 4 == 1:
                return None
            urlsafe = "-" in body or "_" in body
            if urlsafe and ("+" in body or "/" in body):
                return None
            raw = b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None, validate=True)
        decoded = raw.decode("utf-8")
    except (ValueError, binascii.Error):  # UnicodeDecodeError is a ValueError
        return None
    return decoded if decoded.translate(_PRINTABLE_CONTROLS).isprintable() else None
