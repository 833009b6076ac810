"""The HTML report and its pure helpers: bins, counts, percentiles, terminal bars, a safe page."""

from __future__ import annotations

import random
import re
from array import array
from html.parser import HTMLParser
from itertools import pairwise

import pytest

from trajectory_compressor.write.html_report import (
    histogram_edges,
    percentiles,
    render_html_report,
    render_terminal_histogram,
    token_histogram,
)


def lengths(n: int, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    return [int(rng.lognormvariate(9.3, 0.8)) for _ in range(n)]


# --- helpers -----------------------------------------------------------------------------------


def test_edges_are_increasing_integers_and_cover_the_range() -> None:
    for low, high, bins in [(0, 50, 10), (250, 444_000, 40), (7, 7, 5), (100, 101, 40)]:
        edges = histogram_edges(low, high, bins)
        assert edges == sorted(set(edges))
        assert all(float(e).is_integer() for e in edges)
        assert edges[0] <= low and edges[-1] >= high


def test_wide_ranges_get_log_bins_and_narrow_ones_linear() -> None:
    log_edges = histogram_edges(250, 444_000, 40)
    widths = [b - a for a, b in pairwise(log_edges)]
    assert widths[-1] > 50 * widths[0]
    linear = histogram_edges(0, 100, 10)
    assert linear == list(range(0, 101, 10))


@pytest.mark.parametrize(("low", "high", "anchor"), [(250, 444_000, 15_251), (110, 2997, 2049), (0, 100, 37)])
def test_anchor_becomes_an_edge(low: int, high: int, anchor: int) -> None:
    edges = histogram_edges(low, high, 30, anchor=anchor)
    assert anchor in edges
    assert edges[0] <= low and edges[-1] >= high


def test_histogram_counts_every_value_once() -> None:
    values = lengths(5000)
    hist = token_histogram(values, 25)
    assert sum(count for _, _, count in hist) == 5000
    assert all(hi > lo for lo, hi, _ in hist)
    assert all(a[1] == b[0] for a, b in pairwise(hist))


def test_histogram_with_explicit_edges_clamps_outliers() -> None:
    hist = token_histogram([-5, 0, 5, 10, 15, 999], [0, 10, 20])
    assert hist == [(0, 10, 3), (10, 20, 3)]  # [0, 10) gets -5, 0, 5; the last bin takes 10, 15, 999
    assert token_histogram([], 10) == []


def test_percentiles_interpolate_like_numpy() -> None:
    values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert percentiles(values, [0, 50, 90, 100]) == {0: 1.0, 50: 5.5, 90: 9.1, 100: 10.0}
    assert percentiles(iter([7]), [50]) == {50: 7.0}
    assert percentiles([], [50]) == {}
    with pytest.raises(ValueError):
        percentiles([1], [101])


def test_terminal_histogram_bars_scale_to_width() -> None:
    hist = [(0, 10, 0), (10, 20, 50), (20, 30, 100), (30, 40, 1)]
    lines = render_terminal_histogram(hist, width=20).splitlines()
    assert len(lines) == 4
    bars = [line.split("│")[1].rstrip(" 0123456789,") for line in lines]
    assert bars[0] == ""
    assert bars[2] == "█" * 20
    assert bars[1] == "█" * 10
    assert bars[3] != "", "a bin with rows never looks empty"
    assert lines[2].endswith(" 100")
    assert render_terminal_histogram([]) == "(no data)"


# --- the page ----------------------------------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_report_is_self_contained_and_escaped() -> None:
    before = lengths(2000)
    after = [min(v, 15_000) for v in before]
    page = render_html_report(
        "Run <script>alert(1)</script> & co",
        {"rows": 2000, "tokens saved": 1_234_567, "ratio": 0.8123, "<b>label</b>": "x"},
        before,
        after,
        15_250,
    )
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert "&lt;b&gt;label&lt;/b&gt;" in page
    assert not re.search(r"https?://", page), "no network references of any kind"
    collector = _Collector()
    collector.feed(page)
    assert "svg" in collector.tags and "rect" in collector.tags
    assert not {"script", "link", "img", "iframe"} & set(collector.tags)
    assert not [value for name, value in collector.attrs if name in {"src", "href"}]
    text = " ".join(collector.text)
    for needle in ("1,234,567", "0.8123", "target 15,250", "tokens per trajectory", "before (2,000 rows)", "after"):
        assert needle in text


def test_target_line_separates_after_bars() -> None:
    before = lengths(3000, seed=1)
    target = 15_250
    after = [min(v, target) for v in before]
    page = render_html_report("r", {}, before, after, target)
    line = re.search(r'<line x1="([\d.]+)" x2="\1" y1="[\d.]+" y2="[\d.]+" stroke="#d1495b"', page)
    assert line, "the target line is drawn"
    target_x = float(line.group(1))
    after_bars = [float(x) for x in re.findall(r'<rect x="([\d.]+)"[^>]*fill="#1f8a70"><title>after', page)]
    assert after_bars and max(after_bars) < target_x  # nothing at or under the target right of the line


def test_report_without_after_or_rows() -> None:
    page = render_html_report("analysis", {"rows": 3}, [100, 200, 300], None, 250)
    assert "<svg" in page and "after (" not in page
    assert "1 (33.3%)" in page  # over target
    empty = render_html_report("nothing", {}, [], None, 1000)
    assert "<svg" in empty and "–" in empty


def test_million_rows_render_to_a_page_that_does_not_grow_with_the_rows() -> None:
    # No timing here (it failed on a busy machine): the page is drawn from fixed bins, so its
    # size must not depend on the number of rows.
    before = array("q", lengths(1_000_000, seed=2))
    page = render_html_report("big", {"rows": 1_000_000}, before, before, 15_250)
    assert "1,000,000 rows" in page
    small = array("q", lengths(1_000, seed=2))
    small_page = render_html_report("big", {"rows": 1_000}, small, small, 15_250)
    assert len(page) < 2 * len(small_page)
