"""Example rows on the HTML pages: the replaced turns, the summary, and the kept turns after it.

A first-time user learns more from three rows than from any figure: what the summary replaced,
what it says, and what the turns after it went on to use (the anchors a summary lost are marked
in those turns). Several examples sit behind a picker made of radio buttons and CSS, so the page
stays script-free. Texts are kept cut to what the page can show and masked when drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trajectory_compressor.summarize.llm.prompt import REDACT_MARGIN
from trajectory_compressor.summarize.redact import redact_secrets, word_end
from trajectory_compressor.types import SUMMARY_PREFIX, Turn
from trajectory_compressor.write.html_parts import clip_text, esc

REGION_TURNS_SHOWN = 12
TAIL_TURNS_SHOWN = 6
_TURN_CHARS = 600
_SUMMARY_CHARS = 4000
# clip_text looks at four times what it shows, plus the redaction margin: keeping that much of a
# turn draws exactly what the whole turn would.
_KEEP_CHARS = _TURN_CHARS * 4 + REDACT_MARGIN
_MARKED_MIN_CHARS = 4  # shorter anchors would light up half the page
_ROLE_LABELS = {"system": "system", "human": "user", "gpt": "assistant", "tool": "tool"}


@dataclass(frozen=True)
class RowExample:
    """One compressed row (or window) as an example: its texts cut to what a page shows."""

    index: int
    window: int | None
    label: str  # "file.jsonl:12" or "file.jsonl:12 window 3 of 15"
    region: tuple[Turn, ...]
    region_turns: int
    summary: str
    tail: tuple[Turn, ...]
    tail_turns: int
    fidelity: float | None
    future: float | None
    missed: tuple[str, ...]  # anchors the kept turns needed and the summary lost


def row_label(where: str, window: int | None, windows: int | None) -> str:
    """`file.jsonl:12`, or `file.jsonl:12 window 3 of 15` for a window of a split row (its
    `window.index` in the metrics, from 0)."""
    if window is None or not windows or windows < 2:
        return where
    return f"{where} window {window} of {windows}"


def make_example(
    index: int,
    window: int | None,
    label: str,
    region: Sequence[Turn],
    summary: str,
    after: Sequence[Turn],
    *,
    fidelity: float | None,
    future: float | None,
    missed: Sequence[str] = (),
) -> RowExample:
    """An example holding only what the page will draw (a few turns, each cut)."""

    def kept(turns: Sequence[Turn], count: int) -> tuple[Turn, ...]:
        return tuple(Turn(turn.role, turn.value[: word_end(turn.value, _KEEP_CHARS)]) for turn in turns[:count])

    return RowExample(
        index=index,
        window=window,
        label=label,
        region=kept(region, REGION_TURNS_SHOWN),
        region_turns=len(region),
        summary=summary[: word_end(summary, _SUMMARY_CHARS * 4 + REDACT_MARGIN)],
        tail=kept(after, TAIL_TURNS_SHOWN),
        tail_turns=len(after),
        fidelity=fidelity,
        future=future,
        missed=tuple(missed[:20]),
    )


def example_html(example: RowExample, label: str | None = None) -> str:
    """The replaced turns on the left; the summary and the kept turns after it on the right."""
    scores = [f"row {example.index:,}"]
    if isinstance(example.future, (int, float)):
        scores.append(f"future-grounded fidelity {example.future:.2f}")
    if isinstance(example.fidelity, (int, float)):
        scores.append(f"item recall {example.fidelity:.2f}")
    missed = [redact_secrets(anchor) for anchor in example.missed]
    lost = (
        f'<p class="note">Needed later but not in the summary (marked below): {esc(", ".join(missed[:8]))}</p>'
        if missed
        else ""
    )
    left = _turns_html(example.region, example.region_turns, ())
    tail = _turns_html(example.tail, example.tail_turns, missed) if example.tail_turns else "<p>No turns after it.</p>"
    summary = clip_text(f"{SUMMARY_PREFIX} {example.summary}", _SUMMARY_CHARS)
    return (
        f'<p><span class="path" title="{esc(example.label)}">{esc(label or example.label)}</span> '
        f"({esc(', '.join(scores))})</p>"
        + lost
        + f'<div class="turns"><div><h3>before: the {example.region_turns:,} replaced turns</h3>{left}</div>'
        + '<div><h3>after: one summary turn</h3><div class="turn summary"><b>user</b>'
        + f"<pre>{esc(summary)}</pre></div>"
        + f"<h3>then the {example.tail_turns:,} kept turns</h3>{tail}</div></div>"
    )


def example_picker(name: str, examples: Sequence[tuple[str, RowExample]]) -> str:
    """Examples behind one row of tabs: radio buttons and CSS (`:checked ~`), no script.

    `name` makes the ids unique on the page; each item is (its tab's text, the example)."""
    if not examples:
        return "<p>No compressed rows to show.</p>"
    inputs, bodies, rules = [], [], []
    for i, (tab, example) in enumerate(examples):
        checked = " checked" if i == 0 else ""
        inputs.append(
            f'<input type="radio" name="{name}" id="{name}-{i}"{checked}>'
            f'<label for="{name}-{i}" title="{esc(example.label)}">{esc(tab)}</label>'
        )
        bodies.append(f'<div class="picked" id="{name}-body-{i}">{example_html(example, tab)}</div>')
        rules.append(f"#{name}-{i}:checked ~ #{name}-body-{i}")
    style = f"<style>{', '.join(rules)} {{ display: block; }}</style>"
    return f'<div class="picker">{"".join(inputs)}{"".join(bodies)}</div>{style}'


def summaries_side_by_side(columns: Sequence[tuple[str, str, RowExample]]) -> str:
    """One row's summary in each output that compressed it, side by side, with its scores; each
    column is (the output's name, the row's label as shown, the example)."""
    cells = []
    for name, label, example in columns:
        scores = []
        if isinstance(example.future, (int, float)):
            scores.append(f"future-grounded {example.future:.2f}")
        if isinstance(example.fidelity, (int, float)):
            scores.append(f"item recall {example.fidelity:.2f}")
        summary = clip_text(f"{SUMMARY_PREFIX} {example.summary}", _SUMMARY_CHARS)
        cells.append(
            f'<div><h3><span class="path" title="{esc(name)}">{esc(name)}</span></h3>'
            f'<p><span class="path" title="{esc(example.label)}">{esc(label)}</span>: replaces '
            f"{example.region_turns:,} turns; {esc(', '.join(scores))}</p>"
            f'<div class="turn summary"><pre>{esc(summary)}</pre></div></div>'
        )
    grid = f"grid-template-columns: repeat({len(cells)}, minmax(0, 1fr))"
    return f'<div class="cols" style="{grid}">{"".join(cells)}</div>'


def _turns_html(turns: Sequence[Turn], total: int, marked: Sequence[str]) -> str:
    shown = "".join(
        f'<div class="turn"><b>{esc(_ROLE_LABELS.get(t.role, t.role))}</b>'
        f"<pre>{_marked(clip_text(t.value, _TURN_CHARS), marked)}</pre></div>"
        for t in turns
    )
    if total > len(turns):
        shown += f'<div class="turn"><b>… {total - len(turns):,} more turns</b></div>'
    return shown


def _marked(text: str, anchors: Sequence[str]) -> str:
    """`text` escaped, with each of `anchors` (already masked) wrapped in `<mark>`."""
    escaped = esc(text)
    for anchor in sorted({a for a in anchors if len(a) >= _MARKED_MIN_CHARS}, key=len, reverse=True):
        shown = esc(anchor)
        escaped = escaped.replace(shown, f"<mark>{shown}</mark>")
    return escaped
