"""`--prune-tool-outputs` on a prepared row: the placeholders, their exact counts, the pruned row.

The pure plan (`plan.prune`) says which tool turns to clear from numbers; this module makes
the numbers and applies the plan. A tool turn's placeholder names the tools its results came
from (a Hermes `<tool_response>` block's JSON `name`, an OpenAI tool message's `name` or the call
it answers, as the reader renders it) and the characters cleared. A ShareGPT tool turn's value
becomes the placeholder line; an OpenAI tool message keeps its keys (`tool_call_id`, `name`) and
only its `content` becomes the placeholder (`read.formats.with_text`), so a trainer still pairs
it with its call.

Once pruned, a row's `turns` and `token_counts` are what the planner, the summarizer and the
exact measure see: the placeholders in place of the cleared results, each counted exactly.
The turns as read stay in `Pruning.source_turns`, for the fidelity measures and the metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.count.chat_template import ChatTemplateCounter, ChatTemplateError
from trajectory_compressor.plan.prune import (
    PrunePlan,
    placeholder,
    plan_prune,
    prune_order,
    window_prunable_turns,
    worth_clearing,
)
from trajectory_compressor.read.formats import ConversationFormat, text_of, with_text
from trajectory_compressor.read.hermes import HermesResult, split_tool
from trajectory_compressor.settings import PlanConfig
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import EditedTurn, KeptTurn, Turn

if TYPE_CHECKING:  # prepare imports this module
    from trajectory_compressor.run.prepare import CountedRow


@dataclass(frozen=True)
class Pruning:
    """What pruning makes of one row: each cleared turn as written, the row as the planner then
    sees it (`turns`, `counts`: the placeholders in place, counted exactly), and the row as read."""

    edits: dict[int, EditedTurn]
    turns: list[Turn]
    counts: list[int]
    source_turns: list[Turn]
    source_counts: list[int]

    @property
    def source_tokens(self) -> int:
        return sum(self.source_counts)

    @property
    def saved_tokens(self) -> int:
        """The row's size as read less its size pruned: what the cleared results held, less
        their placeholders."""
        return self.source_tokens - sum(self.counts)


def cleared_chars(
    record: Any, fmt: ConversationFormat, index: int, turn: Turn, results: Sequence[HermesResult] | None = None
) -> int:
    """Characters of tool output a placeholder of turn `index` would clear: the results'
    contents (an OpenAI tool message's `content`; a ShareGPT turn's `<tool_response>` contents,
    or its whole value when it is not that markup). `results`: the turn's, when already split."""
    if fmt.name == "openai":
        return len(text_of(record, fmt, index, turn))
    return sum(len(result.content) for result in (results if results is not None else split_tool(turn.value)))


def placeholder_edit(
    record: Any,
    fmt: ConversationFormat,
    index: int,
    turn: Turn,
    chars: int,
    results: Sequence[HermesResult] | None = None,
) -> EditedTurn:
    """Tool turn `index` (as read: `turn`) with its output replaced by its one-line placeholder.
    The placeholder is text this tool writes: a tool's name is masked in it like any summary's."""
    found = results if results is not None else split_tool(turn.value)
    names = [redact_secrets(result.name) for result in found if result.name]
    line = placeholder(names, chars)
    if fmt.name == "openai":
        return with_text(record, fmt, index, turn, line)
    return EditedTurn(index, line)


@dataclass(frozen=True)
class Placeholders:
    """`--windows`: the tool turns a window may clear, each as it is then written, and the
    tokens it then counts (the replay decides which, window by window)."""

    edits: dict[int, EditedTurn]
    tokens: dict[int, int]


