"""Exact sizes of a rewritten row: what the notice costs in place, what the new layout counts.

The planner works on per-turn counts and charges the notice as counted alone. Writing a row
must not break the plan's promise to fit, so the few numbers that can differ once the row is
rebuilt (the notice appended to a system prompt, the summary turn, a chat-template rendering)
are measured here, on the real text, with the run's tokenizer.
"""

from __future__ import annotations

import functools

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.count.chat_template import ChatTemplateCounter, ChatTemplateError
from trajectory_compressor.plan.apply import carries_notice, compressed_layout, summary_value
from trajectory_compressor.plan.region import Plan, plan_region, system_turn_in_head
from trajectory_compressor.run.prepare import ValidRow, summary_tokens
from trajectory_compressor.settings import PlanConfig
from trajectory_compressor.types import (
    EditedTurn,
    KeptTurn,
    NewTurn,
    OutputTurn,
    SummaryError,
    SummaryResult,
    Turn,
)


class RewriteRefused(SummaryError):
    """The chat template refuses a rewritten row (a rule it enforces, such as alternating roles,
    broken by the summary turn or a cut): the row cannot be written that way, and a trainer
    could not render it either."""


class RowMeasure:
    """Re-planning and exact counting for one run's rows (its tokenizer, plan settings and notice)."""

    def __init__(self, counter: TokenCounter, plan_config: PlanConfig, *, skip_under_target: bool) -> None:
        self.counter = counter
        self.plan_config = plan_config
        self.skip_under_target = skip_under_target
        self.notice_text = plan_config.notice
        self.chat = counter if isinstance(counter, ChatTemplateCounter) else None
        self.summary_cost = summary_tokens(counter, plan_config)  # the planner's charge for the summary turn
        # Rows of one dataset mostly share their system prompt: count each edited one once.
        self._count_value = functools.lru_cache(maxsize=64)(counter.count)

    def replan(self, row: ValidRow, *, notice_tokens: int, summary_tokens: int | None = None) -> Plan:
        """The row planned again with a measured notice cost or summary size."""
        return plan_region(
            row.roles,
            row.token_counts,
            self.plan_config,
            notice_tokens=notice_tokens,
            summary_tokens=self.summary_cost if summary_tokens is None else summary_tokens,
            skip_under_target=self.skip_under_target,
        )

    def with_exact_notice(self, row: ValidRow, plan: Plan) -> Plan:
        """The plan, re-made if the notice costs this row more than the planner assumed.

        Appended to a system prompt, the notice's first token can merge with the prompt's last
        (cheaper) or, for some texts, split (dearer). Only the dearer case re-plans, so the
        plan's promise to fit stays true.
        """
        assert plan.region is not None
        index = system_turn_in_head(row.roles, plan.region.start)
        if index is None or not self.notice_for(row):
            return plan
        cost = self.notice_cost(row, index, head_end=plan.region.start)
        if cost <= plan.notice_tokens:
            return plan
        return self.replan(row, notice_tokens=cost, summary_tokens=plan.summary_tokens)

    def notice_for(self, row: ValidRow) -> str:
        """The notice to append to this row's system turn: none if it carries it already."""
        return "" if carries_notice(row.turns, self.notice_text) else self.notice_text

    def notice_cost(self, row: ValidRow, index: int, *, head_end: int | None = None) -> int:
        """Tokens the notice adds to turn `index` of this row, measured in place.

        Chat-template counts: the head (turns before `head_end`) rendered with the row's tools,
        with and without the notice; the whole row if the template refuses the head alone.
        """
        turn = row.turns[index]
        edited = Turn(turn.role, turn.value + self.notice_text)
        if self.chat is None:
            return self._count_value(edited.value) - row.token_counts[index]
        end = len(row.turns) if head_end is None else max(head_end, index + 1)
        before: list[OutputTurn] = [KeptTurn(i) for i in range(end)]
        after = [EditedTurn(index, edited.value) if i == index else item for i, item in enumerate(before)]
        record = row.item.record
        try:
            counts = self.chat.count_chats([self.chat.chat_of(record, row.fmt, layout) for layout in (before, after)])
        except ChatTemplateError:
            whole: list[OutputTurn] = [
                EditedTurn(index, edited.value) if i == index else KeptTurn(i) for i in range(len(row.turns))
            ]
            try:
                return self.size(row, whole) - sum(row.token_counts)
            except RewriteRefused:  # the rewritten row is measured (and refused) when written
                return self._count_value(self.notice_text)
        return sum(counts[1]) - sum(counts[0])

    def layout(self, row: ValidRow, plan: Plan, body: str) -> list[OutputTurn]:
        """The compressed row's layout: the head (notice appended), the summary, the rest (its
        cleared tool results as their placeholders)."""
        assert plan.region is not None
        notice_index = system_turn_in_head(row.roles, plan.region.start)
        layout = compressed_layout(row.turns, plan.region, body, self.notice_for(row) or None, notice_index)
        return with_pruned(row, layout)

    def pruned_layout(self, row: ValidRow) -> list[OutputTurn]:
        """A pruned row with no summary: every turn, the cleared tool results as their placeholders."""
        return with_pruned(row, [KeptTurn(index) for index in range(len(row.turns))])

    def size(self, row: ValidRow, layout: list[OutputTurn]) -> int:
        """The exact token count of a rewritten row, as an independent recount would find it.

        Raises `RewriteRefused` when the chat template refuses the rewritten row.

        Per-value counts: kept turns keep their counts, new and edited turns (the summary, the
        system turn with the notice appended) are counted whole. Chat-template counts: the
        rewritten record, as the writer writes it (its tools, its message objects), is rendered
        and counted whole.
        """
        if self.chat is not None:
            try:
                return sum(self.chat.count_chats([self.chat.chat_of(row.item.record, row.fmt, layout)])[0])
            except ChatTemplateError as exc:
                reason = str(exc).removeprefix("chat template failed: ")
                raise RewriteRefused(f"the chat template refuses the rewritten row: {reason}") from None
        kept = sum(row.token_counts[item.index] for item in layout if isinstance(item, KeptTurn))
        edited = sum(self._count_value(item.value) for item in layout if isinstance(item, EditedTurn))
        new_values = [item.turn.value for item in layout if isinstance(item, NewTurn)]
        return kept + edited + sum(self.counter.count_many(new_values))

    def summary_tokens(self, result: SummaryResult) -> int:
        """Size of the summary turn: measured by the summarizer when it could, else counted here."""
        if result.tokens is not None and not self.counter.counts_chat_template and result.text == result.text.strip():
            return result.tokens
        return self.counter.count_turn(Turn("human", summary_value(result.text)))


def with_pruned(row: ValidRow, layout: list[OutputTurn]) -> list[OutputTurn]:
    """`layout` with each tool result `--prune-tool-outputs` cleared written as its placeholder."""
    if row.pruning is None:
        return layout
    edits = row.pruning.edits
    return [edits.get(item.index, item) if isinstance(item, KeptTurn) else item for item in layout]
