"""A region's digest and anchor ranking extended turn group by turn group equal those of the whole.

`--windows` keeps the extractive summarizer's digest and ranking from one window's region to the
next (`SummaryCarry`), so each turn is read once; what it writes must not depend on that.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajectory_compressor.count import TokenCounter, load_tokenizer
from trajectory_compressor.summarize.anchor_rank import AnchorRanking, ranked_anchors
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.extractive.digest import RegionDigest, digest_region
from trajectory_compressor.summarize.extractive.render import Renderer
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import SummaryCarry, SummaryRequest, Turn


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter(load_tokenizer())


_PATHS = ["src/a.py", "src/b/a.py", "lib/a.py", "tests/test_a.py", "pkg/models/query.py", "sql/query.py", "README"]
_ERRORS = [
    "Traceback (most recent call last):\n  File \"src/a.py\", line 3, in f\nKeyError: 'user_id'",
    "ValueError: bad value 1234",
    "ls: cannot access 'x': No such file or directory",
    "error: build failed",
    "FAILED tests/test_a.py::test_one - AssertionError",
]
_LINES = ["Warning: deprecated since 2.0.1", "def f(x):", "    return x + 1", "PASSED", "collected 12 items", ""]


@st.composite
def groups(draw: st.DrawFn) -> list[Turn]:
    """One turn group: a user's words now and then, an assistant turn with calls (or none), and
    results for some of them (one merged, one missing, one with no call waiting)."""
    turns: list[Turn] = []
    if draw(st.booleans()) and draw(st.booleans()):
        turns.append(Turn("human", draw(st.sampled_from(["Also fix mia_li_3668.", "Keep EHGLP3.", "ok", "  "]))))
    calls = draw(st.integers(0, 3))
    names = [draw(st.sampled_from(["bash", "str_replace", "view", "search"])) for _ in range(calls)]
    blocks = []
    for name in names:
        path = draw(st.sampled_from(_PATHS))
        if name == "bash":
            arguments: object = {"command": draw(st.sampled_from([f"cat {path}", f"echo x > {path}", "pytest -q"]))}
        elif name == "str_replace":
            arguments = {"path": path, "old_str": "a", "new_str": "b"}
        else:
            arguments = {"path": path, "id": draw(st.sampled_from(["K2M9QX", "9f3c2ab71d", "v1.2.3"]))}
        blocks.append(f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>")
    said = draw(st.sampled_from(["Let me look.", "<think>Check src/a.py first.</think>", "", "Done with 1234."]))
    turns.append(Turn("gpt", "\n".join([said, *blocks])))
    answered = draw(st.integers(0, calls + 1))
    for index in range(answered):
        name = names[index] if index < calls else None
        lines = draw(st.lists(st.sampled_from(_LINES), max_size=6))
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(_ERRORS)))
        body = json.dumps({"tool_call_id": f"call_{index}", "name": name, "content": "\n".join(lines)})
        turns.append(Turn("tool", f"<tool_response>\n{body}\n</tool_response>"))
    return turns


rows = st.lists(groups(), min_size=1, max_size=14)
cuts = st.lists(st.integers(1, 14), min_size=1, max_size=6)


def _flat(chunks: list[list[Turn]]) -> list[Turn]:
    return [turn for chunk in chunks for turn in chunk]


def _renderings(renderer: Renderer) -> list[str]:
    return [renderer.richest(), *(renderer.within(size) for size in (40, 200, 600, 1500, 4000))]


@settings(max_examples=150, deadline=None)
@given(rows, cuts)
def test_a_digest_extended_group_by_group_renders_as_the_whole(chunks: list[list[Turn]], sizes: list[int]) -> None:
    turns = _flat(chunks)
    growing = RegionDigest(redact_secrets)
    done = 0
    for size in sizes:  # read at each cut, as the windows read it
        end = min(len(chunks), done + size)
        growing.extend(_flat(chunks[done:end]))
        done = end
        whole = digest_region(_flat(chunks[:done]), redact_secrets)
        assert _renderings(Renderer(growing.digest())) == _renderings(Renderer(whole))
    growing.extend(_flat(chunks[done:]))
    assert _renderings(Renderer(growing.digest())) == _renderings(Renderer(digest_region(turns, redact_secrets)))


@settings(max_examples=150, deadline=None)
@given(rows, cuts, st.sampled_from(["", "Fix src/a.py for mia_li_3668."]))
def test_a_ranking_extended_group_by_group_is_the_whole_regions(
    chunks: list[list[Turn]], sizes: list[int], task: str
) -> None:
    growing = AnchorRanking(known=task, earlier=("OLD1", "K2M9QX"))
    done = 0
    for size in sizes:
        end = min(len(chunks), done + size)
        growing.extend(_flat(chunks[done:end]))
        done = end
        whole = AnchorRanking(known=task, earlier=("OLD1", "K2M9QX")).extend(_flat(chunks[:done]))
        expected = ranked_anchors(_flat(chunks[:done]), known=task, earlier=("OLD1", "K2M9QX"))
        assert growing.ranked() == whole.ranked() == expected
        assert _figures(growing) == _figures(whole)  # each anchor's every figure, not only the order they make


def test_a_result_read_again_keeps_an_anchor_first_seen_in_its_plain_lines_there() -> None:
    """`pkg/util_x.py` is first seen in the first result, in a line that becomes boilerplate when
    two later results repeat it and in a line that does not: read again, that result still shows
    it first in its plain part, as the whole region read at once does."""

    def result(*lines: str) -> Turn:
        return Turn("tool", "<tool_response>\n" + "\n".join(lines) + "\n</tool_response>")

    repeated = "note: pkg/util_x.py checked"
    turns = [Turn("gpt", "Run it."), result(repeated, "Fixed pkg/util_x.py here"), Turn("gpt", "Again."),
             result(repeated), Turn("gpt", "Once more."), result(repeated, "done")]  # fmt: skip
    growing = AnchorRanking()
    for turn in turns:
        growing.extend([turn])
    whole = AnchorRanking().extend(turns)
    assert growing.ranked() == whole.ranked() and _figures(growing) == _figures(whole)


def _figures(ranking: AnchorRanking) -> dict[str, tuple[int, ...]]:
    """Each anchor's figures (private: the order ties on most of them, so only they show a wrong
    first appearance or plain count after a result is read again)."""
    columns = (ranking._first, ranking._count, ranking._last, ranking._sources, ranking._plain)
    return {name: tuple(column[index] for column in columns) for index, name in enumerate(ranking._names)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows, st.sampled_from([60, 200, 750]))
def test_a_summary_carried_from_window_to_window_is_the_summary_of_the_whole(
    counter: TokenCounter, chunks: list[list[Turn]], budget: int
) -> None:
    summarizer = ExtractiveSummarizer(counter)
    carry = SummaryCarry()
    region: list[Turn] = []
    for chunk in chunks:  # each window's region: the one before and the turns that left the context
        region.extend(chunk)
        turns = tuple(region)
        carried = asyncio.run(summarizer.summarize(SummaryRequest(turns, budget, task="Fix it.", carry=carry)))
        alone = asyncio.run(summarizer.summarize(SummaryRequest(turns, budget, task="Fix it.")))
        assert carried.text == alone.text


def test_a_region_that_is_not_the_last_one_grown_is_read_again(counter: TokenCounter) -> None:
    summarizer = ExtractiveSummarizer(counter)
    carry = SummaryCarry()
    first = tuple(Turn("gpt", f"Step {i}: looked at src/mod_{i}.py") for i in range(4))
    other = tuple(Turn("gpt", f"Other {i}: edited lib/x_{i}.py") for i in range(3))
    for turns in (first, first[:2], other, (*other, *first)):
        carried = asyncio.run(summarizer.summarize(SummaryRequest(turns, 200, carry=carry)))
        assert carried.text == asyncio.run(summarizer.summarize(SummaryRequest(turns, 200))).text
