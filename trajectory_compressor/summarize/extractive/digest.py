"""One pass over a region: what the extractive summarizer knows of it, before any rendering.

Calls are paired with their results, and the user requests, files, errors and the assistant's
last words collected, each piece redacted as it is taken (before any cut). Every rendering of
the summary, at any level of detail, reads this digest and nothing else, so the region is
parsed once however many renderings the fitting tries.

The digest can be extended (`RegionDigest.extend`): a context window's region is the previous
window's and the turns that left the context since, so `--windows` reads each turn once, as the
LLM path updates its summary with only those turns. What a rendering reads of the lists (the
last errors, the first files, the tool names of any range of calls) is kept so that it costs
what the rendering shows, not the length of the region.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajectory_compressor.summarize.extractive.action_lines import ActionLines
from trajectory_compressor.summarize.extractive.digest_lists import ErrorEntry, ErrorLines, FileList
from trajectory_compressor.summarize.extractive.earlier import read_earlier
from trajectory_compressor.summarize.fidelity.salient import (
    ERROR_CLASS,
    NAMED_IDENTIFIER,
    identifiers_in,
    paths_in_output,
)
from trajectory_compressor.summarize.masking import masked_arguments, unchanged
from trajectory_compressor.summarize.toolcalls import (
    Outcome,
    analyze_output,
    files_in,
    files_written_in,
    parse_tool_calls,
    parse_tool_responses,
    said_in,
)
from trajectory_compressor.types import Turn

_ROLE_ORDER = ("system", "human", "gpt", "tool")
_KEPT_TEXT = 2000  # chars kept per request / note in the digest; no level shows more


@dataclass(frozen=True)
class Action:
    """One tool call of the region and, when its result is in the region too, the outcome."""

    name: str
    arguments: dict[str, Any] | str | None  # None: the call was made before the region
    outcome: Outcome | None  # None: no result in the region

    @property
    def failed(self) -> bool:
        return self.outcome is not None and self.outcome.failed


class ActionNames:
    """Where each tool name occurs among the calls: the names of any range of calls, counted in
    a few steps per distinct name (a rendering that elides the middle calls names them)."""

    def __init__(self) -> None:
        self._positions: dict[str, list[int]] = {}

    def add(self, index: int, name: str) -> None:
        self._positions.setdefault(name, []).append(index)

    def counts(self, start: int, end: int) -> list[tuple[str, int, int]]:
        """(name, calls, first call) of each name among calls [start, end), by first call."""
        found = []
        for name, positions in self._positions.items():
            low = bisect_left(positions, start)
            high = bisect_left(positions, end, low)
            if high > low:
                found.append((name, high - low, positions[low]))
        return found


@dataclass(frozen=True)
class Digest:
    """Everything a rendering needs, extracted from the region in one pass.

    `files` and `errors` are views of the builder that made the digest (`RegionDigest`): read
    them before it is extended."""

    turns: int
    roles: tuple[tuple[str, int], ...]
    requests: tuple[str, ...]
    actions: tuple[Action, ...]
    files: Sequence[tuple[str, bool]]  # (shortest unambiguous name, written), written first, then first mention
    errors: Sequence[ErrorEntry]  # (error line, 1-based action numbers)
    note: str
    earlier: str = ""  # the summary of an earlier compaction this one updates (redacted)
    earlier_errors: tuple[str, ...] = ()  # its error lines (ours) or classes (other text), kept in the Errors list
    earlier_error_lines: bool = False  # `earlier_errors` are whole lines, shown one per line
    earlier_ids: tuple[str, ...] = ()  # its identifiers (ids, hashes, versions, URLs), kept too
    names: ActionNames = field(default_factory=ActionNames)  # tool names by call, for counts over ranges
    failed: int = 0  # calls whose result failed
    lines: ActionLines = field(default_factory=ActionLines)  # the calls' lines, kept across digests


def digest_region(turns: Sequence[Turn], redact: Callable[[str], str] = unchanged, earlier: str = "") -> Digest:
    """One pass over the region: pair calls with results, collect requests, files, errors, note.

    `redact` is applied to each piece of text as it is taken from the region, whole: tool-call
    arguments after JSON decoding too (a secret written `\\"pa55\\"` in the raw JSON is only
    recognisable decoded), and before any clipping. `earlier` is the summary of an earlier
    compaction that this one updates: its files and identifiers join the lists, and, when this
    summarizer wrote it, its user requests, error lines and last note too (`earlier.py`); from
    any other text, its error classes.
    """
    return RegionDigest(redact).extend(turns).digest(earlier)


class RegionDigest:
    """The digest of a region that grows at its end (`extend`), read at any point (`digest`)."""

    def __init__(self, redact: Callable[[str], str] = unchanged) -> None:
        self._redact = redact
        self.turns = 0
        self._roles: Counter[str] = Counter()
        self._requests: list[str] = []
        self._actions: list[Action] = []
        self._pending: list[int] = []  # indexes into `_actions` of calls still waiting for a result
        self._note = ""
        self._names = ActionNames()
        self._failed = 0
        self._lines = ActionLines()
        self._files = FileList()
        self._errors = ErrorLines()

    def extend(self, turns: Iterable[Turn]) -> RegionDigest:
        """The region with `turns` after it."""
        redact = self._redact
        actions, pending = self._actions, self._pending
        for turn in turns:
            self.turns += 1
            self._roles[turn.role] += 1
            value = turn.value if isinstance(turn.value, str) else str(turn.value)
            if turn.role != "tool":  # a tool turn's pieces are redacted once parsed (below)
                value = redact(value)
            if turn.role == "human":
                text = value.strip()
                if text:
                    self._requests.append(text[:_KEPT_TEXT])
            elif turn.role == "gpt":
                pending.clear()  # a new assistant turn: earlier calls got no result in this region
                # The latest words win; reasoning stands in when a turn says nothing else.
                said = said_in(value)
                if said:
                    self._note = said[:_KEPT_TEXT]
                for call in parse_tool_calls(value):
                    name, arguments = redact(call.name), masked_arguments(call.arguments, redact)
                    pending.append(len(actions))
                    self._append(Action(name, arguments, None))
                    for path in files_in(arguments):
                        self._files.mention(path)
                    for path in files_written_in(arguments, name):
                        self._files.write(path)
            elif turn.role == "tool":
                for response in parse_tool_responses(value):
                    tool = redact(response.name) if response.name else response.name
                    content = redact(response.content)
                    for path in paths_in_output(content):
                        self._files.mention(path)
                    slot = _match_pending(actions, pending, tool)
                    if slot is None:
                        self._append(Action(tool or "tool", None, analyze_output(content)))
                    else:
                        made = actions[slot]
                        outcome = analyze_output(content, _scalar_values(made.arguments))
                        self._set(slot, Action(made.name, made.arguments, outcome))
            # Calls before the first one still waiting are final: their errors go in, in order.
            self._errors.commit(actions, pending[0] if pending else len(actions))
        return self

    def _append(self, action: Action) -> None:
        self._names.add(len(self._actions), action.name)
        self._failed += action.failed
        self._actions.append(action)

    def _set(self, index: int, action: Action) -> None:
        self._failed += action.failed - self._actions[index].failed
        self._actions[index] = action
        self._lines.invalidate(index)

    def digest(self, earlier: str = "") -> Digest:
        """The digest of the region so far; `earlier`: see `digest_region`."""
        earlier = self._redact(earlier.strip())
        carried = read_earlier(earlier)
        errors = self._errors.view(self._actions)
        files: Sequence[tuple[str, bool]] = self._files
        if earlier:
            files = self._files.with_mentions(files_in(earlier))
        return Digest(
            turns=self.turns,
            roles=tuple((role, self._roles[role]) for role in _ordered_roles(self._roles)),
            requests=(*carried.requests, *self._requests),
            actions=tuple(self._actions),
            files=files,
            errors=errors,
            note=self._note or carried.note,
            earlier=carried.text,
            earlier_errors=tuple(line for line in carried.errors if not _seen_again(line, errors))
            if carried.structured
            else tuple(dict.fromkeys(m.group(1).rsplit(".", 1)[-1] for m in ERROR_CLASS.finditer(earlier))),
            earlier_error_lines=carried.structured,
            earlier_ids=tuple(dict.fromkeys(identifiers_in(earlier, NAMED_IDENTIFIER))),
            names=self._names,
            failed=self._failed,
            lines=self._lines,
        )


def _seen_again(line: str, errors: Sequence[ErrorEntry]) -> bool:
    """An earlier error line (perhaps clipped with "…") that this region's errors show again."""
    head = line.removesuffix("…")
    return any(error.startswith(head) for error, _ in errors)


def _match_pending(actions: list[Action], pending: list[int], name: str | None) -> int | None:
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
