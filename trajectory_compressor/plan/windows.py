"""Context windows: replaying a live context compressor over a recorded run. Pure.

An agent with a context compressor (the Hermes `ContextCompressor`, and many like it) works in
a window: the protected head, the running summary of what came before, and the recent turns.
When the next turn group would overflow the window, it compacts: the summary is updated with the
turns that leave, a tail of recent groups stays verbatim, and the window grows again. Replaying
that policy over a recorded run cuts it into the contexts the agent would have seen, and each
assistant turn is trained exactly once, in the window where it is new (one the input marks
`"train": false` never: it is context in every window that shows it).

A *group* is what must never be split: a gpt turn with the tool turns that answer it, preceded
by any human or system turns that lead to it, followed by any that lead to no gpt turn of their
own (a system turn between a call and its result), so every window trains at least one turn;
an untrained gpt turn leads, like a user turn, to the next one that trains.
This module decides, from roles and token counts only, where every window starts and ends and
how large each summary may be; the row path (`run/row/windows.py`) asks for the summaries,
measures them, and writes the windows.

    window 0:  head | groups ... (until the next group would pass the target)
    window k:  head | summary of [head, context_start) | context (the closed window's tail) | new groups ...

With `--prune-tool-outputs` (`placeholders` given), a window's context turns can be pruned, never
its new ones: when the next group would not fit, the context's tool results are cleared, oldest
first and only as far as needed, before the window closes; a result once cleared stays cleared
in every later window that shows it. Without summaries (`--summarizer none`), a compaction keeps
the tail and lets the turns before it leave the context with no summary.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from trajectory_compressor.plan.apply import summary_value
from trajectory_compressor.plan.protect import head_end
from trajectory_compressor.plan.prune import answered_results
from trajectory_compressor.settings import PlanConfig
from trajectory_compressor.types import EditedTurn, KeptTurn, NewTurn, OutputTurn, Turn

# What a summary may cost, as a share of the tokens it stands for (the Hermes live compressor's
# ratio), between a floor (a quarter of `--summary-target-tokens`) and that setting as ceiling.
SUMMARY_RATIO = 0.2
SUMMARY_FLOOR_SHARE = 0.25


def group_starts(roles: Sequence[str], start: int, untrained: Collection[int] = ()) -> list[int]:
    """Where each turn group from `start` on begins; the last group runs to the end.

    A group may begin at every non-tool turn that follows a gpt or tool turn (or at `start`), so
    human and system turns join the gpt turn they lead to, and tool turns the call they answer.
    Every group trains a gpt turn: a window's new turns are whole groups, and a window whose new
    turns train nothing is a row TRL drops (a sample lost). So turns that lead to no gpt turn of
    their own join the group before them: a system turn between a call and its result (with the
    result it precedes), a row's trailing human or system turns. A gpt turn the input marks
    `"train": false` (`untrained`: context, never a target) with its results joins the next
    group that trains a turn, as the user turns leading to it do; at the row's end, with none
    after it, the group before it.
    """
    candidates = [
        index
        for index in range(start, len(roles))
        if index == start or (roles[index] != "tool" and roles[index - 1] in ("gpt", "tool"))
    ]
    segments = list(itertools.pairwise([*candidates, len(roles)]))
    # A segment holds at most one gpt turn (a gpt turn after a gpt or tool turn begins another).
    gpt_at = [next((i for i in range(begin, end) if roles[i] == "gpt"), None) for begin, end in segments]
    trains = [index is not None and index not in untrained for index in gpt_at]
    trains_later: list[bool] = list(itertools.accumulate(reversed(trains), lambda later, now: later or now))[::-1]
    starts: list[int] = []
    open_trains = False  # whether the group begun last trains a gpt turn yet
    for position, (begin, _) in enumerate(segments):
        if not starts or (open_trains and gpt_at[position] is not None and trains_later[position]):
            starts.append(begin)
            open_trains = trains[position]
        else:  # nothing to train of its own, or the group before trains nothing yet: one group with it
            open_trains = open_trains or trains[position]
    return starts


def summary_budget(replaced_tokens: int, ceiling: int) -> int:
    """A summary's budget: 20% of what it replaces, within a floor and `ceiling`."""
    return max(summary_floor(ceiling), min(ceiling, round(replaced_tokens * SUMMARY_RATIO)))


def summary_floor(ceiling: int) -> int:
    """The smallest budget a summary is given: a quarter of `ceiling` (`--summary-target-tokens`)."""
    return max(1, int(ceiling * SUMMARY_FLOOR_SHARE))


