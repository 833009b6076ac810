"""Counting a long text in pieces: the pieces add up exactly to the one-piece count.

Every count here is the real bundled tokenizer's (and variants of it: Qwen's added tokens, a
GPT-2-style pre-tokenizer, an NFKC normalizer), never a stand-in. The pieces are made small
(a few hundred characters) so that every text is cut many times.
"""

from __future__ import annotations

import itertools
import json
import random
from functools import cache
from typing import Any

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import normalizers, pre_tokenizers

from tests.count.chat_fixtures import QWEN_ADDED, QWEN_SPECIAL, family_tokenizer
from trajectory_compressor.count import TokenCounter
from trajectory_compressor.count.text_pieces import (
    CHECK_CHARS,
    AddedTokenSpans,
    PreTokenCuts,
    UncountableTextError,
    count_in_pieces,
    settled_boundary,
    whole_text_reason,
)
from trajectory_compressor.count.tokenizer import bundled_tokenizer_dir
from trajectory_compressor.types import Turn


def _bare(pre_tokenizer: Any = None, normalizer: Any = None) -> Any:
    """The bundled tokenizer.json, with another pre-tokenizer or normalizer when given."""
    tokenizer = tokenizers.Tokenizer.from_file(str(bundled_tokenizer_dir() / "tokenizer.json"))
    if pre_tokenizer is not None:
        tokenizer.pre_tokenizer = pre_tokenizer
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    return tokenizer


@cache
def _backend(kind: str) -> Any:
    if kind == "bundled":
        return _bare()
    if kind == "qwen":  # the bundled tokenizer with Qwen's added tokens, some of them stripping
        return family_tokenizer("qwen", None).backend_tokenizer
    if kind == "gpt2-regex":  # GPT-2's expression: " ?\p{L}+", "\s+(?!\S)" (lookahead across a cut)
        return _bare(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True))
    if kind == "nfkc":
        return _bare(normalizer=normalizers.NFKC())
    raise ValueError(kind)


def _count(backend: Any, text: str) -> int:
    return len(backend.encode(text, add_special_tokens=False).ids)


def _cuts(backend: Any, piece_chars: int = 200, max_piece_chars: int = 20_000) -> PreTokenCuts:
    return PreTokenCuts(backend, backend.encode_batch, piece_chars=piece_chars, max_piece_chars=max_piece_chars)


def _code() -> str:
    from trajectory_compressor.count import text_pieces

    with open(text_pieces.__file__, encoding="utf-8") as handle:
        return handle.read()


def _log_lines(count: int) -> str:
    rng = random.Random(7)
    return "\n".join(
        f"2024-05-01T12:{i % 60:02d}:{i * 7 % 60:02d}Z INFO [worker-{i % 8}] GET /api/items/{rng.randrange(10**6)} "
        f"status={rng.choice([200, 404, 500])} in {rng.randrange(500)}ms user=\u00e9l\u00e8ve"
        for i in range(count)
    )


# Kinds of text a huge value is made of: code, whitespace runs, CJK, emoji, a log as a tool result
# stores it (JSON-escaped: its newlines are the two characters backslash-n), digits, markup.
KINDS_OF_TEXT = {
    "code": _code(),
    "whitespace runs": "x = 1\n\n\n    \t\t(y)\n  \n" * 40 + " " * 700 + "end\t\t\t\n\r\n\r\n" * 30,
    "cjk": "日本語のテキスト、カタカナ・ひらがなー。漢字と仮名が混ざった文章です。中文文本，没有空格。" * 30,
    "emoji": "🤖👍🏽 status 👨‍👩‍👧‍👦 ok ✔️ 🇫🇷 flags ❤️‍🔥 " * 60,
    "json-escaped log": json.dumps({"name": "bash", "content": _log_lines(120)}),
    "plain log": _log_lines(120),
    "digits": "1234567890 " * 100 + "3.14159265358979" * 30 + "\n".join(str(i * 7919) for i in range(300)),
    "markup": "<think>plan</think>\n<tool_call>\n{}\n</tool_call><｜User｜>hi<｜Assistant｜>" * 40,
    "combining marks": "e\u0301\u0302 a\u0308b n\u0303o Z\u0351\u0352\u0353 " * 100,
}


