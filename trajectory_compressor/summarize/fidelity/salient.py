"""The salient items of a summarized region, by kind: what a faithful summary keeps.

Four kinds, each defined so that anyone can check a summary against it by eye:

* **tools**: the distinct names of the tools called in the region (`<tool_call>` blocks).
* **paths**: the distinct file paths the region acts on: file-like arguments of its calls (path
  arguments, files named in shell commands) and, in its tool results, the file an editor
  opened (`[File: x.py ...]`) and the innermost frame of a traceback (`File "x.py", line 3`).
  Listings (`find`, `ls`, `grep -l`) are files seen, not acted on, and do not count.
* **errors**: for each tool result that failed, its most telling error line (the one the
  extractive summarizer shows), reduced to the error class when it names one (`ValueError`,
  `ModuleNotFoundError`, `django.core.exceptions.AppRegistryNotReady: ...` gives
  `AppRegistryNotReady`), else the first `ERROR_HEAD_CHARS` characters of the line.
* **identifiers**: ids, hashes, URLs, versions, dates and numbers stated by the user (human
  turns), given as tool-call arguments other than shell commands, or returned in structured
  (JSON) tool results and error lines: tokens mixing letters and digits (`EHGLP3`,
  `mia_li_3668`), hex hashes, URLs, dotted versions and decimals, ISO dates, and integers of
  three digits or more.

No credential is an item: a summary must never state one (every summarizer masks them), so the
region is read as the summarizers read it, masked (`redact_secrets`, remembered: the summarizer
masked the same texts just before): an assistant turn whole, before its calls are taken out of
it (a value is a credential by the key it is given to), and each result's content once decoded.

Pure functions over strings; the parsers are the extractive summarizer's own, so a call, a
result and an error line mean the same thing in both places.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.summarize.huge_turns import elide_huge_turns
from trajectory_compressor.summarize.masking import masked_arguments, redact_remembered
from trajectory_compressor.summarize.toolcalls import (
    analyze_output,
    files_in,
    json_error,
    loads,
    normalize_path,
    parse_tool_calls,
    parse_tool_responses,
)
from trajectory_compressor.types import Turn

KINDS = ("tools", "paths", "errors", "identifiers")
ERROR_HEAD_CHARS = 48
_PATHS_PER_RESULT = 10
_SCALARS_PER_RESULT = 200
_SCAN_CHARS = 20_000  # of a human turn or an argument: ids sit near the start of what is said
_MAX_JSON = 500_000  # as the extractive summarizer: longer results are not parsed
_COMMAND_KEYS = frozenset({"command", "cmd", "bash", "shell", "script", "code"})

_URL = r"https?://[^\s\"'<>()\[\]{}`\\…]+[^\s\"'<>()\[\]{}`\\.,;:!?…]"
# Each of these starts at a word boundary (`\b`, written once below) with a word character.
_DATE = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"
_HEX_HASH = r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b"
_VERSION = r"v?\d+(?:\.\d+)+\b"
# What grep -n / -C glues after a line number at the left margin: `-`, then one word with no
# other `-` (`133-def`, `12-CONSTANT_X`; not `2024-05-14` nor `12345678-abcd-4ef0`).
GLUED_TO_LINE_NUMBER = r"-[A-Za-z_][A-Za-z0-9_./]*(?![A-Za-z0-9_./-])"
# A sed address and its command (`1150p`, `245d`); `d` is a hex digit, so only after five digits
# at most: a hash (seven or more) keeps its last `d`.
SED_ADDRESS = r"[0-9]+p|[0-9]{1,5}d"
# A mixed id is never a line number grep -n / -C glued to code (`133-def`: its number is one, as
# a number) nor a sed address (`1150p`, `245d`), as anchors read them (`anchor_tokens.py`).
_MIXED_ID = (
    rf"(?![0-9]+{GLUED_TO_LINE_NUMBER}|(?:{SED_ADDRESS})\b)"
    r"(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z0-9][\w-]{3,}[A-Za-z0-9]\b"
)
# An email, whole: its domain ends in a top-level name of letters, so `pkg@1.2.3`, `root@web01:/srv`
# and `@property` are none. One item here (`mia.li3818@example.com`, not `li3818`), and one anchor
# token (`anchor_tokens.py` reads the same shape).
EMAIL = r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,}(?![A-Za-z0-9_@+-]|\.[A-Za-z0-9_])"
_EMAIL = r"(?<![\w.+-])" + EMAIL  # at an item's start: the alternation is tried at every position
_AT_A_WORD = (_DATE, _HEX_HASH, _VERSION, _MIXED_ID)
_NUMBER = r"(?<![\w.])\d{3,}(?![\w.])"


def _identifier_pattern(*, numbers: bool, emails: bool = False) -> re.Pattern[str]:
    r"""A URL, else (`emails`) an email, else at a word boundary a date, hash, version or mixed id,
    else (`numbers`) a plain number: most specific first, so a URL, an email or a date is one
    item, not the numbers inside it.

    The alternation `\bDATE|\bHASH|...` with the boundary and its word character checked once
    (`\b(?=\w)(?:DATE|HASH|...)`): the same matches, in the same order of preference, found
    1.8x as fast (the regex engine tries every position of every text a summary is judged on).
    The email's alternative reads a word up to its `@` at every word start, so it is tried only
    in a text holding an `@` (`identifiers_in`).
    """
    at_a_word = r"\b(?=\w)(?:" + "|".join(_AT_A_WORD) + ")"
    return re.compile("|".join((_URL, *((_EMAIL,) if emails else ()), at_a_word, *((_NUMBER,) if numbers else ()))))


IDENTIFIER = _identifier_pattern(numbers=True)
# The same without plain integers: for judging a summary's own items (counts are its words).
NAMED_IDENTIFIER = _identifier_pattern(numbers=False)
# Each of them with emails, for a text holding an `@`.
_WITH_EMAILS = {
    IDENTIFIER: _identifier_pattern(numbers=True, emails=True),
    NAMED_IDENTIFIER: _identifier_pattern(numbers=False, emails=True),
}
ERROR_CLASS = re.compile(r"\b((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning))\b")

_DECIMAL = re.compile(r"\d")  # Unicode decimal digits: some of what `str.isdigit` holds for


def has_digit(text: str) -> bool:
    """Whether a character of `text` is a digit (`str.isdigit`: decimal digits, and superscripts
    and the like), in C: a decimal digit by the regex, or the ASCII text has none, or each
    character asked."""
    return _DECIMAL.search(text) is not None or (not text.isascii() and any(map(str.isdigit, text)))


_EDITOR_HEADER = re.compile(r"^\[File: ([^\s\]]+)", re.M)
_TRACEBACK_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+', re.M)
_LEADING_CLASS = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Z]\w*):")


@dataclass(frozen=True)
class SalientItems:
    """The region's items of each kind, distinct, in order of first appearance."""

    tools: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()

    def of(self, kind: str) -> tuple[str, ...]:
        return tuple(getattr(self, kind))

    @property
    def total(self) -> int:
        return sum(len(self.of(kind)) for kind in KINDS)