@dataclass(frozen=True)
class Window:
    """One window of a row: the head, the summary of [head, context_start) when `index` > 0, and
    the turns [context_start, end) verbatim, of which [new_start, end) are new in this window.

    `tokens` is the size the plan expects with a summary of `summary_tokens` tokens (0 for
    window 0); `over` says it exceeds the target (one group that alone does not fit).
    `cleared` are the context's tool results shown as placeholders (`--prune-tool-outputs`).
    """

    index: int
    context_start: int
    new_start: int
    end: int
    summary_tokens: int
    tokens: int
    over: bool
    cleared: tuple[int, ...] = ()


@dataclass(frozen=True)
class Cut:
    """Where window `index`'s summary stops: it covers [head, context_start), which the
    previous summary covered up to `previous_start`; `budget` is its token budget."""

    index: int
    previous_start: int
    context_start: int
    budget: int


class WindowReplay:
    """The compaction points of one row: the first window, then each cut and the window after it.

    `notice_tokens` is what the notice costs the head's system turn once the row carries a
    summary (0 if it has none, or already carries the notice). `placeholders` gives the tool
    turns that may be cleared when they are context (`--prune-tool-outputs`) and what each
    placeholder costs; `summaries` is off for `--summarizer none` (compactions keep the tail only).
    `untrained` are the gpt turns the input marks `"train": false`: context in every window.
    """

    def __init__(
        self,
        roles: Sequence[str],
        counts: Sequence[int],
        config: PlanConfig,
        *,
        notice_tokens: int = 0,
        placeholders: Mapping[int, int] | None = None,
        summaries: bool = True,
        untrained: Collection[int] = (),
    ) -> None:
        if len(roles) != len(counts):
            raise ValueError("roles and counts must have the same length")
        self.roles = list(roles)
        self.counts = list(counts)
        self.config = config
        self.target = config.target_max_tokens
        self.head = head_end(self.roles, config)
        self.head_tokens = sum(self.counts[: self.head])
        self.notice_tokens = notice_tokens if summaries else 0
        self.summaries = summaries
        self.untrained = frozenset(untrained)
        self.starts = group_starts(self.roles, self.head, self.untrained)
        # What clearing each prunable tool result saves: only tool turns after the head, each a saving.
        self.savings = {
            index: self.counts[index] - cost
            for index, cost in sorted((placeholders or {}).items())
            if self.head <= index < len(self.roles) and self.roles[index] == "tool" and cost < self.counts[index]
        }
        self._prefix = [0]
        for count in self.counts:
            self._prefix.append(self._prefix[-1] + count)

    @property
    def total(self) -> int:
        return self._prefix[-1]

    def tokens(self, start: int, end: int) -> int:
        """Tokens of turns [start, end)."""
        return self._prefix[end] - self._prefix[start]

    def shown(self, start: int, end: int, cleared: Sequence[int]) -> int:
        """Tokens of turns [start, end) with the `cleared` ones among them as their placeholders."""
        return self.tokens(start, end) - sum(self.savings[i] for i in cleared if start <= i < end)

    def group_end(self, start: int) -> int:
        """End of the group that begins at turn `start`."""
        position = bisect.bisect_left(self.starts, start)
        return self.starts[position + 1] if position + 1 < len(self.starts) else len(self.roles)

    def fits_whole(self) -> bool:
        """Whether the row is one window, the row itself: it fits, it has nothing after its head,
        its head alone is over the target (then every window would be, and it is flagged), or
        every gpt turn after its head is marked untrained (`trains_nothing_after_head`)."""
        return (
            self.total <= self.target
            or not self.starts
            or self.head_tokens > self.target
            or self.trains_nothing_after_head
        )

    @property
    def trains_nothing_after_head(self) -> bool:
        """Whether the row has gpt turns after its head and the input marks all of them
        `"train": false`: cut into windows, every later window would train nothing (rows TRL
        drops), so the row stays one window, flagged if over the target."""
        if not self.untrained:
            return False
        after = [index for index in range(self.head, len(self.roles)) if self.roles[index] == "gpt"]
        return bool(after) and all(index in self.untrained for index in after)

    def first(self) -> Window:
        """Window 0: the head and the groups after it, as long as they fit."""
        return self.grow(Cut(0, self.head, self.head, 0), summary_tokens=0)

    def grow(
        self, cut: Cut, summary_tokens: int, *, end_before: int | None = None, cleared: Sequence[int] = ()
    ) -> Window:
        """The window after `cut`, its summary measured at `summary_tokens`: the context kept
        from the closed window, then new groups while they fit (always at least one).

        `end_before` is the closed window's end (where the new turns start); None for window 0.
        `cleared` are the results the closed window showed as placeholders: those still in the
        context stay so, and more of the context's are cleared, oldest first, when the next group
        needs the room (the first group takes what clearing all of them gives).
        """
        new_start = cut.context_start if end_before is None else end_before
        fixed = self.head_tokens + (self.notice_tokens + summary_tokens if cut.index and self.summaries else 0)
        shown = [i for i in cleared if cut.context_start <= i < new_start]
        # The results the window's first new (trained) gpt turn answers stay: it was written seeing them.
        answered = set(answered_results(self.roles, self._first_gpt(new_start)))
        open_ = [i for i in self.savings if cut.context_start <= i < new_start and i not in shown and i not in answered]
        size = fixed + self.shown(cut.context_start, new_start, shown)
        end = new_start
        while end < len(self.roles):
            stop = self.group_end(end)
            group = self.tokens(end, stop)
            if size + group > self.target:
                take = self._room(open_, size + group - self.target)
                if take is None and end > new_start:
                    break
                for index in open_[: len(open_) if take is None else take]:
                    shown.append(index)
                    size -= self.savings[index]
                del open_[: len(open_) if take is None else take]
            size += group
            end = stop
        window = Window(cut.index, cut.context_start, new_start, end, summary_tokens, size, size > self.target)
        return replace(window, cleared=tuple(sorted(shown)))

    def _first_gpt(self, start: int) -> int:
        """The first gpt turn at or after `start` (the row's length if none)."""
        return next((i for i in range(start, len(self.roles)) if self.roles[i] == "gpt"), len(self.roles))

    def _room(self, open_: Sequence[int], excess: int) -> int | None:
        """How many of `open_` (oldest first) clearing frees `excess` tokens; None if all cannot."""
        freed = 0
        for count, index in enumerate(open_, start=1):
            freed += self.savings[index]
            if freed >= excess:
                return count
        return None

    def shrink(self, window: Window) -> Window:
        """`window` without its last group (the exact count of a chat-template rendering can
        exceed the per-turn estimate); the same window when it holds one new group only."""
        last = self.starts[bisect.bisect_left(self.starts, window.end) - 1]
        if last <= window.new_start:
            return window
        tokens = window.tokens - self.tokens(last, window.end)
        return replace(window, end=last, tokens=tokens, over=tokens > self.target)

    def cut_after(self, window: Window, *, summary_tokens: int | None = None) -> Cut:
        """Where the next window's summary stops, once `window` is closed.

        The tail kept verbatim is the closed window's last groups up to `--tail-ratio` of the
        target, and at least `--protect-last-n-turns` turns, whole groups only; then it shrinks,
        oldest group first, until the head, the summary, the tail and the next group fit (or
        nothing of it is left). With no tail left, the summary's budget shrinks to the room there
        is, down to its floor (`summary_floor`): a long head and a summary at 20% of a long region
        must not push the next group over the target when a shorter summary lets it fit. At
        least one turn of the closed window is always summarized, so every window makes
        progress. `summary_tokens` replaces the budget when a summary is known to be larger than
        it (the second pass).
        """
        body = self.starts[
            bisect.bisect_left(self.starts, window.context_start) : bisect.bisect_left(self.starts, window.end)
        ]
        next_group = self.tokens(window.end, self.group_end(window.end)) if window.end < len(self.roles) else 0
        tail = self._tail_by_ratio(body, window)
        # Progress: the first group of the closed window always goes into the summary.
        while tail and tail[0] <= window.context_start:
            tail.pop(0)
        while True:
            context_start = self._past_user_turns(tail[0], window.end) if tail else window.end
            budget = summary_budget(self.tokens(self.head, context_start), self.config.summary_target_tokens)
            if not self.summaries:  # --summarizer none: the turns before the tail leave with no summary
                budget = 0
            kept = self.shown(context_start, window.end, window.cleared)
            if not tail and budget:  # nothing verbatim left to give up: the summary takes the room left
                room = self.target - (self.head_tokens + self.notice_tokens + kept + next_group)
                budget = max(summary_floor(self.config.summary_target_tokens), min(budget, room))
            summary = budget if summary_tokens is None else max(budget, summary_tokens)
            size = self.head_tokens + self.notice_tokens + summary + kept + next_group
            if size <= self.target or not tail:
                return Cut(window.index + 1, window.context_start, context_start, budget)
            tail.pop(0)

    def _past_user_turns(self, start: int, end: int) -> int:
        """The kept context [start, end) past its leading user turns, which go into the summary
        with the turns before them: the summary is a user turn, and templates that want
        alternating roles refuse two in a row. Not when nothing but user turns would be left."""
        index = start
        while index < end and self.roles[index] == "human":
            index += 1
        return index if index < end else start

    def _tail_by_ratio(self, body: list[int], window: Window) -> list[int]:
        """Group starts of the tail: from the end, while within the ratio's tokens (results the
        closed window cleared counted as their placeholders), then more groups until it holds
        the protected number of turns."""
        limit = self.config.tail_ratio * self.target
        end = window.end
        tail: list[int] = []
        for start in reversed(body):
            if self.shown(start, end, window.cleared) > limit:
                break
            tail.insert(0, start)
        for start in reversed(body[: len(body) - len(tail)]):
            if end - (tail[0] if tail else end) >= self.config.protect_last_n_turns:
                break
            tail.insert(0, start)
        return tail

    def replay_at_budget(self) -> list[Window]:
        """Every window, each summary taken at exactly its budget: the plan of a dry run and of
        `analyze`, and the layout a live run follows as long as its summaries fit their budgets."""
        if self.fits_whole():
            return [self.whole()]
        window = self.first()
        windows = [window]
        while window.end < len(self.roles):
            cut = self.cut_after(window)
            window = self.grow(cut, cut.budget, end_before=window.end, cleared=window.cleared)
            windows.append(window)
        return windows

    def whole(self) -> Window:
        """The row as one window (it fits, or its head alone is over the target)."""
        return Window(0, self.head, self.head, len(self.roles), 0, self.total, self.total > self.target)

    def written_end(self, turns: Sequence[Turn], window: Window) -> int:
        """`written_end` of `window` of this row, its untrained turns known."""
        return written_end(turns, window, self.untrained)


