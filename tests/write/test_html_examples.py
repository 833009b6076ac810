"""Example rows on the pages: masked, escaped, the lost anchors marked, behind a script-free picker."""

from __future__ import annotations

from trajectory_compressor.types import Turn
from trajectory_compressor.write.html_examples import example_picker, make_example, summaries_side_by_side

SECRET = "ghp_" + "Pq8Rs7Tu6Vw5" * 3


def _example(index: int, window: int | None = None):  # type: ignore[no-untyped-def]
    region = [Turn("gpt", "<script>alert(1)</script> calling"), Turn("tool", f"token {SECRET} ticket TK9X63\n" * 3)]
    region += [Turn("tool", "more") for _ in range(20)]
    after = [Turn("gpt", f"Closing TK9X63 now, key {SECRET}."), Turn("tool", "done")]
    return make_example(
        index, window, f"/data/in.jsonl:{index + 1}", region, f"Summary with {SECRET}.", after,
        fidelity=0.5, future=0.0, missed=["TK9X63"],
    )  # fmt: skip


def test_an_example_shows_the_replaced_turns_the_summary_and_the_kept_turns_masked() -> None:
    page = example_picker("ex", [("in.jsonl:1", _example(0)), ("in.jsonl:2 window 1 of 3", _example(1, 1))])
    assert SECRET[:12] not in page and page.count("[REDACTED]") >= 3  # region, summary, kept turn
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<mark>TK9X63</mark>" in page  # the anchor the kept turn needed, lost by the summary
    assert "before: the 22 replaced turns" in page and "… 10 more turns" in page and "then the 2 kept turns" in page
    assert page.count('type="radio"') == 2 and " checked>" in page and "#ex-1:checked ~ #ex-body-1" in page


def test_summaries_side_by_side_are_masked_each_with_its_label() -> None:
    page = summaries_side_by_side(
        [("1: a/x.jsonl", "in.jsonl:1", _example(0)), ("2: b/x.jsonl", "in.jsonl:1", _example(0))]
    )
    assert page.count('class="turn summary"') == 2 and SECRET[:12] not in page
    assert 'title="/data/in.jsonl:1">in.jsonl:1</span>' in page
