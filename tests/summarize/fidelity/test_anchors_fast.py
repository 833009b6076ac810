"""`anchors_in` reads tokens in one C pass: it must find exactly what the token-by-token rule finds."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLE
from trajectory_compressor.read.formats import detect_format, to_turns
from trajectory_compressor.summarize.fidelity import anchor_tokens, anchors
from trajectory_compressor.summarize.fidelity.anchor_tokens import anchor_kind, anchors_in, unescaped
from trajectory_compressor.summarize.fidelity.anchors import hidden_needed_anchors
from trajectory_compressor.summarize.huge_turns import elide_huge_turns
from trajectory_compressor.summarize.masking import hid
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import Turn

_WORD = re.compile(
    r"https?://[^\s\"'<>()\[\]{}`\\]+"
    r"|[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,}(?![A-Za-z0-9_@+-]|\.[A-Za-z0-9_])"
    r"|[0-9]+(?=-[A-Za-z_][A-Za-z0-9_./]*(?![A-Za-z0-9_./-]))"
    r"|(?:\d{4}-\d\d-\d\dT\d\d(?::\d\d){1,2}|(?:~?/)?[A-Za-z0-9_])[A-Za-z0-9_./-]*"
)  # an email (`mia.li3818@example.com`) and an ISO time (`2024-05-14T16:32:07`) are one token each; a line
# number glued to one word (`133-def`, as grep -n / -C print a line of code) is a token of its own
# An escaped backslash then `n`, `r` or `t` before no lower-case letter is the JSON's text's own escape
# (`\\\\nSQL` holds `\\nSQL`: a new line, then `SQL`); a Windows path (`C:\\\\new_dir`) keeps its name.
_ESCAPES = re.compile(r"\\\\[nrt](?![a-z])|\\[nrt\"\\/]")


def reference_anchors_in(text: str) -> dict[str, None]:
    """The rule as it was first written: a Python step per token (the speed it replaces)."""
    if "\\" in text:
        text = _ESCAPES.sub(lambda m: '"' if m.group(0) == '\\"' else " ", text)
    if "://" in text:  # a URL's credentials as redaction masks them are dropped (`https://u:[REDACTED]@h`)
        text = re.sub(r"://[^\s/@:\[\]]*:?\[REDACTED\]@", "://", text)
    found: dict[str, None] = {}
    for match in _WORD.finditer(text):
        start, end = match.span()
        tag = text[start - 1 : start] in ("<", "/") and text.startswith(">", end) and "@" not in match.group(0)
        if text.startswith('":', end) or tag:
            continue
        word = match.group(0).rstrip(".-/")
        while word.startswith("./"):
            word = word[2:]
        if re.fullmatch(r"[0-9]+p|[0-9]{1,5}d", word):  # a sed address (`1150p`): its line number
            word = word[:-1]
        elif word.startswith(("http://", "https://")) and word.endswith("="):  # a URL cut at a mask
            word = word.split("?", 1)[0].rstrip(".-/") if "?" in word else ""
        if word and word not in found and anchor_kind(word) is not None:
            found[word] = None
    return found


# Everything the rule treats specially: escapes, keys, tags, URLs, paths, separators, markers.
_PIECES = st.sampled_from(
    [
        "a", "Z", "7", "_", ".", "/", "-", "~", "<", ">", '"', ":", "\\", "n", "t", " ", "\n", "\x00", "\x01",
        "é", "https://", "http://x.io/a", '":', "</", "/>", "./", "//", "~/", "src/a.py", "get_user", "mia_li_3668",
        "EHGLP3", "9f3c2ab71d", "v1.2.3", "2025-12-20", "1234", "19.99", "getUser", "np.array", "/bin/x", '\\"',
        "\\n", "\\\\", "<tool_call>", "</tool_call>", '{"k": "v"}', "\x02", "\x03", "\x04", '\\":', "~~/", "<~/",
        ">", "a<b", '"":', "\u4e2d", "\x1c", "\t", "2024-05-14T16:32:07", "2024-05-14T16", ":32", ":07", "T16:32",
        "2024-05-14T16:32", "\x05", "@", "+", ".com", "mia.li3818", "@example.com", "@x.io", "a@b.co", "@property",
        "pkg@1.2.3", "-", "git@github.com:", "\\n@", "co", "133", "133-def", "-def", "-Nov-26", "-abcd-", "12-x/y.z",
        "1150p", "p", "d", "1234567d", "\u0661\u0662\u0663-def", "?token=", "[REDACTED]", "&x=1", "=", "?", "http://x.io/?a=",
        "[REDACTED]@", "https://alice:", "bob:", "@h.io/x", "\\\\n", "\\\\t", "SQL", "r", "nSQL",
    ]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_the_one_pass_reading_finds_what_the_token_by_token_rule_finds(text: str) -> None:
    assert list(anchors_in(text)) == list(reference_anchors_in(text))
    if "\\" in text:
        assert unescaped(text) == _ESCAPES.sub(lambda m: '"' if m.group(0) == '\\"' else " ", text)


def test_every_turn_of_the_sample_data_reads_the_same() -> None:
    with open(SAMPLE, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            for turn in to_turns(record, detect_format(record)):
                assert list(anchors_in(turn.value)) == list(reference_anchors_in(turn.value))


def test_a_tag_whose_slash_opens_no_token_is_still_a_tag() -> None:
    # "//x>": the first "/" opens no token, the second does, and the token is a tag.
    text = "a //tool_x> b/~/c_d> ~/e_f> mia_li_3668"
    assert list(anchors_in(text)) == list(reference_anchors_in(text)) == ["~/e_f", "mia_li_3668"]


def test_a_text_with_a_url_reads_such_a_tag_by_its_spans_too() -> None:
    # A URL sends the text to the tokenizing regex, which cannot tell "//x>" from "/x>": the spans do.
    text = "see https://a.io/x //tool_x> b/~/c_d> ~/e_f> mia_li_3668"
    assert list(anchors_in(text)) == list(reference_anchors_in(text)) == ["https://a.io/x", "~/e_f", "mia_li_3668"]


def test_an_email_in_angle_brackets_is_no_tag_whichever_way_the_text_is_read() -> None:
    # Alone (the one regex pass), beside a "//x>" tag (the spans), beside a URL, and an `@` that
    # joins nothing (runs: no email there, so the one-pass reading keeps the text).
    cases = {
        "From: <mia.li3818@example.com>": ["mia.li3818@example.com"],
        "a //tool_x> <mia.li3818@example.com>": ["mia.li3818@example.com"],
        "see https://a.io/x <jon.d@b.org>": ["https://a.io/x", "jon.d@b.org"],
        "@property x@1.2.3 <a@b.c> mia_li_3668": ["1.2.3", "mia_li_3668"],
    }
    for text, expected in cases.items():
        assert list(anchors_in(text)) == list(reference_anchors_in(text)) == expected


def test_full_caches_are_emptied_and_the_readings_stay_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"run{i} src/mod_{i}/a.py id_{i} plain{i}x" for i in range(6)]
    expected = [list(reference_anchors_in(text)) for text in texts]
    monkeypatch.setattr(anchor_tokens, "_RUN_CACHE_SIZE", 2)
    monkeypatch.setattr(anchors._chunk_anchors, "_entries", 2)
    assert [list(anchors_in(text)) for text in texts] == expected
    assert len(anchor_tokens._RUN_ANCHORS) <= 2 and len(anchor_tokens._PLAIN_RUNS) <= 2
    # The kept result shows the second text's anchors before the assistant uses them: read by chunks.
    turns = [Turn("tool", " ".join(texts)), Turn("tool", texts[1]), Turn("gpt", texts[0]), Turn("gpt", texts[1])]
    needed = hidden_needed_anchors(turns, {0})
    assert needed == reference_hidden_needed_anchors(turns, {0}) == tuple(expected[0])
    assert len(anchors._chunk_anchors._known) <= 2


def reference_hidden_needed_anchors(turns: list[Turn], hidden: set[int]) -> tuple[str, ...]:
    """The rule as first written: every turn read whole; a needed anchor that the turn that
    introduced it (the first hidden one holding it) or the turn that first uses it shows as a
    credential (masking changes how often it occurs there) is left out."""
    read = elide_huge_turns(turns)
    introduced: dict[str, int] = {}
    visible: dict[str, None] = {}
    needed: dict[str, int] = {}
    for index, turn in enumerate(read):
        anchors = reference_anchors_in(turn.value)
        if index in hidden:
            for anchor in anchors:
                introduced.setdefault(anchor, index)
            continue
        if turn.role in ("human", "gpt") and introduced:
            needed.update((a, index) for a in anchors if a in introduced and a not in visible and a not in needed)
        visible.update(anchors)

    def shown_as_credential(anchor: str, index: int) -> bool:
        text = read[index].value
        return hid(anchor, text, redact_secrets(text))

    return tuple(
        anchor
        for anchor, used_at in needed.items()
        if not shown_as_credential(anchor, introduced[anchor]) and not shown_as_credential(anchor, used_at)
    )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["human", "gpt", "tool"]), st.lists(_PIECES, max_size=12).map("".join))),
    st.data(),
)
def test_the_needed_anchors_read_around_occurrences_are_those_read_whole(
    items: list[tuple[str, str]], data: st.DataObject
) -> None:
    turns = [Turn(role, text) for role, text in items]
    hidden = {i for i in range(len(turns)) if data.draw(st.booleans())}
    assert hidden_needed_anchors(turns, hidden) == reference_hidden_needed_anchors(turns, hidden)


def test_the_sample_data_needs_the_same_anchors() -> None:
    with open(SAMPLE, encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            record = json.loads(line)
            turns = to_turns(record, detect_format(record))
            middle = set(range(2, max(2, len(turns) - 6)))
            for hidden in (middle, {i for i in range(len(turns)) if (i + number) % 3 == 0}):
                assert hidden_needed_anchors(turns, hidden) == reference_hidden_needed_anchors(turns, hidden)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ09_./-é²١ǅİ ")), max_size=16) | st.text(max_size=16))
def test_the_quick_letter_and_digit_tests_answer_as_str_does(word: str) -> None:
    from trajectory_compressor.summarize.fidelity import salient

    assert anchor_tokens._has_alpha(word) == any(map(str.isalpha, word))
    assert salient.has_digit(word) == any(map(str.isdigit, word))
