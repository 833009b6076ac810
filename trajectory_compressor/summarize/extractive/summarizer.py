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

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.summarize.fidelity.salient import (
    ERROR_CLASS,
    NAMED_IDENTIFIER,
    error_key,
    identifiers_in,
    paths_in_output,
)
from trajectory_compressor.summarize.fidelity.score import unique_tails
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.summarize.toolcalls import (
    Outcome,
    analyze_output,
    clip,
    command_gist,
    dumps,
    files_in,
    files_written_in,
    parse_tool_calls,
    parse_tool_responses,
    prose_of,
    think_of,
)
from trajectory_compressor.types import SUMMARY_PREFIX, SummaryError, SummaryRequest, SummaryResult, Turn

_ROLE_WORDS = {"human": "user", "gpt": "assistant", "tool": "tool", "system": "system"}
_ROLE_ORDER = ("system", "human", "gpt", "tool")
_LONG_VALUE = 60  # argument values longer than this are shown after the short ones
_FIRST_CHARS_PER_TOKEN = 3.3  # a first guess; code and JSON run ~3, English prose ~4+, CJK ~1.5
_MAX_COUNTS = 4  # tokenizer calls per summary before falling back to a hard cut
_GOOD_FILL = 0.9  # a fitting rendering this close to the budget is not worth another count
_COMMAND_KEYS = frozenset({"command", "cmd", "bash", "shell", "script"})
_KEPT_TEXT = 2000  # chars kept per request / note in the digest; no level shows more


@dataclass(frozen=True)
class _Detail:
    """How much of each field one rendering keeps."""

    requests: int
    request_chars: int
    arg_chars: int
    outcome_chars: int
    preview_chars: int
    files: int
    errors: int
    error_chars: int
    note_chars: int


# From rich to lean; each level is tried with every action before actions are elided.
_LEVELS = (
    _Detail(8, 400, 160, 200, 120, 80, 30, 160, 600),
    _Detail(6, 260, 110, 130, 70, 60, 24, 120, 400),
    _Detail(4, 180, 80, 90, 40, 50, 20, 100, 280),
    _Detail(3, 120, 60, 60, 0, 40, 16, 90, 200),
    _Detail(2, 90, 45, 45, 0, 30, 12, 80, 140),
    _Detail(1, 60, 30, 32, 0, 20, 8, 64, 80),
    _Detail(1, 60, 30, 32, 0, 10, 4, 60, 80),  # small budgets: room for a few calls
    _Detail(1, 50, 30, 30, 0, 5, 2, 50, 60),
)
# (level, fewest actions to keep when eliding; None = keep all): the order in which to give up detail.
_PLANS: tuple[tuple[int, int | None], ...] = (
    (0, None),
    (1, None),
    (2, None),
    (3, None),
    (4, None),
    (3, 12),
    (4, 6),
    (5, 2),
    (6, 2),
    (7, 1),
)


@dataclass(frozen=True)
class _CompactDetail:
    """How much a compact rendering (no per-call lines) keeps, for budgets of a few dozen tokens."""

    request_chars: int
    names: int
    files: int
    error_chars: int
    note_chars: int


_COMPACT_LEVELS = (
    _CompactDetail(120, 6, 12, 100, 200),
    _CompactDetail(60, 4, 8, 60, 80),
    _CompactDetail(0, 3, 5, 50, 50),
    _CompactDetail(0, 2, 3, 40, 0),
    _CompactDetail(0, 1, 1, 0, 0),
)


@dataclass(frozen=True)
class _Action:
    """One tool call of the region and, when its result is in the region too, the outcome."""

    name: str
    arguments: dict[str, Any] | str | None  # None: the call was made before the region
    outcome: Outcome | None  # None: no result in the region


@dataclass(frozen=True)
class _Digest:
    """Everything a rendering needs, extracted from the region in one pass."""

    turns: int
    roles: tuple[tuple[str, int], ...]
    requests: tuple[str, ...]
    actions: tuple[_Action, ...]
    files: tuple[tuple[str, bool], ...]  # (shortest unambiguous name, written), written first, then first mention
    errors: tuple[tuple[str, tuple[int, ...]], ...]  # (error line, 1-based action numbers)
    note: str
    earlier: str = ""  # the summary of an earlier compaction this one updates (redacted)
    earlier_errors: tuple[str, ...] = ()  # its error classes, kept in the Errors list
    earlier_ids: tuple[str, ...] = ()  # its identifiers (ids, hashes, versions, URLs), kept too