@pytest.mark.parametrize("kind", sorted(KINDS_OF_TEXT))
def test_a_text_cut_in_pieces_counts_as_the_whole_text(kind: str) -> None:
    backend = _backend("bundled")
    text = KINDS_OF_TEXT[kind]
    spans = _cuts(backend).spans(text)
    assert len(spans) >= len(text) // 2_000, "cut many times"
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(spans)), "no gap, no overlap"
    assert sum(_count(backend, text[start:end]) for start, end in spans) == _count(backend, text)


def test_the_counter_counts_a_long_text_in_pieces_as_the_tokenizer_counts_it_whole(counter: TokenCounter) -> None:
    small = TokenCounter(counter.tokenizer)
    small.cuts = _cuts(small._backend, piece_chars=300)
    texts = [KINDS_OF_TEXT[kind] for kind in sorted(KINDS_OF_TEXT)]
    expected = [len(counter.tokenizer(text, add_special_tokens=False)["input_ids"]) for text in texts]
    assert small.count_many(texts) == expected
    assert [small.count(text) for text in texts] == expected
    assert small.count_conversations([[Turn("tool", text) for text in texts]]) == [expected]


def test_truncating_a_long_text_encodes_one_piece_and_cuts_where_the_whole_text_would() -> None:
    counter = TokenCounter(_backend("bundled"), name="bundled")
    text = KINDS_OF_TEXT["plain log"]
    small = TokenCounter(_backend("bundled"), name="bundled")
    small.cuts = _cuts(small._backend, piece_chars=300)
    for budget in (1, 17, 250, 1_000, 2_345, _count(counter._backend, text) - 1, 10**6):
        assert small.truncate(text, budget) == counter._truncate_piece(text, budget), budget


# --- where a cut may fall --------------------------------------------------------------------------

LATIN = ["user", " ", "\n", "\n\n", "  ", "\t", "\r\n", "hello", " world", "Ab", "a'", "'s", "--", "x\\n", "_"]
OTHER = ["日本語", "ー", "・", "🤖", "\u200d", "\ufe0f", "é", "\u0301", "½", "Ⅻ", "ﬁ", "㎏", "①", "\u3000", "\xa0"]
MARKUP = ["{", '"a"', ".", "123", "4", "ab12", "<think>", "</think>", "<｜User｜>", *QWEN_SPECIAL, *QWEN_ADDED]
FRAGMENTS = st.sampled_from([*LATIN, *OTHER, *MARKUP])


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["bundled", "qwen", "gpt2-regex", "nfkc"]), st.lists(FRAGMENTS, min_size=2, max_size=40))
def test_every_cut_taken_counts_exactly(kind: str, fragments: list[str]) -> None:
    """The property the piecewise count rests on, at every position of the text, on real tokenizers."""
    backend = _backend(kind)
    cuts = _cuts(backend)
    text = "".join(fragments)
    whole = _count(backend, text)
    for position in range(1, len(text)):
        if cuts.is_exact_cut(text, position):
            assert _count(backend, text[:position]) + _count(backend, text[position:]) == whole, (text, position)


@settings(max_examples=80, deadline=None)
@given(st.lists(FRAGMENTS, min_size=2, max_size=40))
def test_for_the_bundled_tokenizer_the_two_characters_decide_a_cut(fragments: list[str]) -> None:
    """For the bundled tokenizer a settled boundary is exact by itself (the window re-encoding is a
    guard for other tokenizers): no context beyond the two characters and the added tokens matters."""
    backend = _backend("bundled")
    added = AddedTokenSpans.of(backend)
    text = "".join(fragments)
    whole = _count(backend, text)
    for position in range(1, len(text)):
        if settled_boundary(text[position - 1], text[position]) and not added.spans(text, position):
            assert _count(backend, text[:position]) + _count(backend, text[position:]) == whole, (text, position)


