"""One pass over a region: what the extractive summarizer knows of it, before any rendering.

Calls are paired with their results, and the user requests, files, errors and the assistant's
last words collected, each piece redacted as it is taken (before any cut). Every rendering of
the summary, at any level of detail, reads this digest and nothing else, so the region is
parsed once however many renderings the fitting tries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trajectory_compressor.summarize.extractive.earlier import read_earlier
from trajectory_compressor.summarize.fidelity.salient import (
    ERROR_CLASS,
    NAMED_IDENTIFIER,
    identifiers_in,
    paths_in_output,
)
from trajectory_compressor.summarize.fidelity.score import unique_tails
from trajectory_compressor.summarize.toolcalls import (
    Outcome,
    analyze_output,
    files_in,
    files_written_in,
    parse_tool_calls,
    parse_tool_responses,
    prose_of,
    think_of,
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


@dataclass(frozen=True)
class Digest:
    """Everything a rendering needs, extracted from the region in one pass."""

    turns: int
    roles: tuple[tuple[str, int], ...]
    requests: tuple[str, ...]
    actions: tuple[Action, ...]
    files: tuple[tuple[str, bool], ...]  # (shortest unambiguous name, written), written first, then first mention
    errors: tuple[tuple[str, tuple[int, ...]], ...]  # (error line, 1-based action numbers)
    note: str
    earlier: str = ""  # the summary of an earlier compaction this one updates (redacted)
    earlier_errors: tuple[str, ...] = ()  # its error lines (ours) or classes (other text), kept in the Errors list
    earlier_error_lines: bool = False  # `earlier_errors` are whole lines, shown one per line
    earlier_ids: tuple[str, ...] = ()  # its identifiers (ids, hashes, versions, URLs), kept too


def unchanged(text: str) -> str:
    return text


def digest_region(turns: Sequence[Turn], redact: Callable[[str], str] = unchanged, earlier: str = "") -> Digest:
    """One pass over the region: pair calls with results, collect requests, files, errors, note.

    `redact` is applied to each piece of text as it is taken from the region, whole: tool-call
    arguments after JSON decoding too (a secret written `\\"pa55\\"` in the raw JSON is only
    recognisable decoded), and before any clipping. `earlier` is the summary of an earlier
    compaction that this one updates: its files and identifiers join the lists, and, when this
    summarizer wrote it, its user requests, error lines and last note too (`earlier.py`); from
    any other text, its error classes.
    """
    roles: Counter[str] = Counter()
    requests: list[str] = []
    actions: list[Action] = []
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
                actions.append(Action(call.name, call.arguments, None))
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
                    actions.append(Action(response.name or "tool", None, analyze_output(response.content)))
                else:
                    made = actions[slot]
                    outcome = analyze_output(response.content, _scalar_values(made.arguments))
                    actions[slot] = Action(made.name, made.arguments, outcome)
    earlier = redact(earlier.strip())
    carried = read_earlier(earlier)
    requests[:0] = carried.requests
    note = note or carried.note
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
    return Digest(
        turns=len(turns),
        roles=tuple((role, roles[role]) for role in _ordered_roles(roles)),
        requests=tuple(requests),
        actions=tuple(actions),
        files=tuple(ordered_files),
        errors=tuple((line, tuple(numbers)) for line, numbers in errors.items()),
        note=note,
        earlier=carried.text,
        earlier_errors=tuple(line for line in carried.errors if not _seen_again(line, errors))
        if carried.structured
        else tuple(dict.fromkeys(m.group(1).rsplit(".", 1)[-1] for m in ERROR_CLASS.finditer(earlier))),
        earlier_error_lines=carried.structured,
        earlier_ids=tuple(dict.fromkeys(identifiers_in(earlier, NAMED_IDENTIFIER))),
    )


def _seen_again(line: str, errors: dict[str, list[int]]) -> bool:
    """An earlier error line (perhaps clipped with "…") that this region's errors show again."""
    head = line.removesuffix("…")
    return any(error.startswith(head) for error in errors)


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
