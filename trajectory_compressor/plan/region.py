"""Planning the compressible region: pure arithmetic on roles and token counts.

No I/O, no async, no tokenizer: the planner sees numbers only, so it can be tested
exhaustively and re-run cheaply (the second pass after a summary overshoots its budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trajectory_compressor.plan.protect import head_end, tail_start
from trajectory_compressor.settings import PlanConfig
from trajectory_compressor.types import CompressionRegion

# Reasons a row is left unchanged or still over the limit (stable strings: users grep metrics).
UNDER_TARGET = "under target"
NO_REGION = "no compressible turns between the protected head and tail"
NO_NET_SAVING = "no net saving: the compressible turns hold no more tokens than the summary would"
PROTECTED_OVER_BUDGET = "protected turns alone exceed the budget"
REGION_TOO_SMALL = "summarizing every compressible turn is not enough"
MIN_SUMMARY_ROOM = 64  # tokens: below this no summary says enough to be worth writing


@dataclass(frozen=True)
class Plan:
    """What to do with one trajectory, and what the planner expects it to cost.

    `region` is None when the row is left unchanged (`reason` says why). When it is set,
    `estimated_tokens` is the row's size after compression if the summary is exactly
    `summary_tokens` long, and `still_over_limit` says whether that is above the target.
    """

    total_tokens: int
    region: CompressionRegion | None
    region_tokens: int
    summary_tokens: int
    notice_tokens: int
    estimated_tokens: int
    still_over_limit: bool
    reason: str | None

    def size_with_summary(self, summary_tokens: int) -> int:
        """The row's size once its region is replaced by a summary of `summary_tokens` tokens."""
        return self.total_tokens - self.region_tokens + summary_tokens + self.notice_tokens

    def summary_room(self, budget: int, target: int) -> int:
        """The summary budget that lets the row fit `target`: `budget`, or, when a summary that
        long leaves the row over and a shorter one (of at least `MIN_SUMMARY_ROOM` tokens) would
        not, that shorter one. A summary that fills its budget (one ending with an anchor index)
        must not push over a row a short summary would have fitted."""
        room = target - self.size_with_summary(0)
        return room if self.still_over_limit and MIN_SUMMARY_ROOM <= room < budget else budget


def system_turn_in_head(roles: Sequence[str], head: int) -> int | None:
    """Index of the first system turn in the head: the one that receives the notice."""
    for index in range(head):
        if roles[index] == "system":
            return index
    return None


def plan_region(
    roles: Sequence[str],
    token_counts: Sequence[int],
    config: PlanConfig,
    *,
    notice_tokens: int = 0,
    summary_tokens: int | None = None,
    skip_under_target: bool = True,
) -> Plan:
    """Choose the shortest run of middle turns whose summary brings the row under the target.

    `notice_tokens` is the size of the notice appended to the head's system turn (only paid
    when there is one and the row is compressed). `summary_tokens` defaults to the configured
    budget; the second pass passes the real size of a summary that overshot.
    """
    if len(roles) != len(token_counts):
        raise ValueError("roles and token_counts must have the same length")
    summary = config.summary_target_tokens if summary_tokens is None else summary_tokens
    total = sum(token_counts)
    target = config.target_max_tokens

    def unchanged(reason: str, over: bool) -> Plan:
        return Plan(total, None, 0, 0, 0, total, over, reason)

    if total <= target and skip_under_target:
        return unchanged(UNDER_TARGET, False)

    tail = tail_start(roles, config)
    # A first occurrence inside the tail is part of the tail: it does not stretch the head.
    head = head_end(roles[:tail], config)
    if head >= tail:
        # Every turn is protected: if the row is over, the protected turns alone are.
        return unchanged(PROTECTED_OVER_BUDGET if total > target else NO_REGION, total > target)

    notice = notice_tokens if system_turn_in_head(roles, head) is not None else 0
    new_text = summary + notice
    needed = total - target + new_text
    saved_so_far = 0
    end = head
    while end < tail and saved_so_far < needed:
        saved_so_far += token_counts[end]
        end += 1
    # Never leave a tool turn as the first kept turn: its gpt call is in the region. Nor a user
    # turn: the summary is one, and templates that want alternating roles refuse two in a row.
    while head < end < tail and roles[end] in ("tool", "human"):
        saved_so_far += token_counts[end]
        end += 1

    if saved_so_far <= new_text:
        protected = total - saved_so_far
        why_unchanged = PROTECTED_OVER_BUDGET if protected > target else NO_NET_SAVING
        return unchanged(why_unchanged, total > target)

    estimated = total - saved_so_far + new_text  # = Plan.size_with_summary(summary)
    over = estimated > target
    reason = None
    if over:
        protected = total - sum(token_counts[head:tail])
        reason = PROTECTED_OVER_BUDGET if protected > target else REGION_TOO_SMALL
    return Plan(
        total_tokens=total,
        region=CompressionRegion(head, end),
        region_tokens=saved_so_far,
        summary_tokens=summary,
        notice_tokens=notice,
        estimated_tokens=estimated,
        still_over_limit=over,
        reason=reason,
    )