def candidate_edits(row: CountedRow, choose: Callable[..., list[int]], config: PlanConfig) -> dict[int, EditedTurn]:
    """The placeholder of every tool turn `choose` (`plan.prune`'s rule) offers for clearing."""
    record, fmt, turns = row.item.record, row.fmt, row.turns
    results: dict[int, tuple[HermesResult, ...]] = {}  # each tool turn's markup, parsed once

    def parsed(index: int) -> tuple[HermesResult, ...]:
        if index not in results:
            results[index] = split_tool(turns[index].value)
        return results[index]

    chars = [
        (cleared_chars(record, fmt, i, turn, None if fmt.name == "openai" else parsed(i)) if turn.role == "tool" else 0)
        for i, turn in enumerate(turns)
    ]
    return {
        index: placeholder_edit(record, fmt, index, turns[index], chars[index], parsed(index))
        for index in choose(row.roles, chars, config)
    }


def placeholder_tokens(row: CountedRow, edits: dict[int, EditedTurn], counter: TokenCounter) -> dict[int, int]:
    """What each turn of `edits` counts once cleared: its placeholder's value, exactly (per-value
    counts); with chat-template counts, the turn's count less the difference its text makes."""
    return placeholder_tokens_of([(row, edits)], counter)[0]


def placeholder_tokens_of(
    rows: Sequence[tuple[CountedRow, dict[int, EditedTurn]]], counter: TokenCounter
) -> list[dict[int, int]]:
    """`placeholder_tokens` of several rows, counted in one batch (one call, not one per row)."""
    values = [edit.value for _, edits in rows for edit in edits.values()]
    originals = []
    if counter.counts_chat_template:
        originals = [row.turns[i].value for row, edits in rows for i in edits]
    counts = counter.count_many(values + originals)
    costs, before = iter(counts[: len(values)]), iter(counts[len(values) :])
    result: list[dict[int, int]] = []
    for row, edits in rows:
        if not counter.counts_chat_template:
            result.append({index: next(costs) for index in edits})
        else:
            result.append({index: row.token_counts[index] - next(before) + next(costs) for index in edits})
    return result


def offer_placeholders(rows: Sequence[CountedRow], counter: TokenCounter, config: PlanConfig) -> list[CountedRow]:
    """`--windows`: each row, the ones over the target with the placeholders their windows may use."""
    offered = []
    for slot, row in enumerate(rows):
        if sum(row.token_counts) > config.target_max_tokens:
            edits = candidate_edits(row, window_prunable_turns, config)
            if edits:
                offered.append((slot, row, edits))
    counted = list(rows)
    costs = placeholder_tokens_of([(row, edits) for _, row, edits in offered], counter)
    for (slot, row, edits), tokens in zip(offered, costs, strict=True):
        counted[slot] = replace(row, placeholders=Placeholders(edits, tokens))
    return counted


def pruned_view(row: CountedRow, counter: TokenCounter, config: PlanConfig) -> Pruning | None:
    """What pruning would make of `row` (as read), without changing it; None when the row is
    within the target or has nothing worth clearing.

    With per-value counts each placeholder's count is exact; with chat-template counts the plan
    uses the difference its text makes, and the pruned row is then counted whole again, so the
    counts the planner goes on with are exact either way.
    """
    return pruned_views([row], counter, config)[0]


def pruned_views(rows: Sequence[CountedRow], counter: TokenCounter, config: PlanConfig) -> list[Pruning | None]:
    """`pruned_view` of each row, the placeholders of them all counted in one batch a round.

    A candidate is read (its tool markup parsed, its placeholder made and counted) only when the
    plan may need it. The plan clears candidates oldest first and stops once the row fits, so
    candidates after that point cannot change it: each row first reads, oldest first, enough
    candidates to cover what it is over by (placeholders taken to cost `PLACEHOLDER_TOKENS_GUESS`
    each), and is planned on them. A row they do not fit reads the rest of its candidates in a
    second round and is planned again. Either way the plan is the one all candidates give.
    """
    target = config.target_max_tokens
    candidates = {
        slot: _RowCandidates(row, prune_order(row.roles, config))
        for slot, row in enumerate(rows)
        if sum(row.token_counts) > target
    }
    costs: dict[int, dict[int, int]] = {slot: {} for slot in candidates}
    plans: dict[int, PrunePlan] = {}
    wanted: dict[int, int | None] = {slot: sum(rows[slot].token_counts) - target for slot in candidates}
    while wanted:
        read = {slot: candidates[slot].read(tokens, config) for slot, tokens in wanted.items()}
        counted = placeholder_tokens_of([(rows[slot], edits) for slot, edits in read.items()], counter)
        for slot, tokens in zip(read, counted, strict=True):
            costs[slot].update(tokens)
            plans[slot] = plan_prune(rows[slot].roles, rows[slot].token_counts, costs[slot], config)
        wanted = {
            slot: None  # all the rest
            for slot in read
            if plans[slot].total_tokens > target and not candidates[slot].exhausted
        }
    return [
        _view(row, candidates[slot].edits, costs[slot], plans[slot], counter) if slot in candidates else None
        for slot, row in enumerate(rows)
    ]