def test_settled_boundaries() -> None:
    assert settled_boundary("a", " ") and settled_boundary("a", ".") and settled_boundary("a", "1")
    assert settled_boundary("\n", "a") and settled_boundary("\n", "{") and settled_boundary("1", "a")
    assert settled_boundary(" ", "1") and settled_boundary(".", "1")
    assert not settled_boundary("a", "b") and not settled_boundary("1", "2")
    assert not settled_boundary("a", "\u0301"), "a combining mark belongs with the letter before it"
    assert not settled_boundary(" ", "a") and not settled_boundary("\t", "("), "after a space or tab: lookahead"
    assert not settled_boundary("\n", "\n") and not settled_boundary("\n", " ")
    assert not settled_boundary(".", "a"), "punctuation then letters is one pre-token ('.abc')"


def test_no_cut_inside_an_added_token_or_the_whitespace_it_strips() -> None:
    added = AddedTokenSpans([("<think>", False, False), ("<r>", False, True), ("<l>", True, False)])
    text = "ab<think>cd"
    assert [p for p in range(1, len(text)) if added.spans(text, p)] == list(range(3, 9))
    assert added.spans("<r>  x", 3) and added.spans("<r>  x", 4), "<r> takes the spaces after it"
    assert added.spans("x  <l>", 1) and not added.spans("x. <l>", 1), "<l> takes the spaces before it"


def _spans_one_by_one(tokens: list[tuple[str, bool, bool]], text: str, position: int) -> bool:
    """`AddedTokenSpans.spans` as its docstring says it, every token tried at every place: the reference."""
    low, high = max(0, position - CHECK_CHARS), min(len(text), position + CHECK_CHARS)
    for start in range(low, high):
        for content, lstrip, rstrip in tokens:
            end = start + len(content)
            if text.startswith(content, start) and (
                start < position < end
                or (rstrip and end <= position and not text[end:position].strip())
                or (lstrip and start >= position and not text[position:start].strip())
            ):
                return True
    return False


def test_added_tokens_found_by_their_text_span_what_trying_each_one_spans() -> None:
    tokens = [("<think>", False, False), ("<r>", False, True), ("<l>", True, False), ("<", False, False),
              ("<th", True, True), ("\u2028x", False, True)]  # fmt: skip
    added = AddedTokenSpans(tokens)
    rng = random.Random(11)
    parts = ["<think>", "<r>", "<l>", "<", "<th", "a", " ", "  ", "\n", "\t", "\u2028", "x", "ink>"]
    for _ in range(300):
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(1, 40)))
        for position in range(1, len(text)):
            assert added.spans(text, position) == _spans_one_by_one(tokens, text, position), (text, position)


@pytest.mark.timeout(120)  # a hang guard: about 2 s here, against 214 s before
@pytest.mark.parametrize("repeated", ["<think>", "<｜User｜>"])
def test_a_long_text_made_of_added_tokens_is_counted_in_seconds_not_minutes(repeated: str) -> None:
    # Every candidate cut is inside an added token: each was looked at, and each look tried all
    # 1,282 of the bundled tokenizer's tokens that start with `<` at every `<` near it (85 s for
    # 70 KB, 214 s for 280 KB, one summary of a looping model or one tool result).
    backend = _backend("bundled")
    counter = TokenCounter(backend, name="bundled")
    text = "Summary. " + repeated * (280_000 // len(repeated))
    assert counter.count(text) == _count(backend, text)


# --- when a text cannot be cut -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "why"),
    [
        (_bare(pre_tokenizers.Metaspace()), "Metaspace"),
        (_bare(pre_tokenizers.ByteLevel(add_prefix_space=True)), "adds a space"),
        (_bare(normalizer=normalizers.Sequence([normalizers.NFC(), normalizers.Strip()])), "Strip"),
        (_bare(normalizer=normalizers.Prepend("▁")), "Prepend"),
    ],
)
def test_a_tokenizer_that_sees_the_text_as_a_whole_is_never_cut(backend: Any, why: str) -> None:
    reason = whole_text_reason(backend)
    assert reason is not None and why in reason
    cuts = _cuts(backend, piece_chars=100, max_piece_chars=1_000)
    assert cuts.spans("word " * 150) == [(0, 750)], "counted whole up to the largest piece"
    with pytest.raises(UncountableTextError, match="cannot be cut for counting") as caught:
        cuts.spans("word " * 300)
    assert why in str(caught.value)


