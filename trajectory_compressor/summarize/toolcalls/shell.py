"""Shell commands and call arguments: the files they name or write, and a command worth showing.

Heuristics over text, not a shell parser: only tokens that look like files (a known extension
or a well-known name) count, here-document bodies are file contents rather than names, and
editor tools (`create`, `str_replace`...) write the paths they are given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from trajectory_compressor.summarize.toolcalls.memo import TextMemo
from trajectory_compressor.summarize.toolcalls.text import plural

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
_MAYBE_FILE = re.compile("|".join([r"\.", *sorted(_FILE_NAMES)]))
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
    becomes "[N lines]". (Remembered per command: a digest shows each call at several levels.)
    """
    return _GISTS(command)


def _gist_of(command: str) -> str:
    text = command.strip()
    if "<<" in text:
        text = _HEREDOC.sub(_heredoc_placeholder, text)
    if text.startswith("edit"):
        text = _SWE_AGENT_EDIT.sub(lambda m: f"{m.group(1)} [{plural(m.group(2).count(chr(10)), 'line')}]", text)
    if text.startswith("cd ") and " && " in text[:200]:
        text = text.split(" && ", 1)[1]
    return text


_GISTS = TextMemo(_gist_of)


def _heredoc_placeholder(match: re.Match[str]) -> str:
    body = match.group(0)
    opener, _, rest = body.partition("\n")
    return f"{opener} [{plural(rest.count(chr(10)), 'line')}]"


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


def _files_in_command(command: str) -> tuple[str, ...]:
    """The files a command names (remembered per command: the digest and the item fidelity both
    ask it of every call of a summarized region)."""
    return _COMMAND_FILES(command)


def _read_command_files(command: str) -> tuple[str, ...]:
    text = _without_heredocs(command)
    # Only a token with a dot or a file's well-known name can be one (`_plausible_path`): the
    # others, most of a long text, are passed over in C.
    tokens = filter(_MAYBE_FILE.search, _TOKEN_SPLIT.split(text))
    return tuple(normalize_path(tok) for tok in tokens if _plausible_path(tok.rstrip(".")))


_COMMAND_FILES = TextMemo(_read_command_files)


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
    return list(dict.fromkeys(filter(None, items)))
