"""Values an agent writes into a credential's file: `echo 'Zq8w…' > ~/.vault-token`, `printf '%s' … |
tee /run/secrets/api_key`, a heredoc into `~/.config/hub/token`, `open('/run/secrets/db_password',
'w').write('…')`, an editor tool creating `secrets/api_token`.

The mirror of `revealed_secrets`: the value stands bare in the call, with no name or prefix
beside it for a rule of `redact_secrets` to know it by, and the file it goes to says what it is.
Each one-word line written (8 to 8,192 characters, as a revealing result's) is taken as a secret
and masked wherever it appears in the region's turns (`known_secrets`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from trajectory_compressor.summarize.revealed_secrets import PATH_KEY, fenced_blocks, one_word_lines, secret_file
from trajectory_compressor.summarize.toolcalls import parse_tool_calls

_MAX_TURN_CHARS = 1 << 18  # a longer assistant turn writes a file's worth, not a credential: not read
# Words one of which a credential's file name holds (`revealed_secrets._SECRET_FILE`): an assistant
# turn with none is passed over by a few substring searches.
_HINTS = ("token", "secret", "pass", "key", "credential", "netrc", "npmrc", "pypirc", "id_", ".pem", "shadow")
_PATH = r"[\"']?(?P<path>[^\s\"'|;&<>)]+)"
# `echo 'VALUE' > FILE`, `echo -n VALUE >> FILE`, `printf '%s\n' VALUE | sudo tee -a FILE`.
_ECHO = re.compile(
    r"(?:^|[\s;&|(`])(?:echo|printf)(?:\s+-\w+)*(?:\s+(?P<f>['\"])%s(?:\\n)?(?P=f))?"
    r"\s+(?P<q>['\"]?)(?P<value>[^\s'\"|;&<>]+)(?P=q)\s*(?:\|\s*(?:sudo\s+)?tee(?:\s+-a)?|>{1,2})\s*" + _PATH
)
# `cat > FILE <<'EOF'` (or `cat <<EOF > FILE`, `tee FILE <<EOF`), its body, `EOF`.
_HEREDOC = re.compile(
    r"(?:cat\s*>{1,2}|(?:sudo\s+)?tee(?:\s+-a)?)\s*" + _PATH + r"[\"']?\s*<<-?\s*[\"']?(?P<tag>\w+)[\"']?[^\n]*\n"
    r"(?P<body>[^\n]{1,8192}(?:\n[^\n]{0,8192}){0,7}?)\n\s*(?P=tag)\b"
    r"|cat\s*<<-?\s*[\"']?(?P<tag2>\w+)[\"']?\s*>{1,2}\s*[\"']?(?P<path2>[^\s\"'|;&<>)]+)[^\n]*\n"
    r"(?P<body2>[^\n]{1,8192}(?:\n[^\n]{0,8192}){0,7}?)\n\s*(?P=tag2)\b"
)
# `open('FILE', 'w').write('VALUE')`, `with open("FILE", "w") as f: f.write("VALUE")`,
# `Path('FILE').write_text('VALUE')`.
_SCRIPT = re.compile(
    r"(?:open\(\s*r?[\"'](?P<path>[^\"'\n]+)[\"']\s*,\s*[\"'][wa]b?\+?[\"']\s*\)"
    r"(?:\s*\.write|\s+as\s+(?P<file>\w+)\s*:\s*(?P=file)\.write)"
    r"|path\(\s*r?[\"'](?P<path2>[^\"'\n]+)[\"']\s*\)\s*\.write_(?:text|bytes))"
    r"\(\s*b?[\"'](?P<value>[^\"'\n]+)[\"']",
    re.IGNORECASE,
)
# The keys an editor tool gives the text it writes under (`file_text` of `str_replace_editor create`).
_CONTENT_KEYS = frozenset(("file_text", "content", "contents", "text", "new_str", "new_string", "data", "body"))


def written_values(texts: Sequence[str], roles: Sequence[str]) -> Iterator[str]:
    """The one-word lines the assistant turns of `texts` (with their `roles`) write into a
    credential's file, by a call or by a ```bash block its harness runs."""
    for text, role in zip(texts, roles, strict=True):
        if role != "gpt" or len(text) > _MAX_TURN_CHARS:
            continue
        lowered = text.lower()
        if not any(hint in lowered for hint in _HINTS):
            continue
        calls = parse_tool_calls(text)
        if calls:
            for call in calls:
                yield from _call_writes(call.arguments)
        else:
            for block in fenced_blocks(text):
                yield from _command_writes(block)


def _call_writes(arguments: Mapping[str, Any] | str) -> Iterator[str]:
    """What a call writes into a credential's file: its command's writes, or the content an
    editor tool writes to a credential's path."""
    if isinstance(arguments, str):
        yield from _command_writes(arguments)
        return
    paths = [value for key, value in arguments.items() if isinstance(value, str) and PATH_KEY.search(str(key).lower())]
    to_secret = any(secret_file(path) for path in paths)
    for key, value in arguments.items():
        if not isinstance(value, str):
            continue
        if to_secret and str(key).lower() in _CONTENT_KEYS:
            yield from one_word_lines(value)
        elif str(key).lower() not in _CONTENT_KEYS:
            yield from _command_writes(value)


def _command_writes(command: str) -> Iterator[str]:
    """The values a shell command or a script writes into a credential's file. Each pattern is
    tried only on a command holding its words (most commands write nothing), and one naming no
    credential's file (every name `secret_file` takes holds a word of `_HINTS`) is passed over."""
    lowered = command.lower()
    if not any(hint in lowered for hint in _HINTS):
        return
    if ("echo" in lowered or "printf" in lowered) and (">" in lowered or "tee" in lowered):
        for found in _ECHO.finditer(command):
            if secret_file(found.group("path")):
                yield from one_word_lines(found.group("value"))
    if "<<" in lowered:
        for found in _HEREDOC.finditer(command):
            if secret_file(found.group("path") or found.group("path2")):
                yield from one_word_lines(found.group("body") or found.group("body2"))
    if "open(" in lowered or ".write_" in lowered:
        for found in _SCRIPT.finditer(command):
            if secret_file(found.group("path") or found.group("path2")):
                yield from one_word_lines(found.group("value"))
