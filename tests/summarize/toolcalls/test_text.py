"""The short text the tool-markup readers show: clipped at a word, whitespace squeezed."""

from __future__ import annotations

from trajectory_compressor.summarize.toolcalls import clip
from trajectory_compressor.summarize.toolcalls.outcomes import analyze_output
from trajectory_compressor.summarize.toolcalls.text import NESTING_LIMIT, loads


def test_clip() -> None:
    assert clip("a   b\n\nc", 20) == "a b c"
    clipped = clip("word " * 50, 40)
    assert len(clipped) <= 40
    assert clipped.endswith("…")
    assert not clipped.endswith(" …")
    assert clip("anything", 0) == ""


def test_a_path_is_clipped_at_a_slash_never_inside_a_name() -> None:
    """`astropy/wcs/wcs.p…` names a file that is not there; `astropy/wcs/…` says what is known."""
    assert clip("git diff -- astropy/wcs/wcs.py", 28) == "git diff -- astropy/wcs/…"
    assert clip('grep -n "_check_index_together" django/db/models/base.py', 45) == (
        'grep -n "_check_index_together" django/db/…'
    )
    assert clip("cat astropy/wcs/wcs.py and more words", 23) == "cat astropy/wcs/wcs.py…", "a whole path stays"
    assert clip("see src/a.py now please", 16) == "see src/a.py…", "a word boundary near the cut wins"


def test_json_nested_past_the_limit_is_text_and_a_tool_output_of_it_is_read() -> None:
    # orjson parses 1024 levels; the gist of a 1000-deep `[[[...]]]` recursed past Python's
    # limit (RecursionError: the run stopped).
    shallow, deep = "[" * NESTING_LIMIT + "]" * NESTING_LIMIT, "[" * 1000 + "]" * 1000
    assert loads(shallow) is not None and loads(deep) is None
    assert loads('{"a": ' * 1000 + "1" + "}" * 1000) is None
    assert loads('["[[[[", {"k": "]]]]"}]') == ["[[[[", {"k": "]]]]"}]  # brackets in strings are no depth
    assert analyze_output(deep).render() == "ok, 1 line / 2.0k chars"  # read as text