class ExtractiveSummarizer:
    """Summarizes a region without a model, always within the token budget."""

    name = "extractive"
    iterative = False  # cheap: a context window's summary digests the whole region again

    def __init__(self, counter: TokenCounter, *, redact: bool = True) -> None:
        self.counter = counter
        # Masks credentials in every piece of the region before it is digested (`--redact-secrets`):
        # before any cut, so that no clipped field can show part of a secret.
        self._redact = redact_secrets if redact else _unchanged
        self._prefix = SUMMARY_PREFIX + " "
        self._prefix_tokens = counter.count(self._prefix)
        self._summaries = 0
        self._truncated = 0

    def summarize_text(self, turns: Sequence[Turn], budget_tokens: int) -> str:
        """The summary body for `turns` such that prefix + " " + body holds at most `budget_tokens`.

        Returns "" only when the budget cannot hold the prefix and a word; the caller decides
        what that means (`summarize` raises).
        """
        return self._fit(turns, budget_tokens)[0]

    def _fit(self, turns: Sequence[Turn], budget_tokens: int, earlier: str = "") -> tuple[str, int | None]:
        """The body and, when it was measured, the tokens of prefix + " " + body."""
        renderer = _Renderer(_digest(turns, self._redact, earlier))
        available = budget_tokens - self._prefix_tokens
        if available <= 0:
            return "", None
        best, best_tokens = "", -1
        measured: dict[str, int] = {}
        richest = renderer.richest()
        target = int(available * _FIRST_CHARS_PER_TOKEN)
        text = richest if len(richest) <= target else renderer.within(target)
        for _ in range(_MAX_COUNTS):
            tokens = measured[text] = self.counter.count(self._prefix + text)
            ratio = len(self._prefix + text) / max(tokens, 1)  # measured on this very content
            if tokens <= budget_tokens:
                if tokens > best_tokens:
                    best, best_tokens = text, tokens
                if text == richest or tokens >= _GOOD_FILL * budget_tokens:
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

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize `request.turns`; raises SummaryError when the budget cannot hold any summary."""
        body, tokens = self._fit(request.turns, request.budget_tokens, request.previous_summary)
        if not body:
            where = f" ({request.label})" if request.label else ""
            raise SummaryError(f"budget of {request.budget_tokens} tokens is too small for any summary{where}", calls=0)
        self._summaries += 1
        return SummaryResult(text=body, summarizer=self.name, calls=0, tokens=tokens)

    def stats(self) -> dict[str, Any]:
        """Counters for the run report: summaries written and how many needed hard truncation."""
        return {"summaries": self._summaries, "truncated": self._truncated}

    async def aclose(self) -> None:
        """Nothing to release; present so every summarizer can be closed the same way."""

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


class _Renderer:
    """Renders one digest at any level of detail, caching the per-level action lines."""

    def __init__(self, digest: _Digest) -> None:
        self.digest = digest
        self._lines: dict[int, list[str]] = {}

    def richest(self) -> str:
        return self._render(0, None, None) or ""

    def within(self, max_chars: int) -> str:
        """The richest rendering of at most `max_chars` chars (the one-liner if none is)."""
        for level, min_keep in _PLANS:
            text = self._render(level, min_keep, max_chars)
            if text is not None:
                return text
        for level in range(len(_COMPACT_LEVELS)):
            text = self.compact(level)
            if len(text) <= max_chars:
                return text
        rich = self.one_line(rich=True)
        return rich if len(rich) <= max_chars else self.one_line()

    def _render(self, level: int, min_keep: int | None, max_chars: int | None) -> str | None:
        """The body at `level`, or None when it cannot be made to fit `max_chars`."""
        detail = _LEVELS[level]
        d = self.digest
        head = [_turns_line(d)]
        if d.earlier:
            head.append("Earlier summary: " + clip(d.earlier, detail.note_chars * 3))
        if d.requests:
            head.append("User requests:")
            head.extend(f"- {clip(text, detail.request_chars)}" for text in _pick_requests(d.requests, detail))
        tail = []
        if d.files:
            tail.append("Files touched: " + _files_text(d.files, detail.files))
        if d.errors or d.earlier_errors:
            tail.append("Errors:")
            if d.earlier_errors:
                tail.append("- earlier: " + clip(", ".join(d.earlier_errors), detail.error_chars * 2))
            tail.extend(_error_lines(d.errors, detail))
        if d.earlier_ids:
            tail.append("Earlier identifiers: " + clip(", ".join(d.earlier_ids), detail.note_chars))
        if d.note:
            tail.append("Last assistant note: " + clip(d.note, detail.note_chars))
        fixed = sum(len(line) + 1 for line in head) + sum(len(line) + 1 for line in tail)
        if not d.actions:
            text = "\n".join(head + tail)
            return text if max_chars is None or len(text) <= max_chars else None
        lines = self._action_lines(level)
        actions_header = f"Actions ({_plural(len(lines), 'tool call')}):"
        budget = None if max_chars is None else max_chars - fixed - len(actions_header) - 1
        block = _fit_actions(lines, d.actions, budget, min_keep)
        if block is None:
            return None
        return "\n".join([*head, actions_header, *block, *tail])

    def _action_lines(self, level: int) -> list[str]:
        if level not in self._lines:
            detail = _LEVELS[level]
            self._lines[level] = [
                _action_line(i, action, detail) for i, action in enumerate(self.digest.actions, start=1)
            ]
        return self._lines[level]

    def compact(self, level: int) -> str:
        """A few short lines: counts, tool names, the latest error, files and the last note."""
        detail = _COMPACT_LEVELS[level]
        d = self.digest
        lines = [_turns_line(d)]
        if d.earlier and detail.note_chars:
            lines.append("Earlier summary: " + clip(d.earlier, detail.note_chars))
        if d.requests and detail.request_chars:
            lines.append("Last user request: " + clip(d.requests[-1], detail.request_chars))
        if d.actions:
            failed = sum(1 for a in d.actions if a.outcome is not None and a.outcome.failed)
            lines.append(
                f"Actions ({_plural(len(d.actions), 'tool call')}): {_name_counts(d.actions, detail.names)}"
                + (f"; {failed} failed" if failed else "")
            )
        if d.files and detail.files:
            lines.append("Files touched: " + _files_text(d.files, detail.files))
        if d.errors and detail.error_chars:
            lines.append(f"Errors ({len(d.errors)}): " + _error_keys(d.errors, detail.error_chars))
        if d.note and detail.note_chars:
            lines.append("Last assistant note: " + clip(d.note, detail.note_chars))
        return "\n".join(lines)

    def one_line(self, rich: bool = False) -> str:
        """The leanest truthful account: "3 turns: 1 tool call (bash)."; `rich` adds the last error."""
        d = self.digest
        if not d.turns:
            return "No turns in this region."
        parts = []
        users = dict(d.roles).get("human", 0)
        if users:
            parts.append(_plural(users, "user message"))
        if d.actions:
            parts.append(f"{_plural(len(d.actions), 'tool call')} ({_name_counts(d.actions, 3)})")
        if d.errors:
            parts.append(_plural(len(d.errors), "error"))
            if rich:
                parts[-1] += ", last: " + clip(d.errors[-1][0], 50)
        return f"{_plural(d.turns, 'turn')}: {', '.join(parts)}." if parts else f"{_plural(d.turns, 'turn')}."


def _unchanged(text: str) -> str:
    return text


def _digest(turns: Sequence[Turn], redact: Callable[[str], str] = _unchanged, earlier: str = "") -> _Digest:
    """One pass over the region: pair calls with results, collect requests, files, errors, note.

    `redact` is applied to each piece of text as it is taken from the region, whole: tool-call
    arguments after JSON decoding too (a secret written `\\"pa55\\"` in the raw JSON is only
    recognisable decoded), and before any clipping. `earlier` is the summary of an earlier
    compaction that this one updates: its files, error classes and identifiers join the lists.
    """
    roles: Counter[str] = Counter()
    requests: list[str] = []
    actions: list[_Action] = []
    pending: list[int] = []  # indexes into `actions` of calls still waiting for a result
    note = ""
    files: dict[str, bool] = {}
    for turn in turns:
        roles[turn.role] += 1
        value = turn.value if isinstance(turn.value, str) else str(turn.value)
        if turn.role != "tool":  # a tool turn's pieces are redacted once parsed (below)
            value = redact(value)
        if turn.role == "human":
            text = value.strip()
            if text:
                requests.append(text[:_KEPT_TEXT])
        elif turn.role == "gpt":
            pending.clear()  # a new assistant turn: earlier calls got no result in this region
            # The latest words win; reasoning stands in when a turn says nothing else.
            said = prose_of(value) or (think_of(value) if "think>" in value else "")
            if said:
                note = said[:_KEPT_TEXT]
            for parsed in parse_tool_calls(value):
                call = replace(parsed, name=redact(parsed.name), arguments=_redact_value(parsed.arguments, redact))
                pending.append(len(actions))
                actions.append(_Action(call.name, call.arguments, None))
                for path in files_in(call.arguments):
                    files.setdefault(path, False)
                for path in files_written_in(call.arguments, call.name):
                    files[path] = True
        elif turn.role == "tool":
            for parsed_response in parse_tool_responses(value):
                response = replace(
                    parsed_response,
                    name=redact(parsed_response.name) if parsed_response.name else parsed_response.name,
                    content=redact(parsed_response.content),
                )
                for path in paths_in_output(response.content):
                    files.setdefault(path, False)
                slot = _match_pending(actions, pending, response.name)
                if slot is None:
                    actions.append(_Action(response.name or "tool", None, analyze_output(response.content)))
                else:
                    call = actions[slot]
                    outcome = analyze_output(response.content, _scalar_values(call.arguments))
                    actions[slot] = _Action(call.name, call.arguments, outcome)
    earlier = redact(earlier.strip())
    for path in files_in(earlier):
        files.setdefault(path, False)
    errors: dict[str, list[int]] = {}
    for number, action in enumerate(actions, start=1):
        if action.outcome is not None and action.outcome.error:
            errors.setdefault(action.outcome.error, []).append(number)
    names = _short_names(list(files))
    ordered_files = [(names[p], True) for p, w in files.items() if w] + [
        (names[p], False) for p, w in files.items() if not w
    ]
    return _Digest(
        turns=len(turns),
        roles=tuple((role, roles[role]) for role in _ordered_roles(roles)),
        requests=tuple(requests),
        actions=tuple(actions),
        files=tuple(ordered_files),
        errors=tuple((line, tuple(numbers)) for line, numbers in errors.items()),
        note=note,
        earlier=earlier,
        earlier_errors=tuple(dict.fromkeys(m.group(1).rsplit(".", 1)[-1] for m in ERROR_CLASS.finditer(earlier))),
        earlier_ids=tuple(dict.fromkeys(identifiers_in(earlier, NAMED_IDENTIFIER))),
    )


def _short_names(paths: list[str]) -> dict[str, str]:
    """Each path as its shortest tail (after a `/`) that no other path of the region ends with.

    `/testbed/django/db/models/query.py` becomes `models/query.py` beside `sql/query.py`, and
    `query.py` alone: the summary can list three times as many files in the same budget, and
    each still names one file of the region.
    """
    return {path: (unique_tails(path, paths) or [path])[-1] for path in paths}


def _redact_value(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` (decoded JSON arguments) with `redact` applied to every string in it, keys too."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(key)): _redact_value(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(item, redact) for item in value]
    return value


def _match_pending(actions: list[_Action], pending: list[int], name: str | None) -> int | None:
    """The waiting call a result belongs to: the first of the same name, else the first waiting."""
    if not pending:
        return None
    for position, index in enumerate(pending):
        if name is None or actions[index].name == name:
            return pending.pop(position)
    return pending.pop(0)


def _scalar_values(arguments: dict[str, Any] | str | None) -> frozenset[str]:
    if not isinstance(arguments, dict):
        return frozenset()
    return frozenset(str(v) for v in arguments.values() if isinstance(v, (str, int, float)) and len(str(v)) < 200)


def _ordered_roles(roles: Counter[str]) -> list[str]:
    known = [role for role in _ROLE_ORDER if roles[role]]
    return known + sorted(role for role in roles if role not in _ROLE_ORDER)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _turns_line(d: _Digest) -> str:
    if not d.turns:
        return "No turns in this region."
    parts = ", ".join(f"{count} {_ROLE_WORDS.get(role, role)}" for role, count in d.roles)
    return f"{_plural(d.turns, 'turn')} ({parts})."


def _pick_requests(requests: tuple[str, ...], detail: _Detail) -> list[str]:
    """The first request and the latest ones: the goal and where the user left things."""
    if len(requests) <= detail.requests:
        return list(requests)
    if detail.requests == 1:
        return [requests[-1]]
    skipped = len(requests) - detail.requests
    return [requests[0], f"… {_plural(skipped, 'more user message')} …", *requests[-(detail.requests - 1) :]]


def _format_arguments(arguments: dict[str, Any] | str | None) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return "raw: " + arguments
    values = [(key, _value_text(str(key), value)) for key, value in arguments.items()]
    if len(values) == 1:
        return values[0][1]
    # Short values (ids, paths, modes) first: they say the most per character.
    ordered = sorted(enumerate(values), key=lambda item: (len(item[1][1]) > _LONG_VALUE, item[0]))
    return ", ".join(f"{key}={text}" for _, (key, text) in ordered)


def _value_text(key: str, value: Any) -> str:
    if isinstance(value, str):
        if key.lower() in _COMMAND_KEYS:
            return clip(command_gist(value[:20_000]), 400)
        return clip(value, 400)
    return clip(dumps(value), 400)


def _action_line(number: int, action: _Action, detail: _Detail) -> str:
    arguments = clip(_format_arguments(action.arguments), detail.arg_chars)
    if action.outcome is None:
        result = "no result in this region"
    else:
        result = clip(action.outcome.render(detail.preview_chars), detail.outcome_chars)
    if action.arguments is None:
        call = f"{clip(action.name, 40)} (call made before this region)"
    else:
        call = f"{clip(action.name, 40)}: {arguments}" if arguments else clip(action.name, 40)
    return f"{number}. {call} → {result}"


def _fit_actions(
    lines: list[str], actions: tuple[_Action, ...], budget: int | None, min_keep: int | None
) -> list[str] | None:
    """All action lines if they fit; else the first and last ones around an elision line."""
    total = sum(len(line) + 1 for line in lines)
    if budget is None or total <= budget:
        return lines
    if min_keep is None or budget <= 0:
        return None
    n = len(lines)
    prefix = [0]
    for line in lines:
        prefix.append(prefix[-1] + len(line) + 1)

    def block(keep: int) -> list[str]:
        head = max(1, keep // 3)  # later actions matter more to what follows the region
        tail = keep - head
        skipped = actions[head : n - tail]
        marker = f"... {_plural(len(skipped), 'more tool call')} (names: {_name_counts(skipped, 4)}) ..."
        return [*lines[:head], marker, *lines[n - tail :]]

    def size(keep: int) -> int:
        head = max(1, keep // 3)
        tail = keep - head
        return prefix[head] + (prefix[n] - prefix[n - tail]) + 80  # 80: room for the marker

    low, high = min_keep, n - 1
    if low >= n or size(low) > budget:
        return None
    while low < high:  # the largest `keep` whose block fits, estimating the marker's length
        middle = (low + high + 1) // 2
        if size(middle) <= budget:
            low = middle
        else:
            high = middle - 1
    for keep in range(low, min_keep - 1, -1):  # the marker can be longer than estimated
        result = block(keep)
        if sum(len(line) + 1 for line in result) <= budget:
            return result
    return None


def _name_counts(actions: Sequence[_Action], limit: int) -> str:
    """ "bash×3, edit×2": tool names by count, ties in order of first use."""
    counts = Counter(action.name for action in actions)
    first_seen = {name: i for i, name in reversed(list(enumerate(a.name for a in actions)))}
    ranked = sorted(counts, key=lambda name: (-counts[name], first_seen[name]))
    shown = [f"{clip(name, 40)}×{counts[name]}" for name in ranked[:limit]]
    if len(ranked) > limit:
        shown.append(f"+{len(ranked) - limit} more")
    return ", ".join(shown)


def _files_text(files: tuple[tuple[str, bool], ...], limit: int) -> str:
    """ "edited: a.py, b.py; other: c.py, +3 more" (edited files come first in the digest)."""
    shown = files[:limit]
    edited = [clip(path, 80) for path, written in shown if written]
    other = [clip(path, 80) for path, written in shown if not written]
    more = [f"+{len(files) - limit} more"] if len(files) > limit else []
    if not edited:
        return ", ".join(other + more)
    if not other:
        return "edited: " + ", ".join(edited + more)
    return "edited: " + ", ".join(edited) + "; other: " + ", ".join(other + more)


def _error_keys(errors: tuple[tuple[str, tuple[int, ...]], ...], max_chars: int) -> str:
    """ "ValueError, KeyError, ls: cannot access…": each distinct error by its class or head."""
    keys = list(dict.fromkeys(error_key(line) for line, _ in errors))
    return clip(", ".join(keys), max_chars * 6)


def _error_lines(errors: tuple[tuple[str, tuple[int, ...]], ...], detail: _Detail) -> list[str]:
    """The latest distinct errors (older ones are likelier to be fixed), with their call numbers;
    the older ones beyond the level's count by their class or head only."""
    shown = errors[-detail.errors :] if detail.errors else ()
    lines = []
    if len(errors) > len(shown):
        older = errors[: len(errors) - len(shown)]
        lines.append(f"- {_plural(len(older), 'earlier distinct error')}: {_error_keys(older, detail.error_chars)}")
    for line, numbers in shown:
        where = ", ".join(str(n) for n in numbers[:4]) + (", …" if len(numbers) > 4 else "")
        label = "call" if len(numbers) == 1 else "calls"
        lines.append(f"- {clip(line, detail.error_chars)} ({label} {where})")
    return lines