def written_end(turns: Sequence[Turn], window: Window, untrained: Collection[int] = ()) -> int:
    """Where the written window stops: after its last new trained gpt turn, unless it is the row's last.

    The tool results after a window's last trained turn answer a call no turn of this window
    learns from: they train nothing here and cost tokens (and a trainer that learns every
    non-prompt token would learn them). The next window shows them, as context before the turn
    that reads them, if the tail it keeps reaches back to them; if it keeps none, they are in its
    summary (with no summaries, in no window: docs/windows.md measures how often). A gpt turn the
    input marks untrained is context like them; but a group ends on a trained turn unless it is
    the row's last (`group_starts`), so only the row's last window could end on one, and it keeps
    the row's ending.
    """
    if window.end >= len(turns):
        return window.end
    for index in range(window.end - 1, window.new_start - 1, -1):
        if turns[index].role == "gpt" and index not in untrained:
            return index + 1
    return window.end


def window_layout(
    turns: Sequence[Turn],
    head: int,
    window: Window,
    summary_body: str | None,
    *,
    notice_text: str = "",
    notice_index: int | None = None,
    replaced: Mapping[int, OutputTurn] | None = None,
    untrained: Collection[int] = (),
) -> tuple[list[OutputTurn], list[bool | None]]:
    """The turns of `window` as written, and the training mark of each (None: not a gpt turn).

    Head (the notice appended to its system turn once a summary is in the window), then the
    summary turn, then the turns [context_start, `written_end`), each as `replaced` says if it
    names it (a tool result shortened to fit). A gpt turn is a training target (`True`) only in
    the window where it is new: window 0 for the head's, [new_start, end) for the rest; one the
    input marks `"train": false` (`untrained`) is a target in none, context in every window.
    """
    layout: list[OutputTurn] = []
    marks: list[bool | None] = []
    for index in range(head):
        if summary_body is not None and index == notice_index and notice_text:
            layout.append(EditedTurn(index, turns[index].value + notice_text))
        else:
            layout.append(KeptTurn(index))
        marks.append(window.index == 0 and index not in untrained if turns[index].role == "gpt" else None)
    if summary_body is not None:
        layout.append(NewTurn(Turn("human", summary_value(summary_body))))
        marks.append(None)
    for index in range(window.context_start, written_end(turns, window, untrained)):
        layout.append((replaced or {}).get(index) or KeptTurn(index))
        marks.append(index >= window.new_start and index not in untrained if turns[index].role == "gpt" else None)
    return layout, marks
