"""Values a region shows as the output of reading a credential: `cat /run/secrets/api_key`,
`cat ~/.vault-token`, `printenv DB_PASSWORD`, `echo $API_TOKEN`, an editor tool viewing `token.txt`.

What such a call prints is the credential itself, bare, in the tool turn after it: a line of
random characters with no name, key or prefix beside it, which no rule of `redact_secrets` can
know from that turn alone (it reads each turn by itself, and a bare hash or id has the same
shape). The call says what the line is. So the calls of a region are read with their results
(the k-th result after an assistant turn answers its k-th call; of parallel calls, the calls of
its name, `_answers_revealing`), and each one-word line of a
revealing call's result is taken as a secret and masked wherever it appears in the region's
turns (`known_secrets.masked_known`), before any summarizer or the anchor index reads them. Only one-word
lines count: a file of `KEY=value` lines is the other rules' to mask, line by line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from trajectory_compressor.summarize.printed_fields import (
    ENV_FILE,
    cuts_env_values,
    picks_config_field,
    prints_credential_field,
    reads_stored_credential,
    selects_credential_column,
)
from trajectory_compressor.summarize.redact import REDACTED
from trajectory_compressor.summarize.revealing_commands import (
    DATA_KEY_WORDS,
    SETTING_WORD,
    expands_credential,
    generates_secret,
    reads_store,
    reads_variable,
)
from trajectory_compressor.summarize.secret_rules import credential_value
from trajectory_compressor.summarize.toolcalls import parse_tool_calls, parse_tool_responses

_MIN_CHARS = 8  # a shorter line is no credential worth the risk of masking a common word everywhere
_MAX_CHARS = 8192  # nor is a longer one (a minified file, a data line); a JWT runs to a few thousand
_SPACE = re.compile(r"\s")
_CELL = re.compile(r"[|,\t\u2502]")
# The number an editor's view puts before each line (`     1\tvalue`, `cat -n`; `1→value`).
# And `redis-cli`'s numbered reply lines (`2) "value"`).
_LINE_NUMBER = re.compile(r"^\s*\d+(?:\t|\u2192|\) )")
# A turn longer than this is read block by block, and a block longer than this is not read: a
# revealing result is at most `_MAX_LINES` lines of `_MAX_CHARS`, and the row's turns are read raw
# (`revealed_values`), a huge log parsed would be copied whole (a 240 MB tool result held the run's
# memory 60 MB over its bound). A small result beside a huge one, or a read beside a call writing a
# huge file, is still read (`_small_blocks`).
_MAX_TURN_CHARS = 1 << 18
_MAX_LINES = 8  # a result of more lines is a listing, not a credential (`cat vocab_tokens.txt`): left to the rules
# A file whose name says it holds a credential (its base name, lower-cased; `/etc/passwd` does not).
_SECRET_FILE = re.compile(
    r"(?:token(?!iz)|secret|password|passwd(?=.)|api[_-]?key|apikey|credential|private[_-]?key|^\.?pgpass$|^\.netrc$"
    r"|^\.npmrc$|^\.pypirc$|^\.git-credentials$|^id_(?:rsa|dsa|ecdsa|ed25519)$|\.pem$|\.key$|^shadow$"
    # A word of the name: `signing_key`, `.anthropic_key`, `gcp-key.json`, `creds.txt`, `vault_pass.txt`, `db_pw`.
    r"|(?:^|[_.-])(?:key|creds?|pass(?:phrase)?|pw)(?:[_.-]|$))"
)
# A folder of credentials, whatever its files are named (`/run/secrets/stripe`, `~/.secrets/db`).
_SECRETS_FOLDER = re.compile(r"(?:^|/)\.?(?:secrets?|credentials)/")
# An environment variable whose name says it holds a credential.
_SECRET_NAME = re.compile(r"(?:pass(?:word|wd)?|pwd|secret|token|api_?key|apikey|access_?key|private_?key|credential)")
_READER = r"(?:sudo\s+)?(?:cat|head|tail|less|more|bat|batcat|type|get-content|gc|xxd|strings|base64)"
# `cat FILE`, `head -n 1 FILE`, `cat < FILE`, `bash -c 'cat FILE'`: the first file after a reader and its flags;
# `open('FILE')`, `Path("FILE").read_text()` in a script.
_READS_FILE = re.compile(
    r"(?:^|[\s;&|(`'\"])" + _READER + r"(?:\s+-{1,2}[\w=-]+(?:\s+\d+)?)*\s+(?:<\s*)?[\"']?(?P<path>[^\s\"'|;&<>)]+)"
    r"|(?:open|path)\(\s*r?[\"'](?P<opened>[^\"'\n]+)"
    # The shell's `read -r TOKEN < FILE` (then `echo $TOKEN`).
    r"|(?:^|[\s;&|(`'\"])read(?:\s+-\w+){0,4}(?:\s+\w+){1,8}\s*<\s*[\"']?(?P<redirected>[^\s\"'|;&<>)]+)"
)
# A filter given a credential's file as its last word (`sed -n 1p FILE`, `awk 'NR==1' FILE`,
# `xargs < FILE`), or, for `jq`/`yq`, a credential's field (`jq -r .token config.json`).
_FILTERS = frozenset(("sed", "awk", "gawk", "grep", "xargs", "tr", "cut", "jq", "yq"))
_SIMPLE_COMMAND = re.compile(r"[^|;&\n()`]+")
# The keys an editor or a reader tool gives its file under (`path`, `file_path`, Gemini CLI's `absolute_path`).
PATH_KEY = re.compile(r"path$|(?:^|_)file(?:name)?$")
_VIEWING = re.compile(r"view|read|open|cat|show|get")


def revealed_values(texts: Sequence[str], roles: Sequence[str]) -> tuple[str, ...]:
    """The values the revealing calls of `texts` (a row's turns, with their `roles`) printed."""
    return tuple(sorted(set(_revealed(texts, roles))))


def _revealed(texts: Sequence[str], roles: Sequence[str]) -> Iterator[str]:
    """The one-word lines of the results of revealing calls (see the module docstring). A result
    is read first, and the call it answers only when it holds such a line: most results are long
    outputs, and most calls are then never looked at."""
    assistant = ""  # the last assistant turn
    calls: list[tuple[str, bool]] | None = None  # (name, reveals) per call of it, once a result needs them
    answered = 0  # its results read so far
    for text, role in zip(texts, roles, strict=True):
        if role == "gpt":
            assistant, calls, answered = text, None, 0
            continue
        if role not in ("tool", "human") or not assistant:
            continue
        if len(text) > _MAX_TURN_CHARS:  # its small results only: a huge one parsed would be copied whole
            blocks = _small_blocks(text, "<tool_response>", "</tool_response>") if role == "tool" else []
            results = [_response_of(block) for block in blocks] or [(None, "")]
        else:
            responses = parse_tool_responses(text) if role == "tool" else []
            results = [(response.name, response.content) for response in responses] or [(None, text)]
        for position, (name, content) in enumerate(results, answered):
            words = one_word_lines(content)
            if not words and not content.startswith(("{", "[")):
                continue
            if calls is None:
                calls = _revealing_calls(assistant)
            if _answers_revealing(calls, position, name):
                outputs = _json_outputs(content) if content.startswith(("{", "[")) else []
                yield from [word for output in outputs for word in one_word_lines(output)] if outputs else words
        answered += len(results)
        if role == "human":
            assistant = ""  # an observation answers the turn before it only


def _answers_revealing(calls: list[tuple[str, bool]], position: int, name: str | None) -> bool:
    """Whether the result at `position`, named `name` (None: unnamed), answers a revealing call.

    One call owns every result. Of several, a harness may answer each as it finishes, out of
    order (Hermes calls carry no ids; a messages input's ids name only its results), so a result
    answers the call at its place only by its name: the one call of its name, whatever the place;
    any of several calls of its name; any call at all when it has no name or one no call has.
    Read in place, a secret answered out of order was taken for another call's result and kept;
    the cost of this reading is the other results of a turn that reveals among parallel calls of
    one name, masked as the secret is (a commit hash beside `cat /run/secrets/…`)."""
    if len(calls) == 1 or position >= len(calls) or not any(reveals for _, reveals in calls):
        return any(reveals for _, reveals in calls)
    named = [reveals for call_name, reveals in calls if call_name == name] if name is not None else []
    return any(named) if named else True


def _revealing_calls(assistant: str) -> list[tuple[str, bool]]:
    """Each call of an assistant turn, by name, and whether it reveals a credential; a turn of no
    calls that runs its command as text (a ```bash block its harness runs) counts as one call."""
    if len(assistant) > _MAX_TURN_CHARS:  # a call writing a huge file: its other calls only are parsed
        found: list[tuple[str, bool]] = []
        for block in _small_blocks(assistant, "<tool_call>", "</tool_call>"):
            parsed = parse_tool_calls(block)  # none for a huge block: one call, not read
            found += [(call.name, _reveals(call.name, call.arguments)) for call in parsed] if parsed else [("", False)]
        return found or [("", False)]
    parsed = parse_tool_calls(assistant)
    if parsed:
        return [(call.name, _reveals(call.name, call.arguments)) for call in parsed]
    return [("", any(_command_reveals(block) for block in fenced_blocks(assistant)))]


def _small_blocks(text: str, open_tag: str, close_tag: str) -> list[str]:
    """Each tagged block of a huge turn, tags and all, or "" in its place when it is itself longer
    than `_MAX_TURN_CHARS`: found by position (as `toolcalls` finds them, a lost closing tag ending a
    block at the next opening one), so that only the small blocks are copied out of the turn."""
    blocks: list[str] = []
    start = text.find(open_tag)
    while start >= 0:
        close = text.find(close_tag, start + len(open_tag))
        following = text.find(open_tag, start + len(open_tag))
        if close >= 0 and (following < 0 or close < following):
            end = close + len(close_tag)
        else:
            end = following if following >= 0 else len(text)
        blocks.append(text[start:end] if end - start <= _MAX_TURN_CHARS else "")
        start = following  # after a closed block too: no opening tag starts inside its closing one
    return blocks


def _response_of(block: str) -> tuple[str | None, str]:
    """The name and content of one `<tool_response>` block; no name and "" for none (a huge block left out)."""
    if not block:
        return None, ""
    response = parse_tool_responses(block)[0]
    return response.name, response.content


def _reveals(name: str, arguments: Mapping[str, Any] | str) -> bool:
    """Whether a call prints a credential: it reads a credential's file or variable."""
    if isinstance(arguments, str):
        return _command_reveals(arguments)
    for key, value in arguments.items():
        if isinstance(value, list) and all(isinstance(word, str) for word in value):
            value = " ".join(value)  # an argv: `{"command": ["cat", "/run/secrets/api_key"]}`
        if not isinstance(value, str):
            continue
        if PATH_KEY.search(str(key).lower()) and _VIEWING.search(f"{name} {arguments.get('command', '')}".lower()):
            if secret_file(value):
                return True
        elif _command_reveals(value):
            return True
    return False


# Words one of which a revealing command holds (a file's or a variable's name): most texts hold
# none, and are passed over by a few substring searches instead of the two patterns' scans.
_HINTS = (
    "token",
    "secret",
    "pass",
    "pw",
    "key",
    "cred",
    "sops",
    "netrc",
    "id_",
    "shadow",
    ".pem",
    "op read",  # 1Password's CLI
    "op item",
    "auth",  # a registry's `auth` field (`_AUTH_FIELD`)
    "pat",  # a variable's last word (`secret_variable`: `GH_PAT`, `STRIPE_SK`)
    "decryption",  # `aws ssm get-parameter --with-decryption`
    "_sk",
    "rand",  # a new secret (`_GENERATES_SECRET`)
    "pwgen",
    "genkey",
    ".env",  # an env file's values cut out of its lines (`printed_fields.cuts_env_values`)
)


def _command_reveals(command: str) -> bool:
    lowered = command.lower()
    if not any(hint in lowered for hint in _HINTS):
        return False
    if reads_store(lowered) or any(_filter_reads(piece.group()) for piece in _SIMPLE_COMMAND.finditer(lowered)):
        return True
    if ("jq" in lowered or "yq" in lowered) and any(map(_picks_secret_field, _JQ_FILTER.finditer(lowered))):
        return True
    if prints_credential_field(lowered) or picks_config_field(lowered):
        return True
    if selects_credential_column(lowered) or reads_stored_credential(lowered) or cuts_env_values(lowered):
        return True
    if generates_secret(lowered) or expands_credential(lowered):
        return True
    if any(
        secret_file(found.group("path") or found.group("opened") or found.group("redirected"))
        for found in _READS_FILE.finditer(lowered)
    ):
        return True
    return reads_variable(lowered)


def _filter_reads(command: str) -> bool:
    """Whether a simple command (no pipe or list) is a filter reading a credential's file: its last
    word names one; for `jq`/`yq`, any word (the field, `.token`, or the file); or it picks a
    credential's line out of an env file (`grep API_KEY .env | cut -d= -f2`, `awk -F= '/TOKEN/{print $2}' .env`;
    out of a config file: `printed_fields.picks_config_field`)."""
    words = [word.strip("\"'<") for word in command.split()]
    if words[:1] == ["sudo"]:
        words = words[1:]
    if len(words) < 2 or words[0] not in _FILTERS:
        return False
    if ENV_FILE.search(words[-1]) and any(_SECRET_NAME.search(word) for word in words[1:-1]):
        return True
    if words[0] in ("jq", "yq"):
        return any(not word.startswith("-") and _secret_field(word) for word in words[1:])
    return not words[-1].startswith("-") and secret_file(words[-1])


# A JSON or YAML filter ending on an `auth` field: a registry's `user:password` in base64
# (`jq -r '.auths["ghcr.io"].auth' ~/.docker/config.json`, npm's `_auth`), in no credential's file.
# Not `.auths` (the registries, by name), `.author`, `.oauth`, `.auth_url`, nor a file named `auth`.
_AUTH_FIELD = re.compile(r"[.\[\"']_?auth[\"'\]]*$")
# A `jq`/`yq` filter in quotes (`/usr/bin/jq -r '.auths[] | .auth' F`): its pipes are the filter's,
# not the shell's, which `_SIMPLE_COMMAND` cuts the command at.
_JQ_FILTER = re.compile(
    r"""(?:^|[\s;&|(/`])[jy]q(?:\s+-{1,2}\w[\w-]*)*\s+(?:'(?P<single>[^']{1,512})'|"(?P<double>(?:[^"\\]|\\.){1,512})")"""
)


def _picks_secret_field(found: re.Match[str]) -> bool:
    """Whether a quoted `jq`/`yq` filter ends on a credential's field (`.token`, `.auth`)."""
    return _secret_field((found.group("single") or found.group("double")).rsplit("|", 1)[-1].strip())


def _secret_field(word: str) -> bool:
    """Whether a `jq`/`yq` word (its filter, or the file it reads) names a credential's field or file.
    A filter ending on a bare `key` or a data key's (`.issues[0].key`, `.Contents[].Key`,
    `.primary_key`) names none: an issue's id, an object's path."""
    tail = _FILTER_TAIL.search(word) if word.startswith(".") else None
    if tail is not None and (tail.group() == "key" or tail.group().rsplit("_", 1)[0] in DATA_KEY_WORDS):
        return False
    return secret_file(word) or _AUTH_FIELD.search(word) is not None


_FILTER_TAIL = re.compile(r"\w+(?=[\"'\]]*$)")


def fenced_blocks(text: str) -> Iterator[str]:
    """The fenced code blocks of an assistant's text (a ```bash block its harness runs): where a
    command given as text stands, so the prose around it is not scanned."""
    end = 0
    while (start := text.find("```", end)) >= 0:
        end = text.find("```", start + 3)
        if end < 0:
            return
        yield text[start + 3 : end]
        end += 3


def secret_file(path: str) -> bool:
    """Whether `path` names a credential's file: by its base name, or by the folder it is in."""
    lowered = path.lower().replace("\\", "/")
    base = lowered.rstrip("/").rsplit("/", 1)[-1]
    in_folder = _SECRETS_FOLDER.search(lowered) is not None and _SETTING_FILE.fullmatch(base) is None
    named = _SECRET_FILE.search(base) is not None or in_folder
    return bool(base) and named and _SOURCE_FILE.search(base) is None and _DATA_FILE.search(base) is None


# A file of a secrets folder named for a setting (`/run/secrets/db_host`, `username`, `ca.crt`).
_SETTING_FILE = re.compile(SETTING_WORD + r"(?:\.txt)?|ca\.crt")
# A file named with a credential's word that holds data (found by the round-9 adversarial pass): a
# benchmark's test lists (`FAIL_TO_PASS.txt`, `PASS_TO_PASS.json`), a tokenizer's files
# (`added_tokens.json`, `special_tokens_map.json`, `tokens.txt`), a report's `pass_rates.csv`, a
# service account's `namespace` beside its token.
_DATA_FILE = re.compile(
    r"(?:fail|pass)_to_(?:pass|fail)|(?:added|special)_tokens|tokens_map|^tokens\.txt$|^pass_rates?\b|^namespace$"
)


# A file of code or prose, whatever its name says (`django/contrib/auth/tokens.py`, `secrets_manager.ts`):
# its one-word lines are `continue`, `@property`, `finally:`, which masked everywhere would blank the code.
_SOURCE_FILE = re.compile(
    r"\.(?:py|pyi|ipynb|js|mjs|cjs|jsx|ts|tsx|go|rs|java|kt|scala|rb|php|c|h|cc|cpp|hpp|cs|swift|m|lua|pl|r|jl"
    r"|sh|bash|zsh|ps1|md|rst|html|css|scss|vue|svelte|sql|proto|tf)$"
)


def one_word_lines(content: str) -> list[str]:
    """The lines of `content` that are one word a credential could be, none when it has more than
    `_MAX_LINES` lines (a listing)."""
    if content.count("\n") > 4 * _MAX_LINES:  # cheap first: most results are long outputs
        return []
    lines = [line for line in content.splitlines() if line.strip()]
    if len(lines) > _MAX_LINES:
        return []
    words = [_LINE_NUMBER.sub("", line).strip().strip("\"'") for line in lines]
    # A row of cells is read cell by cell too (a query's `1|value`, `| admin | value |`, CSV, tabs, `│`,
    # and a script's printed rows, `('value',)`, `[(1, 'value')]`).
    words += [cell.strip().strip("\"'()[]") for line in lines if _CELL.search(line) for cell in _CELL.split(line)]
    return [
        word
        for word in words
        if _MIN_CHARS <= len(word) <= _MAX_CHARS
        and _SPACE.search(word) is None
        and REDACTED not in word
        and credential_value(word)
        and _SETTING_VALUE.fullmatch(word) is None
        and word.lower() not in _ASKED_NAMES
    ]


# The name a store's reply repeats before the value (`redis-cli CONFIG GET requirepass`: `1) "requirepass"`).
_ASKED_NAMES = frozenset(("requirepass", "masterauth"))


# A line that is a setting's value, not a credential: a URL, a path of two folders or more, a date
# or a time (`echo $TOKEN_EXPIRY`, `cat api_key_rotation_date.txt`).
_SETTING_VALUE = re.compile(
    r"[a-z][\w+.-]*://\S*|(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?"
    r"|\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?",
    re.IGNORECASE,
)


# The keys a harness gives a command's output under, when its result is JSON (`{"output": "...",
# "exit_code": 0}`, a Hermes agent's terminal; `[{"type": "text", "text": "..."}]`, an MCP tool's content).
_OUTPUT_KEYS = ("output", "stdout", "result", "content", "text", "value")
_OUTPUT_DEPTH = 4  # how deep outputs are looked for: `{"content": [{"type": "text", "text": ...}]}` is 3


def _json_outputs(content: str) -> list[str]:
    """The output strings of a result that is JSON; parsed only for a revealing call's result (its
    other values, `"status": "completed"`, are no credential of the call's)."""
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError:
        return []
    outputs: list[str] = []
    _collect_outputs(data, outputs, _OUTPUT_DEPTH)
    return outputs


def _collect_outputs(data: Any, outputs: list[str], depth: int) -> None:
    """Append to `outputs` the strings under an output key in `data` (or in a list of them)."""
    if depth <= 0:
        return
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        if isinstance(data, dict) and str(key).lower() not in _OUTPUT_KEYS:
            continue
        if isinstance(value, str):
            outputs.append(value)
        else:
            _collect_outputs(value, outputs, depth - 1)
