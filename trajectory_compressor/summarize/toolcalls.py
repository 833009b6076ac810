"""Reading the tool markup of ShareGPT agent turns into small records.

Agent trajectories carry their actions as text: `<tool_call>{json}</tool_call>` blocks inside
assistant turns and `<tool_response>...</tool_response>` blocks inside tool turns. Real data is
messy (argument JSON that does not parse, blocks cut off before their closing tag, tool turns with
no markup at all, results that are JSON objects rather than text), so every helper here accepts
anything and degrades to the raw text instead of raising. All helpers are pure functions over
strings, with their regexes compiled once, because the extractive summarizer calls them on every
turn of every compressed row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

_STRAY_TAG = re.compile(r"</?(?:tool_call|tool_response)>")
_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S)
_THINK_INNER = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S)
_NAME_FIELD = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGUMENTS_FIELD = re.compile(r'"(?:arguments|parameters)"\s*:\s*')

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

# A path-like token: split commands on shell punctuation, then keep what looks like a file.
_TOKEN_SPLIT = re.compile(r"[\s'\"`;|&<>(){}\[\]=,:]+")
_PATH_CHARS = re.compile(r"[\w.\-+@~/]+")
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)(\w+)\1[^\n]*\n.*?(?:^[ \t]*\2[ \t]*$|\Z)", re.S | re.M)
_SEGMENT_SPLIT = re.compile(r"\n|&&|\|\||;|\|")
_REDIRECT = re.compile(r"(?:^|[^<>&\d])>>?[ \t]*([^\s;|&<>()'\"]+)")
_SED_IN_PLACE = re.compile(r"\bsed\b.*?\s-i")
_TEE = re.compile(r"\btee\s+(?:-a\s+)?([^\s;|&<>()'\"]+)")
_COPY_MOVE = re.compile(r"^\s*(?:sudo\s+)?(?:cp|mv|touch|create)\s")  # create: SWE-agent's editor
_SWE_AGENT_EDIT = re.compile(r"^(edit[ \t]+\d+:\d+)[ \t]*\n(.*?)(?:^end_of_edit[ \t]*$|\Z)", re.S | re.M)
_EXTENSIONS_TEXT = (
    "py pyi pyx pxd ipynb js jsx mjs cjs ts tsx vue svelte json jsonl yaml yml toml cfg ini conf env "
    "txt md rst tex csv tsv xml html htm css scss sass less sql sh bash zsh ps1 bat c h cc cpp cxx hpp "
    "hh go rs java kt kts scala swift m mm rb php pl pm lua r jl dart ex exs erl hs ml proto graphql "
    "lock log patch diff mk cmake gradle properties tf hcl dockerfile in"
)
_FILE_EXTENSIONS = frozenset(_EXTENSIONS_TEXT.split())
_FILE_NAMES = frozenset(
    {"Makefile", "Dockerfile", "README", "LICENSE", "CHANGELOG", "Gemfile", "Rakefile", "Procfile", "Pipfile"}
)
_PATH_KEYS = frozenset(
    {
        "path",
        "file",
        "filename",
        "file_name",
        "file_path",
        "filepath",
        "target_file",
        "notebook_path",
        "old_path",
        "new_path",
        "paths",
        "files",
    }
)
_COMMAND_KEYS = frozenset({"command", "cmd", "bash", "shell", "script"})
_EDIT_COMMANDS = frozenset({"create", "str_replace", "insert", "undo_edit", "write", "overwrite", "append"})
_CONTENT_KEYS = frozenset({"file_text", "new_str", "new_content", "content", "contents", "patch", "diff"})
_EDIT_TOOLS = frozenset(
    {
        "create",
        "create_file",
        "write",
        "write_file",
        "edit",
        "edit_file",
        "insert",
        "str_replace",
        "apply_patch",
        "append_file",
        "replace_in_file",
    }
)
_SCAN_WINDOW = 50_000  # outputs longer than twice this are scanned at head and tail only
_SHORT_OUTPUT = 100  # a one-line output up to this many chars is quoted instead of measured
_MAX_JSON = 500_000  # longer results are not parsed as JSON, only measured and scanned


@dataclass(frozen=True)
class ToolCall:
    """One `<tool_call>` block: the tool's name and its arguments.

    `arguments` is a dict when the JSON parsed, otherwise the raw argument text, kept so a
    summary can still show what was attempted. `valid` says whether the block parsed cleanly.
    """

    name: str
    arguments: dict[str, Any] | str
    valid: bool = True


@dataclass(frozen=True)
class ToolResponse:
    """One result inside a tool turn; `name` and `tool_call_id` are None when the turn had no JSON."""

    name: str | None
    content: str
    tool_call_id: str | None = None


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
            size = f"{head}, {_plural(self.lines, 'line')} / {_format_chars(self.chars)}"
        if preview_chars > 0 and self.preview:
            return f"{size}: {clip(self.preview, preview_chars)}"
        return size


def parse_tool_calls(gpt_value: str) -> list[ToolCall]:
    """The tool calls in an assistant turn, in order; unparseable blocks keep their raw text."""
    if "<tool_call>" not in gpt_value:
        return []
    calls: list[ToolCall] = []
    for _, _, body in _blocks(gpt_value, "<tool_call>", "</tool_call>"):
        calls.extend(_parse_call_block(body.strip()))
    return calls


def parse_tool_responses(tool_value: str) -> list[ToolResponse]:
    """The results in a tool turn; a turn without markup is one plain-text result."""
    blocks = [body.strip() for _, _, body in _blocks(tool_value, "<tool_response>", "</tool_response>")]
    if not blocks:
        return [ToolResponse(name=None, content=tool_value.strip())]
    return [_parse_response_block(block) for block in blocks]


def strip_think(text: str) -> str:
    """`text` without its `<think>...</think>` reasoning (an unclosed block runs to the end).

    A lone `</think>` means the opening tag lived in the prompt template, so everything before
    it is reasoning too.
    """
    head, sep, tail = text.partition("</think>")
    if sep and "<think>" not in head:
        text = tail
    if "<think>" not in text:
        return text
    return _THINK_BLOCK.sub("", text)


def think_of(text: str) -> str:
    """The reasoning inside `<think>` blocks, joined; used when a turn says nothing else."""
    head, sep, _ = text.partition("</think>")
    if sep and "<think>" not in head:
        return head.strip()
    return "\n".join(m.group(1).strip() for m in _THINK_INNER.finditer(text)).strip()


def prose_of(gpt_value: str) -> str:
    """What an assistant turn says in words: no tool-call blocks, no reasoning."""
    text = strip_think(gpt_value)
    if "<tool_call>" in text:
        kept, position = [], 0
        for start, end, _ in _blocks(text, "<tool_call>", "</tool_call>"):
            kept.append(text[position:start])
            position = end
        text = "".join(kept) + text[position:]
    return _STRAY_TAG.sub("", text).strip()


def analyze_output(content: str, known: Collection[str] = ()) -> Outcome:
    """Exit code, error line, test verdict, size and first line (or JSON gist) of one tool result.

    `known` holds values the reader has already seen (the call's arguments); JSON fields equal
    to one of them are left out of the gist, so it shows what the result added.
    """
    text, elided = _clean_output(content)
    exit_code = _exit_code(content)
    data = loads(text) if text[:1] in ("{", "[") and len(text) < _MAX_JSON else None
    structured = isinstance(data, (dict, list))
    lines = text.count("\n") + 1 if text else 0
    if structured:
        return Outcome(exit_code, json_error(data), None, lines, len(text) + elided, _gist(data, known), True)
    window = text if len(text) <= 2 * _SCAN_WINDOW else _scan_window(text)
    preview = ""
    for line in text.split("\n", 50):
        if line.strip():
            preview = " ".join(line.split())
            break
    return Outcome(exit_code, _error_line(window), _test_verdict(window), lines, len(text) + elided, preview)


def outcome_of(response_content: str) -> str:
    """A short account of how a call went: "exit 1", "error: <line>", "ok, 12 lines / 3.4k chars"."""
    return analyze_output(response_content).render()


def files_in(text_or_args: str | Mapping[str, Any]) -> list[str]:
    """Plausible file paths named by a call: path-like arguments and files in shell commands.

    Only tokens that look like files (a known extension or a well-known name) count, so
    directories, globs, module names and numbers stay out of the list.
    """
    found: list[str] = []
    if isinstance(text_or_args, Mapping):
        for key, value in text_or_args.items():
            lowered = str(key).lower()
            if lowered in _PATH_KEYS:
                found.extend(normalize_path(p) for p in _path_values(value) if _plausible_path(p, require_file=False))
            elif lowered in _COMMAND_KEYS and isinstance(value, str):
                found.extend(_files_in_command(value))
    else:
        found.extend(_files_in_command(str(text_or_args)))
    return _unique(found)


def files_written_in(text_or_args: str | Mapping[str, Any], tool_name: str = "") -> list[str]:
    """The subset of `files_in` that the call creates or changes.

    Recognizes editor tools (`create`, `str_replace`, ... or a write-like tool name) and, in
    shell commands, redirections, `sed -i`, `tee`, and the destination of `cp` / `mv` / `touch`.
    """
    if isinstance(text_or_args, Mapping):
        written: list[str] = []
        paths = [
            path
            for key, value in text_or_args.items()
            if str(key).lower() in _PATH_KEYS
            for path in _path_values(value)
        ]
        command = text_or_args.get("command")
        edits = (
            tool_name.lower() in _EDIT_TOOLS
            or (isinstance(command, str) and command.lower() in _EDIT_COMMANDS)
            or any(str(key).lower() in _CONTENT_KEYS for key in text_or_args)
        )
        if edits:
            written.extend(normalize_path(p) for p in paths if _plausible_path(p, require_file=False))
        for key, value in text_or_args.items():
            if str(key).lower() in _COMMAND_KEYS and isinstance(value, str):
                written.extend(_files_written_by_command(value))
        return _unique(written)
    if tool_name.lower() in _EDIT_TOOLS:
        return files_in(text_or_args)
    return _unique(_files_written_by_command(str(text_or_args)))


def command_gist(command: str) -> str:
    """A shell command as worth showing: no leading `cd dir &&`, written text as line counts.

    Agents write whole scripts through `cat > f.py << 'EOF'` (or SWE-agent's `edit 1:5 ...
    end_of_edit`); the script's first lines say less than the commands around it, so the body
    becomes "[N lines]".
    """
    text = command.strip()
    if "<<" in text:
        text = _HEREDOC.sub(_heredoc_placeholder, text)
    if text.startswith("edit"):
        text = _SWE_AGENT_EDIT.sub(lambda m: f"{m.group(1)} [{_plural(m.group(2).count(chr(10)), 'line')}]", text)
    if text.startswith("cd ") and " && " in text[:200]:
        text = text.split(" && ", 1)[1]
    return text


def _heredoc_placeholder(match: re.Match[str]) -> str:
    body = match.group(0)
    opener, _, rest = body.partition("\n")
    return f"{opener} [{_plural(rest.count(chr(10)), 'line')}]"


def clip(text: str, limit: int) -> str:
    """`text` with whitespace squeezed to single spaces, cut to `limit` chars with an ellipsis.

    The cut backs up to a word boundary when one is near, so words are not left half-shown.
    """
    if limit <= 0:
        return ""
    # Squeezing only shortens, so a generous prefix is enough and keeps huge values cheap.
    squeezed = " ".join(text[: limit * 4 + 64].split())
    if len(squeezed) <= limit:
        return squeezed
    cut = squeezed[: max(limit - 1, 0)]
    space = cut.rfind(" ", max(len(cut) - 12, 0))
    if space > 0:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _format_chars(chars: int) -> str:
    return f"{chars} chars" if chars < 1000 else f"{chars / 1000:.1f}k chars"


def loads(text: str) -> Any:
    """Parsed JSON, or None when `text` is not JSON (orjson first; json for ints beyond 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return None


def dumps(value: Any) -> str:
    """Compact JSON text of `value`, keeping non-ASCII characters as they are."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # ints beyond 64 bits, which json.loads accepted
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _blocks(text: str, open_tag: str, close_tag: str) -> list[tuple[int, int, str]]:
    """(start, end, body) of each tagged block.

    A block ends at its closing tag, at the next opening tag, or at the end of the text: the
    last two cover blocks whose closing tag was lost when a run was cut short. Plain `find`
    rather than a lazy regex, because tool results can be tens of kilobytes long.
    """
    found: list[tuple[int, int, str]] = []
    start = text.find(open_tag)
    while start >= 0:
        body_start = start + len(open_tag)
        close = text.find(close_tag, body_start)
        following = text.find(open_tag, body_start)
        if close >= 0 and (following < 0 or close < following):
            found.append((start, close + len(close_tag), text[body_start:close]))
            start = text.find(open_tag, close + len(close_tag))
        else:
            end = following if following >= 0 else len(text)
            found.append((start, end, text[body_start:end]))
            start = following
    return found


def _parse_call_block(body: str) -> list[ToolCall]:
    data = loads(body) if body.startswith(("{", "[")) else None
    if isinstance(data, dict):
        return [_call_from_dict(data)]
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        return [_call_from_dict(item) for item in data]
    # Invalid or truncated JSON: salvage the name and the argument text.
    name_match = _NAME_FIELD.search(body)
    name = _json_string(name_match.group(1)) if name_match else "unknown"
    args_match = _ARGUMENTS_FIELD.search(body)
    raw = body[args_match.end() :] if args_match else body
    raw = raw.strip()
    if args_match and raw.endswith("}") and raw.count("{") < raw.count("}"):
        raw = raw[:-1].rstrip()  # the outer object's closing brace
    parsed = loads(raw) if raw.startswith("{") else None
    if isinstance(parsed, dict):
        return [ToolCall(name=name, arguments=parsed, valid=False)]
    return [ToolCall(name=name, arguments=raw, valid=False)]


def _call_from_dict(data: dict[str, Any]) -> ToolCall:
    function = data.get("function")
    if isinstance(function, dict):  # OpenAI shape: {"type": "function", "function": {...}}
        data = function
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters"))
    valid = True
    if arguments is None:
        arguments = {}
    elif isinstance(arguments, str):
        parsed = loads(arguments) if arguments.strip().startswith("{") else None
        if isinstance(parsed, dict):
            arguments = parsed
        else:
            valid = not arguments.strip()
            arguments = arguments if arguments.strip() else {}
    elif not isinstance(arguments, dict):
        arguments = dumps(arguments)
    return ToolCall(name=str(name) if name else "unknown", arguments=arguments, valid=valid and bool(name))


def _json_string(escaped: str) -> str:
    decoded = loads(f'"{escaped}"')
    return decoded if isinstance(decoded, str) else escaped


def _parse_response_block(body: str) -> ToolResponse:
    data = loads(body) if body.startswith("{") else None
    if isinstance(data, dict) and ("content" in data or "tool_call_id" in data):
        content = data.get("content")
        text = "" if content is None else content if isinstance(content, str) else dumps(content)
        name = data.get("name")
        call_id = data.get("tool_call_id")
        return ToolResponse(
            name=str(name) if name else None, content=text, tool_call_id=str(call_id) if call_id else None
        )
    return ToolResponse(name=None, content=body)


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
    head, tail = content[:300], content[-300:]
    for part in (head, tail) if len(content) > 300 else (content,):
        match = _RETURNCODE_TAG.search(part) or _EXIT_CODE.search(part)
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
        return f"{_plural(len(data), 'item')}, first: {first}"
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
    summaries = _PYTEST_SUMMARY.findall(text)
    if summaries:
        return str(summaries[-1]).strip()  # the final summary line wins
    ran = _UNITTEST_RAN.search(text)
    if ran:
        result = _UNITTEST_RESULT.search(text, ran.end())
        verdict = (result.group(1) + result.group(2)).strip() if result else "no verdict"
        return f"ran {ran.group(1)} tests: {verdict}"
    return None


def _path_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, list):
        return [item.strip() for item in value if isinstance(item, str)]
    return []


def _plausible_path(token: str, *, require_file: bool = True) -> bool:
    if not token or len(token) > 260 or "\n" in token or token.startswith(("-", "//")) or "://" in token:
        return False
    if not require_file:  # named by a path argument: trust it, spaces and all
        return True
    if "." not in token:  # the common case for command words, decided cheaply
        return token.rsplit("/", 1)[-1] in _FILE_NAMES
    if not _PATH_CHARS.fullmatch(token):
        return False
    base = token.rsplit("/", 1)[-1]
    if base in _FILE_NAMES:
        return True
    stem, dot, ext = base.rpartition(".")
    return bool(dot and stem and stem.strip(".") and ext.lower() in _FILE_EXTENSIONS)


def normalize_path(path: str) -> str:
    """One spelling per file: no surrounding space, no "./" prefix, no sentence-ending dot."""
    path = path.strip().rstrip(".")
    while path.startswith("./"):
        path = path[2:]
    return path


@lru_cache(maxsize=64)
def _without_heredocs(command: str) -> str:
    """The command with here-document bodies removed: they are file contents, not file names.

    Cached because `files_in` and `files_written_in` are asked about the same command in turn.
    """
    return _HEREDOC.sub("<<HEREDOC\n", command) if "<<" in command else command


def _files_in_command(command: str) -> list[str]:
    text = _without_heredocs(command)
    return [normalize_path(tok) for tok in _TOKEN_SPLIT.split(text) if _plausible_path(tok.rstrip("."))]


def _files_written_by_command(command: str) -> list[str]:
    text = _without_heredocs(command)
    written: list[str] = []
    for segment in _SEGMENT_SPLIT.split(text):
        if ">" in segment:
            written.extend(m.group(1) for m in _REDIRECT.finditer(segment))
        if "tee" in segment:
            written.extend(m.group(1) for m in _TEE.finditer(segment))
        if "sed" in segment and _SED_IN_PLACE.search(segment):
            written.extend(tok for tok in _TOKEN_SPLIT.split(segment) if _plausible_path(tok))
        elif _COPY_MOVE.match(segment):
            tokens = [tok for tok in segment.split() if not tok.startswith("-")]
            if tokens:
                written.append(tokens[-1])
    return [normalize_path(p) for p in written if not p.startswith("/dev/") and _plausible_path(p.rstrip("."))]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))
