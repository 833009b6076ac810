"""The offline summarizer: a structured account of a region built from the turns themselves.

No model is called, so it is deterministic, free and fast, and it never invents anything: every
line it writes is taken from the region (user requests, each tool call with its outcome, files,
errors, the assistant's last words). It is the fallback when no endpoint is configured or an
endpoint fails, so it must always return something truthful that fits the token budget.

Fitting works on text, not tokens: the region is digested once, then rendered at decreasing
levels of detail (shorter fields, then fewer actions with the middle ones elided, then a compact
digest, then one line) to a character target. A chars-per-token ratio turns the token budget
into that target; each candidate is counted with the real tokenizer and the ratio corrected
from what was measured, so a summary costs one to four tokenizer calls (tokenizing runs at a
few MB/s, so it is the expensive part), whatever the region's size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.summarize.anchor_index import earlier_anchors, split_index
from trajectory_compressor.summarize.anchor_rank import AnchorRanking
from trajectory_compressor.summarize.deadline import SUMMARY_DEADLINE, check_deadline
from trajectory_compressor.summarize.extractive.digest import RegionDigest
from trajectory_compressor.summarize.extractive.render import Renderer
from trajectory_compressor.summarize.extractive.values import MIN_FILES, WithValues
from trajectory_compressor.summarize.llm.reply_text import control_tokens_of, plain_summary_text
from trajectory_compressor.summarize.masking import redact_remembered, split_secrets_masked, unchanged
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import (
    EXTRACTIVE_SUMMARIZER,
    SUMMARY_PREFIX,
    SummarizerName,
    SummaryCarry,
    SummaryError,
    SummaryRequest,
    SummaryResult,
    Turn,
)

_FIRST_CHARS_PER_TOKEN = 3.3  # a first guess; code and JSON run ~3, English prose ~4+, CJK ~1.5
_MAX_COUNTS = 4  # tokenizer calls per summary before falling back to a hard cut
_GOOD_FILL = 0.9  # a fitting rendering this close to the budget is not worth another count
_TURNS_BETWEEN_CHECKS = 256  # of a region read between two looks at the row's deadline


class ExtractiveSummarizer:
    """Summarizes a region without a model, always within the token budget."""

    name: SummarizerName = EXTRACTIVE_SUMMARIZER
    iterative = False  # a context window's summary digests the whole region (its digest carried: `SummaryCarry`)

    def __init__(self, counter: TokenCounter, *, redact: bool = True, anchor_index: bool = True) -> None:
        self.counter = counter
        # Masks credentials in every piece of the region before it is digested (`--redact-secrets`):
        # before any cut, so that no clipped field can show part of a secret.
        self._redact = redact_remembered if redact else unchanged
        # What a row's text may hold and a summary turn may not (control tokens of the common
        # templates and of this tokenizer, tool tags, terminal escapes, unseen characters) is
        # taken out of every rendering before it is measured (`_PlainRenderer`).
        self._control = control_tokens_of(counter)
        self._anchor_index = anchor_index  # end with the region's exact values (`--anchor-index`)
        self._prefix = SUMMARY_PREFIX + " "
        self._prefix_tokens = counter.count(self._prefix)
        self._summaries = 0
        self._truncated = 0

    def summarize_text(self, turns: Sequence[Turn], budget_tokens: int, *, task: str = "") -> str:
        """The summary body for `turns` such that prefix + " " + body holds at most `budget_tokens`.

        Returns "" only when the budget cannot hold the prefix and a word; the caller decides
        what that means (`summarize` raises). `task` is the context the summary does not
        replace (its values are not listed again).
        """
        return self._fit(turns, budget_tokens, task=task)[0]

    def _fit(
        self,
        turns: Sequence[Turn],
        budget_tokens: int,
        earlier: str = "",
        task: str = "",
        carry: SummaryCarry | None = None,
        deadline: float | None = None,
    ) -> tuple[str, int | None]:
        """The body and, when it was measured, the tokens of prefix + " " + body; `deadline` (the
        row's, `summarize.deadline`) is checked between pieces of the work (`TimeoutError`)."""
        renderer = _PlainRenderer(self._renderer(turns, earlier, task, carry, deadline), self._plain)
        available = budget_tokens - self._prefix_tokens
        if available <= 0:
            return "", None
        best, best_tokens = "", -1
        measured: dict[str, int] = {}
        # The richest rendering is made only when it could be what is asked: one that lists every
        # call of a long region is far longer than any target, as its length (known without making
        # it) says.
        target = int(available * _FIRST_CHARS_PER_TOKEN)
        richest = renderer.richest_within(target)
        longer_than = target if richest is None else -1  # what the richest rendering is known to exceed

        def is_richest(text: str) -> bool:
            nonlocal richest
            if len(text) <= longer_than or renderer.richest_longer_than(len(text)):
                return False
            if richest is None:
                richest = renderer.richest()
            return text == richest

        text = richest if richest is not None else renderer.within(target)
        for _ in range(_MAX_COUNTS):
            check_deadline(deadline)
            tokens = measured[text] = self.counter.count(self._prefix + text)
            ratio = len(self._prefix + text) / max(tokens, 1)  # measured on this very content
            if tokens <= budget_tokens:
                if tokens > best_tokens:
                    best, best_tokens = text, tokens
                if is_richest(text) or tokens >= _GOOD_FILL * budget_tokens:
                    break
                target = max(target, int(available * ratio * 0.97))  # room left: aim higher
            else:
                target = min(int(target * 0.85), int(available * ratio * 0.95))
            text = renderer.within(target)  # the richest rendering, when it fits the target
            if text in measured:  # nothing new at this target: the levels are discrete
                if best:
                    break
                target = int(target * 0.7)
                text = renderer.within(target)
                if text in measured:
                    break
        if not best:
            best = self._truncate(renderer.one_line(), budget_tokens)
            self._truncated += bool(best)
            return best, None
        return best, best_tokens

    def _renderer(
        self,
        turns: Sequence[Turn],
        earlier: str,
        task: str,
        carry: SummaryCarry | None = None,
        deadline: float | None = None,
    ) -> Renderer | WithValues:
        """The digest's renderer; with the anchor index, one that ends with the region's values
        (an earlier summary's index is not repeated as text: its values join the ranking).
        The region's digest and ranking are those `carry` holds, extended with the turns after
        them, when they are of a prefix of `turns` (the previous context window's region). They
        are read `_TURNS_BETWEEN_CHECKS` turns at a time, the deadline checked in between."""
        state = carry.state if carry is not None else None
        if not isinstance(state, _Region) or not state.extends(self, turns, earlier, task):
            state = _Region(self, earlier, task)
        if carry is not None:
            carry.state = state
        try:
            for end in range(len(state.turns), len(turns), _TURNS_BETWEEN_CHECKS):
                check_deadline(deadline)
                state.extend(turns[: end + _TURNS_BETWEEN_CHECKS])
        except BaseException:
            if carry is not None:  # cut short (the deadline) or worse: start again next time
                carry.state = None
            raise
        if state.ranking is None:
            return Renderer(state.digest.digest(earlier))
        digest = state.digest.digest(split_index(earlier)[0])
        return WithValues(Renderer(digest, min_files=MIN_FILES), state.ranking.ranking())

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize `request.turns`; raises SummaryError when the budget cannot hold any summary."""
        if self._redact is not unchanged:
            request = split_secrets_masked(request)  # a credential cut over two turns
        body, tokens = self._fit(
            request.turns,
            request.budget_tokens,
            request.previous_summary,
            request.task,
            request.carry,
            SUMMARY_DEADLINE.get(),
        )
        if not body:
            where = f" ({request.label})" if request.label else ""
            raise SummaryError(f"budget of {request.budget_tokens} tokens is too small for any summary{where}")
        self._summaries += 1
        return SummaryResult(text=body, summarizer=self.name, calls=0, tokens=tokens)

    def stats(self) -> dict[str, Any]:
        """Counters for the run report: summaries written and how many needed hard truncation."""
        return {"summaries": self._summaries, "truncated": self._truncated}

    async def aclose(self) -> None:
        """Nothing to release; present so every summarizer can be closed the same way."""

    def _plain(self, text: str) -> str:
        """A rendering as a summary turn may hold it (`plain_summary_text`), masked again when
        that changed it: a credential split by an unseen character is whole once it is gone."""
        plain = plain_summary_text(text, self._control)
        return redact_secrets(plain) if plain != text and self._redact is not unchanged else plain

    def _truncate(self, text: str, budget_tokens: int) -> str:
        """The longest token prefix of `text` that fits, re-measured with the prefix attached."""
        limit = budget_tokens - self._prefix_tokens
        for _ in range(4):
            if limit <= 0:
                return ""
            cut = self.counter.truncate(text, limit).rstrip()
            if self.counter.count(self._prefix + cut) <= budget_tokens:
                return cut
            limit -= 1
        return ""


class _PlainRenderer:
    """A renderer whose renderings are made plain (`ExtractiveSummarizer._plain`) before the
    fitting measures them, so what is measured is what is written (a rendering made plain is
    shorter, but when masked again, a little longer: the fitting counts tokens, not characters)."""

    def __init__(self, renderer: Renderer | WithValues, plain: Callable[[str], str]) -> None:
        self._renderer = renderer
        self._plain = plain

    def richest(self) -> str:
        return self._plain(self._renderer.richest())

    def richest_within(self, max_chars: int) -> str | None:
        text = self._renderer.richest_within(max_chars)
        return None if text is None else self._plain(text)

    def richest_longer_than(self, max_chars: int) -> bool:
        return self._renderer.richest_longer_than(max_chars)

    def within(self, max_chars: int) -> str:
        return self._plain(self._renderer.within(max_chars))

    def one_line(self) -> str:
        return self._plain(self._renderer.one_line())


class _Region:
    """A region's digest and anchor ranking, which the next context window's region extends."""

    def __init__(self, summarizer: ExtractiveSummarizer, earlier: str, task: str) -> None:
        self.summarizer = summarizer
        self.earlier = earlier
        self.task = task
        # The digest and the ranking (and the fidelity after them) mask the same texts: each once,
        # as the masking is remembered (`masking.redact_remembered`).
        redact = summarizer._redact
        self.digest = RegionDigest(redact)
        self.ranking = (
            AnchorRanking(known=task, earlier=earlier_anchors(earlier, redact), redact=redact)
            if summarizer._anchor_index
            else None
        )
        self.turns: list[Turn] = []

    def extends(self, summarizer: ExtractiveSummarizer, turns: Sequence[Turn], earlier: str, task: str) -> bool:
        """Whether `turns` begin with the turns read so far (the same objects), for the same
        summarizer, earlier summary and task."""
        count = len(self.turns)
        return (
            summarizer is self.summarizer
            and earlier == self.earlier
            and task == self.task
            and count <= len(turns)
            and (count == 0 or (turns[0] is self.turns[0] and turns[count - 1] is self.turns[-1]))
        )

    def extend(self, turns: Sequence[Turn]) -> None:
        new = turns[len(self.turns) :]
        if not new:
            return
        self.digest.extend(new)
        if self.ranking is not None:
            self.ranking.extend(new)
        self.turns.extend(new)