def salient_items(turns: Sequence[Turn]) -> SalientItems:
    """Everything a summary of `turns` should keep, by kind (see the module docstring); a huge
    turn is read by its head and tail (`huge_turns`)."""
    return GrowingItems().extend(turns).items()


class GrowingItems:
    """The salient items of a region that grows at its end: each turn read once (a row's context
    windows each summarize the region before their cut, which only grows)."""

    def __init__(self) -> None:
        self._tools: dict[str, None] = {}
        self._paths: dict[str, None] = {}
        self._errors: dict[str, None] = {}
        self._identifiers: dict[str, None] = {}

    def extend(self, turns: Iterable[Turn]) -> GrowingItems:
        tools, paths, errors, identifiers = self._tools, self._paths, self._errors, self._identifiers
        for turn in elide_huge_turns(list(turns)):
            value = turn.value if isinstance(turn.value, str) else str(turn.value)
            if turn.role == "human":
                identifiers.update(dict.fromkeys(identifiers_in(redact_remembered(value)[:_SCAN_CHARS])))
            elif turn.role == "gpt":
                for call in parse_tool_calls(redact_remembered(value)):
                    arguments = masked_arguments(call.arguments, redact_remembered)
                    tools.setdefault(call.name)
                    paths.update(dict.fromkeys(files_in(arguments)))
                    identifiers.update(dict.fromkeys(_argument_identifiers(arguments)))
            elif turn.role == "tool":
                for response in parse_tool_responses(value):
                    content = redact_remembered(response.content)
                    paths.update(dict.fromkeys(paths_in_output(content)))
                    data = _structured(content)  # parsed once: JSON results are common and long
                    if data is not None:
                        error = json_error(data)
                        identifiers.update(dict.fromkeys(_result_identifiers(data)))
                    else:
                        error = analyze_output(content).error
                    if error:
                        errors.setdefault(error_key(error))
                        identifiers.update(dict.fromkeys(identifiers_in(error)))
        return self

    def items(self) -> SalientItems:
        return SalientItems(tuple(self._tools), tuple(self._paths), tuple(self._errors), tuple(self._identifiers))


