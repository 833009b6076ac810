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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.count.counter import ChatTemplateError
from trajectory_compressor.plan.prune import placeholder, plan_prune, prunable_turns
from trajectory_compressor.read.formats import ConversationFormat, text_of, with_text
from trajectory_compressor.read.hermes import split_tool
from trajectory_compressor.settings import PlanConfig
from trajectory_compressor.types import EditedTurn, Turn

if TYPE_CHECKING:  # prepare imports this module
    from trajectory_compressor.run.prepare import PreparedRow


@dataclass(frozen=True)
class Pruning:
    """What pruning did to one row: each cleared turn as written, and the row as read.

    `saved_tokens` is the row's size as read less its size pruned (what the cleared results
    held, less their placeholders).
    """

    edits: dict[int, EditedTurn]
    source_turns: list[Turn]
    source_tokens: int
    saved_tokens: int

    @property
    def turns(self) -> list[int]:
        return sorted(self.edits)


def cleared_chars(record: Any, fmt: ConversationFormat, index: int, turn: Turn) -> int:
    """Characters of tool output a placeholder of turn `index` would clear: the results'
    contents (an OpenAI tool message's `content`; a ShareGPT turn's `<tool_response>` contents,
    or its whole value when it is not that markup)."""
    if fmt.name == "openai":
        return len(text_of(record, fmt, index, turn))
    return sum(len(result.content) for result in split_tool(turn.value))


def placeholder_edit(record: Any, fmt: ConversationFormat, index: int, turn: Turn, chars: int) -> EditedTurn:
    """Tool turn `index` (as read: `turn`) with its output replaced by its one-line placeholder."""
    names = [result.name for result in split_tool(turn.value) if result.name]
    line = placeholder(names, chars)
    if fmt.name == "openai":
        return with_text(record, fmt, index, turn, line)
    return EditedTurn(index, line)


def candidate_edits(row: PreparedRow, config: PlanConfig) -> dict[int, EditedTurn]:
    """The placeholder of every tool turn outside the protected head and tail that is long
    enough to clear."""
    assert row.turns is not None and row.fmt is not None
    record, fmt, turns = row.item.record, row.fmt, row.turns
    chars = [cleared_chars(record, fmt, i, turn) if turn.role == "tool" else 0 for i, turn in enumerate(turns)]
    return {
        index: placeholder_edit(record, fmt, index, turns[index], chars[index])
        for index in prunable_turns(row.roles, chars, config)
    }


def prune_rows(rows: Sequence[PreparedRow], counter: TokenCounter, config: PlanConfig) -> None:
    """Prune each row over the target as far as the plan says, in place (`row.pruning` set).

    Placeholders are counted in one batch. With per-value counts each is exact; with chat-template
    counts the plan uses the value's difference, and the pruned rows are then counted whole
    again, so the counts the planner goes on with are exact either way.
    """
    over = [row for row in rows if sum(row.token_counts or ()) > config.target_max_tokens]
    candidates = [candidate_edits(row, config) for row in over]
    values = [edit.value for edits in candidates for edit in edits.values()]
    originals = [row.turns[i].value for row, edits in zip(over, candidates, strict=True) for i in edits]  # type: ignore[index]
    placeholder_tokens = iter(counter.count_many(values))
    original_tokens = iter(counter.count_many(originals) if counter.counts_chat_template else [])
    pruned: list[PreparedRow] = []
    for row, edits in zip(over, candidates, strict=True):
        assert row.turns is not None and row.token_counts is not None
        costs = {}
        for index in edits:
            cost = next(placeholder_tokens)
            if counter.counts_chat_template:  # the turn's own markers stay: only its text changes
                cost = row.token_counts[index] - next(original_tokens) + cost
            costs[index] = cost
        plan = plan_prune(row.roles, row.token_counts, costs, config)
        if not plan.turns:
            continue
        source_tokens = sum(row.token_counts)
        kept = {index: edits[index] for index in plan.turns}
        row.pruning = Pruning(kept, list(row.turns), source_tokens, plan.saved_tokens)
        row.turns = [Turn(turn.role, kept[i].value) if i in kept else turn for i, turn in enumerate(row.turns)]
        row.token_counts = [costs[i] if i in kept else count for i, count in enumerate(row.token_counts)]
        pruned.append(row)
    if counter.counts_chat_template and pruned:
        _recount(pruned, counter)


def _recount(rows: list[PreparedRow], counter: TokenCounter) -> None:
    """Chat-template counts of the pruned rows, rendered whole: exact, as a recount finds them.
    A row the template refuses pruned keeps the counts as read and is not pruned."""
    while rows:
        try:
            all_counts = counter.count_conversations([row.turns for row in rows])  # type: ignore[misc]
            break
        except ChatTemplateError as exc:
            failed = rows.pop(exc.position)
            assert failed.pruning is not None
            failed.turns = list(failed.pruning.source_turns)
            failed.token_counts = counter.count_conversations([failed.turns])[0]
            failed.pruning = None
    else:
        return
    for row, counts in zip(rows, all_counts, strict=True):
        assert row.pruning is not None
        row.token_counts = counts
        saved = row.pruning.source_tokens - sum(counts)
        row.pruning = Pruning(row.pruning.edits, row.pruning.source_turns, row.pruning.source_tokens, saved)
