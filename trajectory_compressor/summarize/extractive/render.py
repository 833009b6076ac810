"""Rendering a region's digest as summary text, at any level of detail down to one line.

From rich to lean: every field at full length, then shorter fields, then fewer actions with the
middle ones elided (later actions matter more to what follows the region), then a compact digest
with no per-call lines, then one line. `Renderer.within` gives the richest rendering of at most
a number of characters; the summarizer turns its token budget into that number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.summarize.extractive.action_lines import LevelLines
from trajectory_compressor.summarize.extractive.digest import Action, Digest
from trajectory_compressor.summarize.extractive.digest_lists import ErrorEntry, ErrorList
from trajectory_compressor.summarize.fidelity.salient import error_key
from trajectory_compressor.summarize.toolcalls import clip, command_gist, dumps

_ROLE_WORDS = {"human": "user", "gpt": "assistant", "tool": "tool", "system": "system"}
_LONG_VALUE = 60  # argument values longer than this are shown after the short ones
_COMMAND_KEYS = frozenset({"command", "cmd", "bash", "shell", "script"})


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


class Renderer:
    """Renders one digest at any level of detail. The per-level action lines and their running
    lengths are the digest's (`Digest.lines`), kept across the digests of a growing region, so a
    rendering costs what it shows, whatever the number of calls."""

    def __init__(self, digest: Digest, *, min_files: int = 0) -> None:
        self.digest = digest
        # Files listed at every detailed level, however lean (the compact ones keep their own
        # few): with the values index the digest is shorter, and the files the region touched are
        # what the next turns act on, each a few tokens by its short name.
        self.min_files = min_files
        self._heads: dict[_Detail, list[str]] = {}
        self._tails: dict[_Detail, list[str]] = {}
        self._arguments: dict[int, str] = {}  # a call's arguments, formatted
        self._outcomes: dict[tuple[int, int], str] = {}  # a call's outcome at a preview length

    def richest(self) -> str:
        return self._render(0, None, None) or ""

    def richest_within(self, max_chars: int) -> str | None:
        """`richest()` if it is at most `max_chars` long, else None (its length known first)."""
        return None if self.richest_longer_than(max_chars) else self.richest()

    def richest_longer_than(self, max_chars: int) -> bool:
        """Whether `richest()` is longer than `max_chars`, known without making it: its calls'
        lines are made only until they pass `max_chars`."""
        d = self.digest
        head, tail = self._head(_LEVELS[0]), self._tail(_LEVELS[0])
        fixed = sum(len(line) + 1 for line in head) + sum(len(line) + 1 for line in tail)
        if not d.actions:
            return fixed - 1 > max_chars
        header = f"Actions ({_plural(len(d.actions), 'tool call')}):"
        return not self._action_lines(0).fits(max_chars - fixed - len(header))

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
        head, tail = self._head(detail), self._tail(detail)
        fixed = sum(len(line) + 1 for line in head) + sum(len(line) + 1 for line in tail)
        if not d.actions:
            text = "\n".join(head + tail)
            return text if max_chars is None or len(text) <= max_chars else None
        lines = self._action_lines(level)
        actions_header = f"Actions ({_plural(lines.count, 'tool call')}):"
        budget = None if max_chars is None else max_chars - fixed - len(actions_header) - 1
        block = _fit_actions(lines, d, budget, min_keep)
        if block is None:
            return None
        return "\n".join([*head, actions_header, *block, *tail])

    def _head(self, detail: _Detail) -> list[str]:
        head = self._heads.get(detail)
        if head is None:
            head = self._heads[detail] = self._make_head(detail)
        return head

    def _tail(self, detail: _Detail) -> list[str]:
        tail = self._tails.get(detail)
        if tail is None:
            tail = self._tails[detail] = self._make_tail(detail)
        return tail

    def _make_head(self, detail: _Detail) -> list[str]:
        d = self.digest
        head = [_turns_line(d)]
        if d.earlier:
            head.append("Earlier summary: " + clip(d.earlier, detail.note_chars * 3))
        if d.requests:
            head.append("User requests:")
            head.extend(f"- {clip(text, detail.request_chars)}" for text in _pick_requests(d.requests, detail))
        return head

    def _make_tail(self, detail: _Detail) -> list[str]:
        d = self.digest
        tail = []
        if d.files:
            tail.append("Files touched: " + _files_text(d.files, max(detail.files, self.min_files)))
        if d.errors or d.earlier_errors:
            tail.append("Errors:")
            tail.extend(_earlier_error_lines(d, detail))
            tail.extend(_error_lines(d.errors, detail))
        if d.earlier_ids:
            tail.append("Earlier identifiers: " + clip(", ".join(d.earlier_ids), detail.note_chars))
        if d.note:
            tail.append("Last assistant note: " + clip(d.note, detail.note_chars))
        return tail

    def _action_lines(self, level: int) -> LevelLines:
        detail = _LEVELS[level]
        actions = self.digest.actions
        return self.digest.lines.level(
            level, len(actions), lambda index: self._action_line(index, actions[index], detail)
        )

    def _action_line(self, index: int, action: Action, detail: _Detail) -> str:
        """The call's line at `detail`: its arguments and outcome, each formatted once for every
        level (they differ only in where they are clipped)."""
        arguments = self._arguments.get(index)
        if arguments is None:
            arguments = self._arguments[index] = _format_arguments(action.arguments)
        if action.outcome is None:
            result = "no result in this region"
        else:
            key = (index, detail.preview_chars)
            outcome = self._outcomes.get(key)
            if outcome is None:
                outcome = self._outcomes[key] = action.outcome.render(detail.preview_chars)
            result = clip(outcome, detail.outcome_chars)
        shown = None if action.arguments is None else clip(arguments, detail.arg_chars)
        return _call_line(index + 1, action.name, shown, result)

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
            failed = d.failed
            lines.append(
                f"Actions ({_plural(len(d.actions), 'tool call')}): {_name_counts(d, 0, len(d.actions), detail.names)}"
                + (f"; {failed} failed" if failed else "")
            )
        if d.files and detail.files:
            lines.append("Files touched: " + _files_text(d.files, detail.files))
        if d.errors and detail.error_chars:
            lines.append(f"Errors ({len(d.errors)}): " + _error_keys(d.errors, len(d.errors), detail.error_chars))
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
            parts.append(f"{_plural(len(d.actions), 'tool call')} ({_name_counts(d, 0, len(d.actions), 3)})")
        if d.errors:
            parts.append(_plural(len(d.errors), "error"))
            if rich:
                parts[-1] += ", last: " + clip(d.errors[-1][0], 50)
        return f"{_plural(d.turns, 'turn')}: {', '.join(parts)}." if parts else f"{_plural(d.turns, 'turn')}."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _turns_line(d: Digest) -> str:
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


def _call_line(number: int, name: str, arguments: str | None, result: str) -> str:
    """ "3. bash: ls → ok, 4 lines / 120 chars"; `arguments` None: the call was made before the region."""
    if arguments is None:
        call = f"{clip(name, 40)} (call made before this region)"
    else:
        call = f"{clip(name, 40)}: {arguments}" if arguments else clip(name, 40)
    return f"{number}. {call} → {result}"


def _fit_actions(lines: LevelLines, d: Digest, budget: int | None, min_keep: int | None) -> list[str] | None:
    """All action lines if they fit; else the first and last ones around an elision line. Only
    the lines the budget can hold are made (`LevelLines`)."""
    n = lines.count
    if budget is None or lines.fits(budget):
        return lines.head(n)
    if min_keep is None or budget <= 0:
        return None

    def block(keep: int) -> list[str]:
        head = max(1, keep // 3)  # later actions matter more to what follows the region
        tail = keep - head
        skipped = n - tail - head
        marker = f"... {_plural(skipped, 'more tool call')} (names: {_name_counts(d, head, n - tail, 4)}) ..."
        return [*lines.head(head), marker, *lines.tail(tail)]

    def size(keep: int) -> int:  # exact while it fits the budget; above it once it does not
        head = max(1, keep // 3)
        return lines.head_size(head, budget) + lines.tail_size(keep - head, budget) + 80  # 80: the marker

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


def _name_counts(d: Digest, start: int, end: int, limit: int) -> str:
    """ "bash×3, edit×2": the tool names of calls [start, end) by count, ties in order of first use."""
    ranked = sorted(d.names.counts(start, end), key=lambda entry: (-entry[1], entry[2]))
    shown = [f"{clip(name, 40)}×{count}" for name, count, _ in ranked[:limit]]
    if len(ranked) > limit:
        shown.append(f"+{len(ranked) - limit} more")
    return ", ".join(shown)


def _files_text(files: Sequence[tuple[str, bool]], limit: int) -> str:
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


def _error_keys(errors: Sequence[ErrorEntry], count: int, max_chars: int) -> str:
    """ "ValueError, KeyError, ls: cannot access…": each distinct error of the first `count` by its
    class or head. Only as many keys are joined as the clipped text can show."""
    keys = errors.keys(count) if isinstance(errors, ErrorList) else _keys(errors[:count])
    limit = max_chars * 6
    wanted = limit * 4 + 64  # all `clip` reads of the text
    joined: list[str] = []
    size = -2
    for key in keys:
        joined.append(key)
        size += len(key) + 2
        if size >= wanted:
            break
    return clip(", ".join(joined), limit)


def _keys(errors: Sequence[ErrorEntry]) -> list[str]:
    return list(dict.fromkeys(error_key(line) for line, _ in errors))


def _earlier_error_lines(d: Digest, detail: _Detail) -> list[str]:
    """An earlier summary's errors: its latest lines in full as this level shows errors (the
    older by their keys), or the classes picked out of a summary this summarizer did not write."""
    if not d.earlier_errors:
        return []
    if not d.earlier_error_lines:
        return ["- earlier: " + clip(", ".join(d.earlier_errors), detail.error_chars * 2)]
    shown = d.earlier_errors[-detail.errors :] if detail.errors else ()
    older = d.earlier_errors[: len(d.earlier_errors) - len(shown)]
    entries: tuple[ErrorEntry, ...] = tuple((line, ()) for line in older)
    lines = ["- earlier: " + _error_keys(entries, len(entries), detail.error_chars)] if older else []
    return lines + [f"- earlier: {clip(line, detail.error_chars)}" for line in shown]


def _error_lines(errors: Sequence[ErrorEntry], detail: _Detail) -> list[str]:
    """The latest distinct errors (older ones are likelier to be fixed), with their call numbers;
    the older ones beyond the level's count by their class or head only."""
    shown = errors[-detail.errors :] if detail.errors else ()
    lines = []
    if len(errors) > len(shown):
        older = len(errors) - len(shown)
        lines.append(f"- {_plural(older, 'earlier distinct error')}: {_error_keys(errors, older, detail.error_chars)}")
    for line, numbers in shown:
        where = ", ".join(str(n) for n in numbers[:4]) + (", …" if len(numbers) > 4 else "")
        label = "call" if len(numbers) == 1 else "calls"
        lines.append(f"- {clip(line, detail.error_chars)} ({label} {where})")
    return lines