def test_a_tokenizer_without_a_pre_tokenizer_is_never_cut() -> None:
    backend = _bare()
    backend.pre_tokenizer = None
    assert "no pre-tokenizer" in (whole_text_reason(backend) or "")
    assert whole_text_reason(_backend("bundled")) is None
    assert whole_text_reason(_backend("qwen")) is None and whole_text_reason(_backend("nfkc")) is None


def test_a_text_with_no_exact_cut_within_the_largest_piece_is_uncountable() -> None:
    cuts = _cuts(_backend("bundled"), piece_chars=100, max_piece_chars=1_000)
    digits = "7" * 5_000  # digits go in threes from the run's start: no cut inside a run
    with pytest.raises(UncountableTextError, match="no place to cut it"):
        cuts.spans(digits)
    assert len(cuts.spans("7" * 900 + " word" * 40)) > 1, "a piece grows past its size to reach a cut"


# --- batching ------------------------------------------------------------------------------------


def test_pieces_are_counted_a_batch_at_a_time_and_summed_per_text() -> None:
    calls: list[list[str]] = []

    def count_batch(texts: list[str]) -> list[int]:
        calls.append(texts)
        return [len(text) for text in texts]

    def spans_of(text: str) -> list[tuple[int, int]]:
        return [(start, min(start + 10, len(text))) for start in range(0, len(text), 10)] or [(0, 0)]

    short = "short text"
    texts = ["a" * 95, short, "", "b" * 41]
    assert count_in_pieces(texts, count_batch, spans_of, batch_chars=30) == [95, 10, 0, 41]
    assert all(sum(map(len, call)) <= 30 for call in calls), "a call holds at most batch_chars"
    assert sum(len(call) for call in calls) == 10 + 1 + 1 + 5, "every piece counted once"
    assert any(piece is short for call in calls for piece in call), "a text of one piece is not copied"


def test_uncountable_text_is_found_before_anything_is_tokenized() -> None:
    calls: list[list[str]] = []

    def spans_of(text: str) -> list[tuple[int, int]]:
        if text == "bad":
            raise UncountableTextError("bad")
        return [(0, len(text))]

    with pytest.raises(UncountableTextError):
        count_in_pieces(["good", "bad"], lambda texts: calls.append(texts) or [0] * len(texts), spans_of)
    assert calls == []


def test_short_texts_are_counted_whole_in_slices_without_asking_for_cuts() -> None:
    calls: list[list[str]] = []

    def count_batch(texts: list[str]) -> list[int]:
        calls.append(texts)
        return [len(text) for text in texts]

    def spans_of(text: str) -> list[tuple[int, int]]:
        raise AssertionError(f"asked for the cuts of a short text: {text!r}")

    texts = ["a" * 12, "", "b" * 9, "c" * 20, "d" * 3]
    assert count_in_pieces(texts, count_batch, spans_of, whole_up_to=20, batch_chars=22) == [12, 0, 9, 20, 3]
    assert calls == [["a" * 12, "", "b" * 9], ["c" * 20], ["d" * 3]], "consecutive texts, at most batch_chars a call"
    assert count_in_pieces((), count_batch, spans_of, whole_up_to=20) == []
