"""The anchor index: a summary's last line, the region's exact values, ranked, within the budget.

A model's summary says what happened; the turns after it act on exact strings (an id, a path, a
line number) that a paraphrase loses. So a summary ends with one line listing the region's
anchors, chosen by `anchor_rank` (recency, reuse, who wrote them; no look-ahead), as many as fit:

    Exact values: KA7I60 gift_card_6276644 astropy/modeling/separable.py _coord_matrix 245

For an LLM summary the index takes at most `INDEX_SHARE` of the summary budget (less when the
region has fewer anchors), and the prompt asks the model for its summary in what remains; the
line is added after the model's text, leaving out what that text already states, so the index
is exact whatever the model wrote. The extractive summarizer ends its summaries with the same
line. An index found at the end of an earlier summary (the previous window's, or a compressed
dataset compressed again) is never shown to the model nor repeated: its anchors join the new
ranking, so the index stays cumulative and within its budget.

Pure: the token counts come from the `count` function passed in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate

from trajectory_compressor.summarize.anchor_rank import ranked_anchors
from trajectory_compressor.summarize.fidelity.anchor_tokens import anchors_in
from trajectory_compressor.summarize.fidelity.score import occurs
from trajectory_compressor.summarize.masking import hid, split_secrets_masked, unchanged
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import SummaryRequest

INDEX_LABEL = "Exact values:"
INDEX_SHARE = 0.35  # of an LLM summary's budget, at most
_SEPARATOR = "\n\n"
_FIRST_CHARS_PER_TOKEN = 3.0  # ids, paths and names; corrected from the first count
_MAX_COUNTS = 5
_GOOD_FILL = 0.96

Count = Callable[[str], int]


def index_line(anchors: Sequence[str]) -> str:
    """The index line of `anchors` ("" without any)."""
    return f"{INDEX_LABEL} {' '.join(anchors)}" if anchors else ""


def split_index(summary: str) -> tuple[str, tuple[str, ...]]:
    """`summary` without its index line, and the index's anchors (none when it has no index)."""
    text = summary.rstrip()
    cut = text.rfind("\n" + INDEX_LABEL + " ")
    if cut < 0:
        if not text.startswith(INDEX_LABEL + " "):
            return summary, ()
        cut = -1
    line = text[cut + 1 :]
    if "\n" in line:
        return summary, ()
    return text[: max(cut, 0)].rstrip(), tuple(line[len(INDEX_LABEL) :].split())


def fit_index(anchors: Sequence[str], max_tokens: int, count: Count, *, stated: str = "") -> str:
    """The index line of the most anchors, in ranked order, whose tokens (with the separator
    before it) are at most `max_tokens`, leaving out those `stated` already holds.

    A few tokenizer calls, whatever the number of anchors: the line's length in characters is
    aimed at with a chars-per-token ratio measured on the line itself, then corrected; only a
    line that was counted within the budget is returned (its fill is within a few per cent)."""
    shown = [anchor for anchor in anchors if not (stated and occurs(anchor, stated))]
    if not shown or max_tokens <= 0:
        return ""
    ends = list(accumulate(len(anchor) + 1 for anchor in shown))  # chars each prefix adds to the label
    best, tried = 0, set()
    ratio = _FIRST_CHARS_PER_TOKEN
    for _ in range(_MAX_COUNTS):
        k = bisect_right(ends, max_tokens * ratio - len(_SEPARATOR + INDEX_LABEL))
        if k in tried or k <= best:
            k = best + 1 if best + 1 not in tried and best < len(shown) else k
        if k in tried or k == 0 or k > len(shown):
            break
        tried.add(k)
        line = index_line(shown[:k])
        tokens = count(_SEPARATOR + line)
        if tokens <= max_tokens:
            best = k
            if k == len(shown) or tokens >= _GOOD_FILL * max_tokens:
                break
            ratio = max(ratio, len(_SEPARATOR + line) / tokens * 0.99)
        else:
            ratio = min(ratio, len(_SEPARATOR + line) / tokens * 0.97)
    return index_line(shown[:best])


@dataclass(frozen=True)
class IndexPlan:
    """The index an LLM summary will end with: the region's anchors, ranked, and the tokens of the
    budget kept for them (the model is asked for its summary in the rest)."""

    anchors: tuple[str, ...]
    tokens: int

    def prompt_request(self, request: SummaryRequest) -> SummaryRequest:
        """What the model is asked: the budget less the index's tokens, and an earlier summary
        without its index (its anchors are in this one)."""
        return replace(
            request,
            budget_tokens=max(1, request.budget_tokens - self.tokens),
            previous_summary=split_index(request.previous_summary)[0],
        )

    def finish(self, text: str, count: Count) -> str:
        """The model's `text` followed by the index, within the tokens kept for it (anchors the
        text states are left out, which makes room for the next ones)."""
        line = fit_index(self.anchors, self.tokens, count, stated=text) if self.tokens else ""
        return f"{text}{_SEPARATOR}{line}" if line and text else text


def earlier_anchors(summary: str, redact: Callable[[str], str] = unchanged) -> tuple[str, ...]:
    """The anchors an earlier summary holds, its index's first (in their ranked order), then its
    text's: what a summary that updates it carries on. An index written by another tool (or an
    older version) may list a value its text shows as a credential (`password=...`): masked
    there, it is left out of the index too. Its values are read as a region's are, so an older
    version's `1150p` or `133-def` carries on as `1150` or `133`."""
    if not summary.strip():
        return ()
    masked = redact(summary)
    body, listed = split_index(masked)
    listed = tuple(anchor for anchor in listed if not hid(anchor, summary, masked))  # in the index line too
    return tuple(dict.fromkeys([*anchors_in(" ".join(listed)), *anchors_in(body)]))


def plan_index(request: SummaryRequest, count: Count, *, redact: Callable[[str], str] = unchanged) -> IndexPlan | None:
    """The index of `request`'s region within `INDEX_SHARE` of its budget, or None when the region
    has no anchor to list (the request is then asked as it is)."""
    earlier = earlier_anchors(request.previous_summary, redact)
    anchors = ranked_anchors(request.turns, known=request.task, earlier=earlier, redact=redact)
    line = fit_index(anchors, int(request.budget_tokens * INDEX_SHARE), count)
    if not line:
        return None
    return IndexPlan(anchors, count(_SEPARATOR + line))


def indexed_request(
    request: SummaryRequest, count: Count, *, enabled: bool, redact: bool
) -> tuple[SummaryRequest, IndexPlan | None]:
    """What an LLM is asked for `request` and the index its answer will end with (`--anchor-index`;
    `redact`: `--redact-secrets`). One function for live calls and the `requests` file, so both
    ask the very same prompt. A credential cut over two turns is masked first (`redact`)."""
    if redact:
        request = split_secrets_masked(request)
    if not enabled:
        return request, None
    index = plan_index(request, count, redact=redact_secrets if redact else unchanged)
    if index is None:  # nothing to list: asked as it is, an earlier index never shown to the model
        return replace(request, previous_summary=split_index(request.previous_summary)[0]), None
    return index.prompt_request(request), index
