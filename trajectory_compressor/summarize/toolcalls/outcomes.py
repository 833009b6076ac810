"""What a tool result says about how its call went: exit code, error line, test verdict, size.

Harnesses wrap a command's output in their own tags (`<returncode>`, `<output>`, SWE-agent's
trailer) and results are often JSON rather than text; `analyze_output` looks through both to
the few facts a summary can print (`Outcome.render`). Long outputs are scanned at head and
tail only, because the extractive summarizer asks this of every tool result of every row.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from trajectory_compressor.summarize.toolcalls.memo import TextMemo
from trajectory_compressor.summarize.toolcalls.text import clip, dumps, loads, plural

# Output wrappers that harnesses put around a command's output; they are not output.
_RETURNCODE_TAG = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_WARNING_BLOCK = re.compile(r"<warning>.*?</warning>", re.S)
_ELIDED_CHARS = re.compile(r"<elided_chars>\s*(\d+)\s*</elided_chars>")
_WRAPPER_TAG = re.compile(r"</?(?:output|output_head|output_tail|stdout|stderr)>")
_SWE_AGENT_TRAILER = re.compile(r"\(Open file: [^\n]*\)\s*\(Current directory: [^\n]*\)\s*(?:bash-\$)?\s*\Z")
_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?(?: with)?[ _](?:status|code)|exitcode|return[ _]?code)[\"']?\s*(?:[:=]|is)?\s*(-?\d+)",
    re.I,
)
_TRACEBACK = "Traceback (most recent call last)"
_ERROR_LINE = re.compile(
    # Flush-left only: indented lines are mostly source code and docstrings being displayed.
    r"^(?:"
    r"(?:[\w.]+\.)?\w*(?:Error|Exception)(?::[ \t]+\S.*)"  # ValueError: bad value
    r"|(?:error|Error|ERROR|fatal|FATAL|panic)[ \t]*[:!][ \t]*\S.*"  # error: ..., Error: ...
    r"|(?:FAILED|FAIL:|ERROR)[ \t]+\S.*"  # pytest and unittest failure lines
    r"|E[ \t]{2,}\S.*"  # pytest assertion detail lines
    r"|\S*python[\d.]*:[ \t]+(?:No module named|can't open file)[ \t]+\S.*"  # `python -m pytest`, no pytest
    r")[ \t]*$",
    re.M,
)
# Shell failures that can sit anywhere in a line ("ls: cannot access x: No such file or directory").
_ERROR_PHRASES = ("No such file or directory", "command not found", "Permission denied", "Segmentation fault")
_PYTEST_SUMMARY = re.compile(
    r"^=+ (.*?\b(?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|no tests ran)\b.*?) =+[ \t]*$",
    re.M,
)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s", re.M)
_UNITTEST_RESULT = re.compile(r"^(OK|FAILED)\b(.*)$", re.M)
_SCAN_WINDOW = 50_000  # outputs longer than twice this are scanned at head and tail only
_SHORT_OUTPUT = 100  # a one-line output up to this many chars is quoted instead of measured
_MAX_JSON = 500_000  # longer results are not parsed as JSON, only measured and scanned


@dataclass(frozen=True)
class Outcome:
    """What a tool result says about how the call went, in a few fields a summary can print."""

    exit_code: int | None
    error: str | None  # the most telling error line, if any
    tests: str | None  # a test-runner verdict ("2 failed, 3 passed in 0.5s"), if any
    lines: int
    chars: int
    preview: str  # the first non-empty line of output, or the gist of a JSON result
    structured: bool = False  # the output is JSON: its line count says nothing

    @property
    def failed(self) -> bool:
        return (self.exit_code is not None and self.exit_code != 0) or self.error is not None

    def render(self, preview_chars: int = 0) -> str:
        """One short phrase: "exit 1: ValueError: x", "ok: 255.0", "ok, 12 lines / 3.4k chars"."""
        if self.exit_code is not None and self.exit_code != 0:
            head = f"exit {self.exit_code}"
        elif self.error is not None:
            head = "exit 0, error" if self.exit_code == 0 else "error"
        else:
            head = "ok"
        if self.error is not None:
            if head == "error" and self.error[:6].lower() == "error:":
                return "error: " + self.error[6:].strip()  # not "error: Error: ..."
            return f"{head}: {self.error}"
        if self.tests is not None:
            return f"{head}: {self.tests}"
        if self.chars == 0:
            return f"{head}, no output"
        if self.lines == 1 and self.chars <= _SHORT_OUTPUT:
            return f"{head}: {self.preview}"
        if self.structured:
            size = f"{head}, JSON {_format_chars(self.chars)}"
        else:
            size = f"{head}, {plural(self.lines, 'line')} / {_format_chars(self.chars)}"
        if preview_chars > 0 and self.preview:
            return f"{size}: {clip(self.preview, preview_chars)}"
        return size


def analyze_output(content: str, known: Collection[str] = ()) -> Outcome:
    """Exit code, error line, test verdict, size and first line (or JSON gist) of one tool result.

    `known` holds values the reader has already seen (the call's arguments); JSON fields equal
    to one of them are left out of the gist, so it shows what the result added. What does not
    depend on `known` is read once per result (`_FACTS`): the digest and the item fidelity both
    ask it of every result of a summarized region.
    """
    facts = _FACTS(content)
    if facts.data is None:
        return facts.outcome
    return replace(facts.outcome, preview=_gist(facts.data, known))


@dataclass(frozen=True)
class _Facts:
    """A result's outcome, and its parsed JSON (None for text) from which the gist is made."""

    outcome: Outcome
    data: dict[str, Any] | list[Any] | None


def _read_facts(content: str) -> _Facts:
    text, elided = _clean_output(content)
    exit_code = _exit_code(content)
    data = loads(text) if text[:1] in ("{", "[") and len(text) < _MAX_JSON else None
    lines = text.count("\n") + 1 if text else 0
    if isinstance(data, (dict, list)):
        return _Facts(Outcome(exit_code, json_error(data), None, lines, len(text) + elided, "", True), data)
    window = text if len(text) <= 2 * _SCAN_WINDOW else _scan_window(text)
    preview = ""
    for line in text.split("\n", 50):
        if line.strip():
            preview = " ".join(line.split())
            break
    outcome = Outcome(exit_code, _error_line(window), _test_verdict(window), lines, len(text) + elided, preview)
    return _Facts(outcome, None)


_FACTS = TextMemo(_read_facts)


def outcome_of(response_content: str) -> str:
    """A short account of how a call went: "exit 1", "error: <line>", "ok, 12 lines / 3.4k chars"."""
    return analyze_output(response_content).render()


def _format_chars(chars: int) -> str:
    return f"{chars} chars" if chars < 1000 else f"{chars / 1000:.1f}k chars"


def _scan_window(text: str) -> str:
    if len(text) <= 2 * _SCAN_WINDOW:
        return text
    return text[:_SCAN_WINDOW] + "\n" + text[-_SCAN_WINDOW:]


def _clean_output(content: str) -> tuple[str, int]:
    """The output proper, without harness wrappers, and the count of chars the harness elided."""
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    elided = 0
    if "<" in text:
        text = _RETURNCODE_TAG.sub("", text, count=1)
        if "<warning>" in text:
            text = _WARNING_BLOCK.sub("", text)
        if "<elided_chars>" in text:
            elided = sum(int(m.group(1)) for m in _ELIDED_CHARS.finditer(text))
            text = _ELIDED_CHARS.sub("\n", text)
        text = _WRAPPER_TAG.sub("", text)
    if "(Current directory:" in text:
        text = _SWE_AGENT_TRAILER.sub("", text)
    return text.strip(), elided


def _exit_code(content: str) -> int | None:
    # Harnesses put the code at the very start or end; searching only there keeps source
    # code that mentions `returncode` from passing for a result.
    # Each pattern is tried only where its words occur (`in` is far cheaper than a regex): the
    # tag's literal, and "exit" or "return" in ASCII text lowered (other text: the regex itself,
    # whose case-insensitive match knows letters `lower` would not map to these).
    head, tail = content[:300], content[-300:]
    for part in (head, tail) if len(content) > 300 else (content,):
        match = _RETURNCODE_TAG.search(part) if "<returncode>" in part else None
        if match is None and (not part.isascii() or "exit" in (lowered := part.lower()) or "return" in lowered):
            match = _EXIT_CODE.search(part)
        if match:
            return int(match.group(1))
    return None


def json_error(data: Any) -> str | None:
    """The message of a JSON result's non-empty `error` field, as APIs report failures."""
    if not isinstance(data, dict):
        return None
    for key in ("error", "Error", "err", "error_message"):
        value = data.get(key)
        if value and isinstance(value, (str, dict)):
            return "error: " + clip(value if isinstance(value, str) else dumps(value), 300)
    return None


def _gist(data: Any, known: Collection[str] = (), limit: int = 300) -> str:
    """The scalar fields of a JSON result ("id=EHGLP3, origin=PHX, flights=[2]"), or its size."""
    if isinstance(data, list):
        if not data:
            return "[]"
        first = _gist(data[0], known, limit) if isinstance(data[0], (dict, list)) else clip(str(data[0]), 60)
        return f"{plural(len(data), 'item')}, first: {first}"
    if not isinstance(data, dict):
        return clip(str(data), limit)
    parts: list[str] = []
    size = 0
    for key, value in data.items():
        if isinstance(value, dict):
            shown = "{…}"
        elif isinstance(value, list):
            shown = f"[{len(value)}]"
        elif value is None or value == "" or str(value) in known:
            continue  # empty, or already shown in the call's arguments
        else:
            shown = clip(str(value), 60)
        parts.append(f"{key}={shown}")
        size += len(parts[-1]) + 2
        if size > limit:
            break
    return ", ".join(parts)


def _error_line(text: str) -> str | None:
    index = text.rfind(_TRACEBACK)
    if index >= 0:
        # Frames are indented; the exception is the first flush-left line after them.
        for line in text[index:].split("\n")[1:]:
            if line.strip() and not line[0].isspace() and not line.startswith("During handling"):
                return " ".join(line.split())
    match = _ERROR_LINE.search(text)
    found = match.start() if match else len(text)
    for phrase in _ERROR_PHRASES:  # str.find is far cheaper than a regex that allows any prefix
        index = text.find(phrase, 0, found)
        if index >= 0:
            found = text.rfind("\n", 0, index) + 1
            match = None
    if found == len(text):
        return None
    if match is None:
        end = text.find("\n", found)
        return " ".join(text[found : end if end >= 0 else len(text)].split())
    line = " ".join(match.group(0).split())
    return line[1:].strip() if line.startswith("E ") else line


def _test_verdict(text: str) -> str | None:
    # Each pattern is tried only where it can match: a pytest summary is a line that starts
    # with "=", unittest's count one that starts with "Ran ".
    summaries = _PYTEST_SUMMARY.findall(text) if text.startswith("=") or "\n=" in text else None
    if summaries:
        return str(summaries[-1]).strip()  # the final summary line wins
    ran = _UNITTEST_RAN.search(text) if "Ran " in text else None
    if ran:
        result = _UNITTEST_RESULT.search(text, ran.end())
        verdict = (result.group(1) + result.group(2)).strip() if result else "no verdict"
        return f"ran {ran.group(1)} tests: {verdict}"
    return None
