"""A huge turn reaches summarizers, redaction and fidelity by its head and tail, cut at line breaks."""

from __future__ import annotations

import json
import re

import pytest

from trajectory_compressor.summarize.fidelity import row_text, salient_items
from trajectory_compressor.summarize.fidelity.anchors import hidden_needed_anchors
from trajectory_compressor.summarize.huge_turns import HUGE_TURN_CHARS, elide_huge, elide_huge_turns
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import Turn

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
MARKER = re.compile(r"\n\[\.\.\. ([\d,]+) characters elided \.\.\.\]\n")


def _log(lines: int, *, escaped: bool = False) -> str:
    text = "\n".join(f"line {i:07d}: GET /api/items/{i * 7919 % 100_000} status=200" for i in range(lines))
    return json.dumps({"content": text}) if escaped else text


def test_a_turn_up_to_the_limit_is_shown_whole() -> None:
    text = "x" * HUGE_TURN_CHARS
    assert elide_huge(text) is text
    turns = [Turn("tool", text), Turn("gpt", "ok")]
    assert all(a is b for a, b in zip(elide_huge_turns(turns), turns, strict=True))


@pytest.mark.parametrize("escaped", [False, True], ids=["newlines", "json-escaped"])
def test_a_huge_turn_is_its_head_and_tail_cut_at_line_breaks(escaped: bool) -> None:
    text = _log(60_000, escaped=escaped)
    assert len(text) > 2 * HUGE_TURN_CHARS
    view = elide_huge(text)
    assert len(view) <= HUGE_TURN_CHARS
    head, count, tail = MARKER.split(view)
    assert text.startswith(head) and text.endswith(tail)
    assert int(count.replace(",", "")) == len(text) - len(head) - len(tail), "the marker says how much went"
    assert len(head) > HUGE_TURN_CHARS // 3 and len(tail) > HUGE_TURN_CHARS // 3
    newline = "\\n" if escaped else "\n"
    assert head.endswith(newline), "the head ends at a line break"
    assert text[: len(text) - len(tail)].endswith(newline), "the tail starts after one"
    assert elide_huge(view) is view, "a view is not huge: eliding it again changes nothing"


@pytest.mark.parametrize("escaped", [False, True], ids=["newlines", "json-escaped"])
@pytest.mark.parametrize("where", ["head", "tail"])
def test_a_credential_at_a_cut_is_never_shown_in_part(escaped: bool, where: str) -> None:
    """A cut falls at a line break, so the line holding a credential is kept or dropped whole,
    and redaction then masks it."""
    newline = "\\n" if escaped else "\n"
    filler = "".join(f"row {i:06d} value={i}{newline}" for i in range(80_000))
    half = (HUGE_TURN_CHARS - 64) // 2
    at = half - 20 if where == "head" else len(filler) - half - 20  # the secret's line spans the cut
    text = f"{filler[:at]}{newline}AWS_SECRET_ACCESS_KEY={SECRET}{newline}{filler[at:]}"
    shown = redact_secrets(elide_huge(text))
    assert not any(SECRET[i : i + 6] in shown for i in range(len(SECRET) - 5)), "no part of the key shows"


@pytest.mark.parametrize(
    ("context", "value"),
    [
        ("DB_PASSWORD=", "Pw1HugeCutAAAA0050"),
        ('"password": "', "hunter2isgood77"),
        ("Bearer ", "Zx9" + "Qw3Rt7Yu2" * 4),
    ],
    ids=["assignment", "json-key", "bearer"],
)
@pytest.mark.parametrize("where", ["head", "tail"])
def test_a_cut_in_one_huge_line_leaves_no_bare_value_whose_name_went_with_the_middle(
    context: str, value: str, where: str
) -> None:
    """A minified dump has no line break near a cut: the cut can fall right after a credential's
    name (the value starts the tail) or inside the value (the head ends with its start). Either
    way no part of the value reaches a reader of the view, before or after redaction."""
    half = (HUGE_TURN_CHARS - 256) // 2
    filler = "k=v " * (HUGE_TURN_CHARS // 2)
    at = half - 5 if where == "head" else 2 * len(filler) - half  # the value starts just before / at the cut
    before = filler + filler
    text = before[: at - len(context)] + context + value + '" ' + before[at:]
    view = elide_huge(text)
    assert MARKER.search(view) and len(view) <= HUGE_TURN_CHARS and elide_huge(view) is view
    for shown in (view, redact_secrets(view)):
        assert not any(value[i : i + 5] in shown for i in range(len(value) - 4)), where


def test_fidelity_reads_a_huge_turn_by_its_head_and_tail() -> None:
    text = "start id=AB12CD\n" + _log(60_000) + "\nTraceback\nValueError: bad value at the end"
    middle = "line 0030000:"
    assert middle in text
    region = [Turn("gpt", "I read the log."), Turn("tool", text)]
    items = salient_items(region)
    assert "ValueError" in items.errors, "the tail is read"
    corpus = row_text(region)
    assert "AB12CD" in corpus and middle not in corpus
    anchors = hidden_needed_anchors([Turn("tool", text), Turn("gpt", "the id AB12CD and line 0030000")], {0})
    assert "AB12CD" in anchors and "0030000" not in anchors
