"""The decoded view of escaped text that credential rules read, and the way back to the original."""

from __future__ import annotations

import json
import random

import pytest

from trajectory_compressor.summarize.escapes import ESCAPE, unescaped


def test_text_without_escape_sequences_has_no_view() -> None:
    assert unescaped("plain text\nwith a real newline") is None
    assert unescaped(r"C:\Users\dev and \d+ are not escapes") is None


@pytest.mark.parametrize(
    ("escaped", "decoded"),
    [
        (r"A=1\nB=2", "A=1\nB=2"),  # a JSON string once
        (r"A=1\\nB=2", "A=1\nB=2"),  # JSON inside JSON: `\n` escaped again
        (r"A=1\\\\nB=2", "A=1\nB=2"),  # and again
        (r"a\tb\r\nc", "a\tb\r\nc"),
        (r"\"key\": \"v\"", '"key": "v"'),
        (r"\\\"key\\\": \\\"v\\\"", '"key": "v"'),
        (r"DB_PASSWORD\u003dx\u0027", "DB_PASSWORD=x'"),  # Gson escapes `=` and `'`
        (r"https:\/\/host\/path", "https://host/path"),
        (r"it'\''s", "it'''s"),  # shell's quote dance
        (r"C:\Users\x \d+", r"C:\Users\x \d+"),  # not escapes: left as they are
        (r"C:\\Users \\\\x", r"C:\Users \x"),  # a run of backslashes is one (escaped) backslash
    ],
)
def test_escape_sequences_read_as_the_characters_they_stand_for(escaped: str, decoded: str) -> None:
    view = unescaped(escaped)
    assert (view.text if view is not None else escaped) == decoded


@pytest.mark.parametrize(
    "escaped",
    [r"ok \ud83d\ude00 done", r"half \ud83d", r"low \udfff end", r"deep \\ud83d\\ude00", r"\uD800\uDBFF"],
)
def test_an_escaped_surrogate_reads_as_the_replacement_character(escaped: str) -> None:
    # `json.dumps` writes an emoji as the pair `\ud83d\ude00` (ensure_ascii): decoded one by
    # one, each half was a lone surrogate, which no UTF-8 matcher takes (the run stopped).
    view = unescaped(escaped)
    assert view is not None
    view.text.encode("utf-8")
    assert "\ufffd" in view.text and len(view.text) == len(ESCAPE.sub("x", escaped))


def test_a_span_maps_back_to_whole_escape_sequences() -> None:
    original = r"x\\nSECRET\\ny\u003dz"
    view = unescaped(original)
    assert view is not None and view.text == "x\nSECRET\ny=z"
    start = view.text.index("SECRET")
    assert original[slice(*view.original_span(start, start + 6))] == "SECRET"
    # A span that takes in a decoded character takes in its whole escape sequence.
    assert original[slice(*view.original_span(start - 1, start + 7))] == r"\\nSECRET\\n"
    assert original[slice(*view.original_span(len(view.text) - 2, len(view.text)))] == r"\u003dz"
    assert view.original_span(0, 1) == (0, 1)


def test_masking_view_spans_keeps_json_valid() -> None:
    """Random JSON strings, once or twice encoded: any span of the view, masked in the original, stays valid."""
    rng = random.Random(7)
    alphabet = ["a", "Z", "0", "=", " ", "\n", "\t", "\r", '"', "'", "\\", "/", "é", "\u2028", "\x01", "😀"]
    for trial in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        encoded = json.dumps(text, ensure_ascii=trial % 2 == 0)[1:-1]
        if trial % 3 == 0:
            encoded = json.dumps(encoded)[1:-1]
        view = unescaped(encoded)
        if view is None:
            continue
        start = rng.randrange(len(view.text))
        end = rng.randint(start + 1, len(view.text))
        left, right = view.original_span(start, end)
        masked = encoded[:left] + "[REDACTED]" + encoded[right:]
        decoded = json.loads(f'"{masked}"')
        if trial % 3 == 0:
            json.loads(f'"{decoded}"')  # the inner layer is valid too


@pytest.mark.parametrize("text", ["\\" * 200_000, "\\n" * 100_000, ("\\" * 5_000 + "x") * 40, "\\u00" * 50_000])
@pytest.mark.timeout(120)  # a hang guard: linear, well under a second; quadratic, many minutes
def test_long_backslash_runs_are_linear(text: str) -> None:
    unescaped(text)
