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
_HINTS = ("token", "secret", "pass", "pw", "key", "cred", "vault", "netrc", "npmrc", "pypirc", "id_", ".pem", "shadow")
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
    yield from _words_written(command, lowered)


# Where else a command sends what it writes: a redirection (`> F`, `1>> F`), `tee [-a|--append] F`,
# `dd of=F`, `sed -i … F`, `install … /dev/stdin F`, Node's `writeFileSync('F'`, `open('F', mode='w')`,
# `Path('F').expanduser().write_text(`.
_TARGET = r"[\"']?([^\s\"'|;&<>)]+)"
_EDITED = _TARGET + r"[\"']?\s*(?:$|[\n|;&<])"  # the command's last word
# Each pattern starts with its literal, and is tried only on a command holding it: one pattern of
# them all, tried at every position of every command, cost 25 times as much on the public runs.
_WRITE_TARGETS = (
    (">", re.compile(r">{1,2}\s*" + _TARGET)),
    ("tee", re.compile(r"tee(?:\s+-{1,2}[\w-]+)*\s*" + _TARGET)),
    ("of=", re.compile(r"of=" + _TARGET)),
    ("sed", re.compile(r"sed\s+-i[^\n|;&]*?\s" + _EDITED)),
    ("install", re.compile(r"install\b[^\n|;&]*?\s" + _EDITED)),
    ("writefilesync", re.compile(r"writefilesync\(\s*[\"'`]([^\"'`\n]+)")),
    ("open(", re.compile(r"open\(\s*r?[\"']([^\"'\n]+)[\"']\s*,\s*(?:mode\s*=\s*)?[\"'][wa]")),
    ("path(", re.compile(r"path\(\s*r?[\"']([^\"'\n]+)[\"']\)(?:\.\w+\(\))*\.write_(?:text|bytes)")),
)
# A command storing a credential in a secret manager, or setting a password, from its words.
_STORES = re.compile(
    r"\b(?:keyring\s+set|(?:go)?pass\s+insert|secret-tool\s+store|gh\s+secret\s+set|docker\s+secret\s+create"
    r"|kubectl\s+create\s+secret|vault\s+kv\s+put|aws\s+secretsmanager\s+(?:create|put)-secret|htpasswd|chpasswd)\b"
)
_WORD = re.compile(r"[^\s\"'`=,;:|&()<>{}\[\]\\]+")
_SED_REPLACEMENT = re.compile(r"\bs([/|#])[^\n]*?\1(?P<new>[^\n]*?)\1")


def _words_written(command: str, lowered: str) -> Iterator[str]:
    """The words of a command writing into a credential's file or store in a way the patterns above
    do not read (`install -m 600 /dev/stdin F <<< '…'`, `… | dd of=F`, `sed -i 's/…/…/' F`, `echo …
    | pass insert x`) that could be its credential: of 8 characters or more, letters and digits
    both, not a path, a URL or a date. The command gives no place for the value, so its words are
    all taken; those of a file name or a flag are not."""
    targets = [
        path
        for literal, pattern in _WRITE_TARGETS
        if literal in lowered
        for path in pattern.findall(lowered)
        if secret_file(path)
    ]
    if not targets and not _STORES.search(lowered):
        return
    words = {*_WORD.findall(command)}
    for found in _SED_REPLACEMENT.finditer(command):
        words.update(_WORD.findall(found.group("new").replace("/", " ")))
    for word in words:
        word = word.strip(".!?")
        if (
            any(char.isdigit() for char in word)
            and any(char.isalpha() for char in word)
            and not word.startswith(("-", "~"))
            and "/" not in word  # a path (a `sed` script's replacement is read apart)
            and not secret_file(word)
            and not any(word.lower() in target for target in targets)
            and one_word_lines(word)  # 8 characters or more, no path, URL or date
        ):
            yield word
