"""Cutting a rendered chat into pieces that count, together, exactly as the whole."""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.count.chat_fixtures import QWEN_ADDED, QWEN_SPECIAL, family_tokenizer
from trajectory_compressor.count.chat_pieces import (
    AddedToken,
    CutPoints,
    PieceGroup,
    count_groups,
    group_pieces,
    message_bounds,
    shared_counts,
)


def test_message_bounds_give_unknown_and_out_of_order_starts_to_the_message_before() -> None:
    assert message_bounds([5, 10, 20], 30) == [0, 10, 20]  # the preamble before message 0 is its own
    assert message_bounds([5, None, 20, None], 30) == [0, 20, 20, 30]
    assert message_bounds([None, 12, 4, 18], 30) == [0, 12, 18, 18]  # 4 < 12: out of order, unknown
    assert message_bounds([0, 40], 30) == [0, 30]  # past the end: unknown


def test_cut_points_next_to_added_tokens() -> None:
    cuts = CutPoints([AddedToken("<s>"), AddedToken("<l>", lstrip=True), AddedToken("<r>", rstrip=True)])
    text = "ab<s>cd <l>ef<r> gh<r>ij"
    assert cuts.is_cut(text, 0) and cuts.is_cut(text, len(text))
    assert cuts.is_cut(text, 2) and cuts.is_cut(text, 5)  # before and after <s>
    assert not cuts.is_cut(text, 3) and not cuts.is_cut(text, 1)
    assert not cuts.is_cut(text, 8)  # <l> takes the space before it
    assert cuts.is_cut(text, 11)  # after <l>
    assert not cuts.is_cut(text, 16)  # <r> takes the space after it
    assert cuts.is_cut(text, text.index("ij"))
    # A message starting at "\n<s>" moves over the whitespace to the token, not past a limit.
    assert cuts.snap("x\n\n<s>y", 1, 10) == 3
    assert cuts.snap("x\n\n<s>y", 1, 2) is None
    assert cuts.snap("x\nz<s>y", 1, 10) is None


def test_shared_counts_add_up_to_the_whole() -> None:
    assert shared_counts(10, [3, 4, 2]) == [3, 4, 3]
    assert shared_counts(10, [3, 4, 0]) == [3, 7, 0]  # the last non-empty piece takes the rest
    assert shared_counts(7, [3, 4, 2]) == [3, 2, 2]  # taken from the largest first
    assert sum(shared_counts(1, [3, 4, 2])) == 1 and min(shared_counts(1, [3, 4, 2])) >= 0


def test_groups_count_whole_and_pieces_in_one_call() -> None:
    calls: list[list[str]] = []

    def count_many(texts: Any) -> list[int]:
        calls.append(list(texts))
        return [len(text) + (1 if "+t" in text else 0) for text in texts]  # "+t" joins: whole != sum

    cuts = CutPoints([AddedToken("<s>")])
    text = "pre<s>one+two<s>three"
    groups = group_pieces(text, [None, 3, 10, 13], cuts)  # 10 is no cut: messages 1 and 2 go together
    assert groups == [PieceGroup(0, [0], 3), PieceGroup(1, [3, 10], 13), PieceGroup(3, [13], len(text))]
    [counts] = count_groups([(text, groups)], count_many)
    assert calls == [["pre", "<s>one+two", "<s>one+", "two", "<s>three"]]
    assert counts == [3, 7, 4, 8]  # "<s>one+two" counts 11 whole, 7 + 3 apart: the last piece takes 1


@cache
def _tokenizer(family: str) -> Any:
    return family_tokenizer(family, None)


# The bundled tokenizer's own markers (added tokens it normalizes, with an empty normalizer) and
# Qwen's (added to it, not normalized), among text that merges easily.
DEEPSEEK_MARKERS = ["<｜User｜>", "<｜Assistant｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>"]
TEXTS = ["user", "assistant", " ", "\n", "\n\n", "  ", "hello", " world", "日本語", "🤖", "{", '"a"', "<think>"]
FRAGMENTS = st.sampled_from([*QWEN_SPECIAL, *QWEN_ADDED, *DEEPSEEK_MARKERS, *TEXTS])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["qwen", "deepseek"]), st.lists(FRAGMENTS, min_size=1, max_size=30))
def test_pieces_cut_at_cut_points_count_as_the_whole(family: str, fragments: list[str]) -> None:
    """The property the exact count rests on, on the real tokenizer (as bundled, and with Qwen's tokens)."""
    tokenizer = _tokenizer(family)
    cuts = CutPoints.of(tokenizer.backend_tokenizer)
    text = "".join(fragments)

    def count(piece: str) -> int:
        return len(tokenizer.encode(piece, add_special_tokens=False))

    whole = count(text)
    for position in range(1, len(text)):
        if cuts.is_cut(text, position):
            assert count(text[:position]) + count(text[position:]) == whole, (text, position)


def test_the_bundled_tokenizers_markers_are_cut_points() -> None:
    cuts = CutPoints.of(_tokenizer("deepseek").backend_tokenizer)
    text = "a<｜User｜>b<｜tool▁output▁end｜>c"
    expected = [1, text.index("b"), text.index("b") + 1, text.index("c")]  # either side of each marker
    assert [position for position in range(1, len(text)) if cuts.is_cut(text, position)] == expected