PLACEHOLDER_TOKENS_GUESS = 32  # what a placeholder is taken to cost when choosing how far to read


@dataclass
class _RowCandidates:
    """One row's candidates for clearing, read oldest first only as far as asked."""

    row: CountedRow
    order: list[int]  # the tool turns pruning looks at, oldest first (`plan.prune.prune_order`)
    looked_at: int = 0  # how many of `order` are read
    edits: dict[int, EditedTurn] = field(default_factory=dict)  # the candidates read, as written

    @property
    def exhausted(self) -> bool:
        return self.looked_at == len(self.order)

    def read(self, tokens: int | None, config: PlanConfig) -> dict[int, EditedTurn]:
        """The next candidates (each tool turn over `--prune-min-chars`, as its placeholder),
        until they are guessed to save `tokens` (None: every one left)."""
        record, fmt, turns, counts = self.row.item.record, self.row.fmt, self.row.turns, self.row.token_counts
        found: dict[int, EditedTurn] = {}
        saving = 0
        while not self.exhausted and (tokens is None or saving < tokens):
            index = self.order[self.looked_at]
            self.looked_at += 1
            results = None if fmt.name == "openai" else split_tool(turns[index].value)
            chars = cleared_chars(record, fmt, index, turns[index], results)
            if worth_clearing(chars, config):
                found[index] = placeholder_edit(record, fmt, index, turns[index], chars, results)
                saving += counts[index] - PLACEHOLDER_TOKENS_GUESS
        self.edits.update(found)
        return found


def _view(
    row: CountedRow, edits: dict[int, EditedTurn], costs: dict[int, int], plan: PrunePlan, counter: TokenCounter
) -> Pruning | None:
    """The row pruned as `plan` says, given its candidates' placeholders and their counts."""
    if not plan.turns:
        return None
    kept = {index: edits[index] for index in plan.turns}
    turns = [Turn(turn.role, kept[i].value) if i in kept else turn for i, turn in enumerate(row.turns)]
    counts = [costs[i] if i in kept else count for i, count in enumerate(row.token_counts)]
    if isinstance(counter, ChatTemplateCounter):  # the record as written, its tools included
        layout = [kept.get(index) or KeptTurn(index) for index in range(len(row.turns))]
        try:
            counts = counter.count_chats([counter.chat_of(row.item.record, row.fmt, layout)])[0]
        except ChatTemplateError:  # the template refuses the pruned row: it is not pruned
            return None
    return Pruning(kept, turns, counts, list(row.turns), list(row.token_counts))


def prune_rows(rows: Sequence[CountedRow], counter: TokenCounter, config: PlanConfig) -> list[CountedRow]:
    """Each row, pruned as far as the plan says when it is over the target: `pruning` set,
    `turns` and `token_counts` the pruned row's."""
    return [
        row if pruning is None else replace(row, pruning=pruning, turns=pruning.turns, token_counts=pruning.counts)
        for row, pruning in zip(rows, pruned_views(rows, counter, config), strict=True)
    ]