def error_key(line: str) -> str:
    """What a summary must say of an error line: its class when it names one, else its start."""
    leading = _LEADING_CLASS.match(line)
    if leading:
        return leading.group(1)
    match = ERROR_CLASS.search(line)
    if match:
        return match.group(1).rsplit(".", 1)[-1]
    squeezed = " ".join(line.split())
    return squeezed[:ERROR_HEAD_CHARS].rstrip()


def identifiers_in(text: str, pattern: re.Pattern[str] = IDENTIFIER) -> list[str]:
    """The identifier-like tokens of `text`, distinct, in order."""
    if "@" in text:
        pattern = _WITH_EMAILS.get(pattern, pattern)
    elif "://" not in text and not has_digit(text):
        return []  # the common case for prose, decided without the identifier regex (each kind holds a digit)
    if pattern.groups:
        return list(dict.fromkeys(match.group(0) for match in pattern.finditer(text)))
    return list(dict.fromkeys(pattern.findall(text)))  # no groups: `findall` gives each match, in C


def identifiers_in_each(texts: Iterable[str]) -> list[str]:
    """The identifiers of each of `texts` (its first `_SCAN_CHARS`), distinct, in order: those of
    the texts joined by line breaks, read in one pass (a JSON result has up to 200 scalars). No
    identifier spans a line break, and a line break bounds words and numbers as an end does."""
    return identifiers_in("\n".join(text[:_SCAN_CHARS] for text in texts))


def paths_in_output(content: str) -> list[str]:
    """Paths a tool result acted on: the file an editor opened, the innermost traceback frame."""
    found: list[str] = []
    if "[File: " in content:
        found.extend(m.group(1) for m in _EDITOR_HEADER.finditer(content[:_SCAN_CHARS]))
    frames = _TRACEBACK_FRAME.findall(content[-_SCAN_CHARS:]) if 'File "' in content else []
    if frames:
        found.append(frames[-1])
    normalized = [normalize_path(path) for path in found if "<" not in path]
    return list(dict.fromkeys(path for path in normalized if path))[:_PATHS_PER_RESULT]


def _argument_identifiers(arguments: dict[str, Any] | str) -> list[str]:
    if isinstance(arguments, str):
        return identifiers_in(arguments[:_SCAN_CHARS])
    # Code and shell are left out: their numbers are line numbers and flags, not facts.
    kept = (value for key, value in arguments.items() if str(key).lower() not in _COMMAND_KEYS)
    return identifiers_in_each(scalar for value in kept for scalar in _scalars(value, _SCALARS_PER_RESULT))


def _structured(content: str) -> dict[str, Any] | list[Any] | None:
    """A JSON result, decoded, or None (as the extractive summarizer decides what is JSON)."""
    text = content.strip()
    if text[:1] not in ("{", "[") or len(text) >= _MAX_JSON:
        return None
    data = loads(text)
    return data if isinstance(data, (dict, list)) else None


def _result_identifiers(data: Any) -> list[str]:
    return identifiers_in_each(_scalars(data, _SCALARS_PER_RESULT))


def _scalars(value: Any, limit: int) -> Iterator[str]:
    """Up to `limit` scalar values of decoded JSON, depth first, as text."""
    stack = [value]
    produced = 0
    while stack and produced < limit:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, bool) or item is None:
            continue
        else:
            produced += 1
            yield str(item)
