"""The short text the tool-markup readers show: clipped at a word, whitespace squeezed."""

from __future__ import annotations

from trajectory_compressor.summarize.toolcalls import clip


def test_clip() -> None:
    assert clip("a   b\n\nc", 20) == "a b c"
    clipped = clip("word " * 50, 40)
    assert len(clipped) <= 40
    assert clipped.endswith("…")
    assert not clipped.endswith(" …")
    assert clip("anything", 0) == ""
