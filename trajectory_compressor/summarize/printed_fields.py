"""Commands that print a credential by its field: a script printing one field of what it loaded,
a filter cutting one field out of a config file's line, or a query selecting a credential's column.

`python -c "print(json.load(open('c.json'))['api_key'])"`, `node -p "require('./c.json').token"`,
`grep password config/database.yml | awk '{print $2}'`: each prints the bare value, and its file
is no credential's by name, so `revealed_secrets` knew neither by the file it reads. What tells is
the field, and that it is what gets printed:

- a script's printed expression ends on the field (`_ACCESSOR`): the expression is found by walking
  back from the accessor over names, dots and balanced brackets (`_chain_start`), and what stands
  before it must print it (`print(`, `console.log(`, `puts `, `echo `, `node -p "`), or the
  accessor is a notebook's last line (`cfg['token']`). A getter named for a credential is a
  field too (`HfFolder.get_token()`, `keyring.get_password(…)`), and so is a bare `token` of an
  issuer or holder of credentials (`auth.token`, `settings.token`: `_TOKEN_HOLDER`; a lexer's
  `lexer.token` and `lex.get_token()` are text). A field used inside another call
  (`print(check(user.password))`, `print(len(cfg['token']))`), an assignment, a test id
  (`unittest tests.test_client.TestClient.test_access_token`) and a module's name
  (`'django.contrib.auth'`) print no credential;
- a filter's pattern names the field (`grep password`, `awk '/api_key/…'`, `sed -n 's/^token=//p'`)
  over a config file, and the filter or one after it in the same pipeline prints a later field of
  the line (`cut -d= -f2`, `awk '{print $2}'` or `$NF`, a `sed` substitution, `grep -oP '(?<=…)'`,
  `perl -ne 'print $1 …'`). The line itself (`grep password config.yml`: `password: …`) is the
  rules' to mask by its key; a key (`cut -f1`), a file list (`grep -l`) and a field merely
  holding a credential's word (`token_type`, `password_hash_algo`, `secretName`) are no value.

A field names a credential (`credential_field`) when it is a credential's name with any prefix
(`db_password`, `dbPassword` lower-cased), a token of an owner that issues credentials
(`access_token`, `githubToken`; not a lexer's `current_token` nor a tokenizer's `eos_token`), or,
as a key, `token` or a registry's `auth`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from trajectory_compressor.summarize.assignment_rules import CREDENTIAL_NAMES

_TOKEN_OWNERS = (
    "access|auth|refresh|bearer|session|api|id|oauth|github|gh|gitlab|hf|huggingface|slack|bot|discord"
    "|telegram|npm|pypi|personal|jwt|app|service|client|user|admin|registry|vault|deploy|private|secret"
)
_CREDENTIAL_FIELD = re.compile(
    r"(?:\w*[_.-])?(?:" + CREDENTIAL_NAMES + r"|credentials?|(?:signing|encryption|master|hmac|secret)[_-]?key"
    r"(?:[_-]?base)?|(?:" + _TOKEN_OWNERS + r")[_-]?token)"
    # camelCase, lower-cased: `dbPassword`, `jwtSecret`, `secretAccessKey`.
    r"|\w*(?:password|passwd|secret|api_?key|access_?key|private_?key|secret_?key|client_?secret)"
)
# Fields that name a credential only as a key of loaded data (`cfg['token']`, `.get('auth')`): as an
# object's attribute they are a lexer's token or a module (`lexer.token`, `django.contrib.auth`).
_KEY_ONLY_FIELDS = frozenset(("token", "auth", "_auth"))
WORKING_FOLDER_NAMES = frozenset(("pwd", "oldpwd"))  # the shell's working folder, no credential


def credential_field(field: str, *, key: bool = True) -> bool:
    """Whether a field's name (lower-cased) names a credential (see the module docstring); `key`:
    it is a key of loaded data, not an attribute."""
    if field in WORKING_FOLDER_NAMES:
        return False
    return (key and field in _KEY_ONLY_FIELDS) or _CREDENTIAL_FIELD.fullmatch(field) is not None


# One accessor whose name holds a credential's stem: `['api_key']` (its quotes escaped for a shell's
# `-c "…"` too), `.get('secret', '')`, PHP's and Perl's `->token` / `->{token}`, `.token`.
_STEMS = r"(?=[\w-]{0,60}?(?:pass|pw|secret|token|key|auth|cred))"
_ACCESSOR = re.compile(
    r"""\[\s*\\?["']""" + _STEMS + r"""(?P<key>[\w-]{1,64})\\?["']\s*\]"""
    r"""|\.get\(\s*\\?["']""" + _STEMS + r"""(?P<got>[\w-]{1,64})\\?["'][^()\n]{0,64}\)"""
    # A getter's call (`HfFolder.get_token()`, `keyring.get_password('svc', 'bob')`, `getApiKey()`,
    # PHP's `$client->getAccessToken()`).
    r"""|(?:\.|->|(?<![\w$]))(?P<verb>get|read|load|fetch)_?""" + _STEMS + r"""(?P<getter>\w{1,64})\([^()\n]{0,128}\)"""
    r"""|->\{?\s*["']?""" + _STEMS + r"""(?P<arrow>\w{1,64})["']?\s*\}?"""
    r"""|\.""" + _STEMS + r"""(?P<attr>[a-z_]\w{0,63})"""
)
# What owns a bare `token` (an attribute, or a getter's): an issuer's or a holder's of credentials
# (`auth.token`, `HfFolder.get_token()`, `settings.token`), not a lexer's or a tokenizer's.
_TOKEN_HOLDER = re.compile(
    r"_?(?:auth|oauth|session|github|gh|gitlab|hf|huggingface|slack|bot|discord|telegram|npm|pypi|jwt|client"
    r"|api|vault|registry|settings|config|cfg|conf|creds?|credentials|secrets|env|user|account)"
    r"(?:[_-]?(?:folder|hub|client|api|config|settings|manager|store|session))?s?"  # `HfFolder`, `github_client`
)
# What follows an accessor that is not the last of its expression (`cfg.token.upper()`,
# `['token']['value']`); a trailing `.strip()` still prints the value.
_CHAIN_GOES_ON = re.compile(r"[ \t]*(?:[.\[(\w]|->)")
_TRAILING_CALL = re.compile(r"\.(?:strip|rstrip|trim|decode)\(\s*\)")
_CHAIN_CHARS = 256  # how far back an expression is walked: a one-liner's, not a program's
_MAX_WALKS = 64  # a script prints a credential's field once or twice, not in every line
# What prints the expression that starts right after it.
_OPENER = re.compile(
    r"""(?:\b(?:print|pprint|console\.log|puts|echo|write|writeline|display|say|pp|var_dump|print_r)[ \t]*\(?"""
    r"""|\bnode\s+-pe?\s+["']|\{|\$\{)[ \t]*(?:await[ \t]+)?$"""  # `console.log(await getToken())`
)
_PRINT_WORD = re.compile(r"\b(?:print|console\.log|puts|echo|write)")


def prints_credential_field(command: str) -> bool:
    """Whether a script in `command` (lower-cased) prints a credential's field of what it loaded;
    its first `_MAX_WALKS` accessors naming a credential are looked at (each walk is Python)."""
    walks = 0
    for found in _ACCESSOR.finditer(command):
        named = found.group("attr") or found.group("getter")
        key = named is None
        field = found.group("key") or found.group("got") or found.group("arrow") or named
        trailing = _TRAILING_CALL.match(command, found.end())
        if not credential_field(field) or _CHAIN_GOES_ON.match(command, trailing.end() if trailing else found.end()):
            continue
        walks += 1
        if walks > _MAX_WALKS:
            return False
        start = _chain_start(command, found.start())
        if start < 0 or not (key or _names_credential(field, command[start : found.start()], found.group("verb"))):
            continue  # `lexer.token`; but `require('./c.json').auth.token` is a field of loaded data
        line_start = command.rfind("\n", 0, start) + 1
        before = command[max(line_start, start - 80) : start]
        opener = _OPENER.search(before)
        if opener is not None and (
            not opener.group().lstrip().startswith(("{", "$"))
            or _PRINT_WORD.search(command, line_start, start) is not None
        ):
            return True
        if key and not before.strip() and not command[found.end() :].strip():
            return True  # a notebook shows its last line's value
    return False


def _names_credential(field: str, owner: str, verb: str | None) -> bool:
    """Whether an attribute, or a getter (`verb`: `get`, `read`…) named `field`, on the expression
    `owner` (`""`: a function of its own), names a credential: by its own name (`user.password`,
    `get_api_key()`), as a field of loaded data (`require('./c.json').auth.token`), or as the token
    of its holder (`auth.token`, `HfFolder.get_token()`, a bare `get_token()`; not `lexer.token`,
    `config_lexer.token`, `lex.get_token()`, a parser's `read_token()`)."""
    if credential_field(field, key=False) or (verb is None and "(" in owner):
        return True
    holder = re.split(r"[.$\]\[>-]+", owner.rstrip(".>-"))[-1] if owner else ""
    return field in _KEY_ONLY_FIELDS and (
        (verb == "get" and not holder) or (bool(holder) and _TOKEN_HOLDER.fullmatch(holder) is not None)
    )


def _chain_start(text: str, end: int) -> int:
    """Where the expression ending at `end` starts: back over names, dots, `$`, `->` and balanced
    brackets, at most `_CHAIN_CHARS`; -1 when it runs past them."""
    position, depth, limit = end, 0, max(0, end - _CHAIN_CHARS)
    while position > limit:
        char = text[position - 1]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0:
                return position
            depth -= 1
        elif depth == 0 and not (char.isalnum() or char in "_.$"):
            if char == ">" and text[position - 2 : position] == "->":
                position -= 1
            else:
                return position
        position -= 1
    return position if position == 0 and depth == 0 else -1


# A config file a filter may pick a line of (`config/database.yml`, `app.conf`, `settings.json`).
_CONFIG_EXTENSION = r"\.(?:ini|conf|cfg|cnf|toml|ya?ml|json|properties|xml)"
_CONFIG_FILE = re.compile(_CONFIG_EXTENSION + "$")  # a word that is one
_CONFIG_WORD = re.compile(_CONFIG_EXTENSION + r"\b")  # one anywhere in a command
_MAX_PIPELINE_CHARS = 4096  # a filter's pipeline is a line or two; a longer command is a program
_READERS = frozenset(("grep", "egrep", "rg", "awk", "gawk", "sed", "perl"))
_EXTRACTORS = frozenset(("cut", "awk", "gawk", "sed", "grep", "egrep", "rg", "perl"))
_IDENTIFIER = re.compile(r"[a-z_][\w-]*")
_LATER_FIELD = re.compile(r"(?:[2-9]|[1-9]\d)")
_PRINTS_FIELD = re.compile(r"print[ \t]*\$(?:[2-9]|[1-9]\d|nf\b)")
_PRINTS_GROUP = re.compile(r"print[ \t]*\$\d")
_SUBSTITUTION = re.compile(r"s([^\w\s\\])")


def picks_config_field(command: str) -> bool:
    """Whether `command` (lower-cased) cuts a credential's field out of a config file's line."""
    if len(command) > _MAX_PIPELINE_CHARS or _CONFIG_WORD.search(command) is None:
        return False
    return any(map(_pipeline_picks, _pipelines(command)))


# An env file (`.env`, `.env.local`, `prod.env`), as a command's word; not a template of one
# (`.env.example`, `.env.sample`: placeholders and `localhost:5432`).
ENV_FILE = re.compile(r"(?:^|/)\.env(?!\.(?:example|sample|template|dist|defaults?)$)(?:\.[\w-]+)?$|\.env$")


def cuts_env_values(command: str) -> bool:
    """Whether `command` (lower-cased) cuts the values out of an env file's lines, naming none
    (`cut -d= -f2 .env`, `grep -v '^#' .env | awk -F= '{print $2}'`): each is printed bare, a
    credential's among them. Read as `picks_config_field` reads a config file's pipeline. A
    pipeline that picks its lines by a name (`grep NODE_ENV .env | cut -d= -f2`) prints that
    name's value: a credential's only when the name says so (`revealed_secrets._filter_reads`)."""
    if len(command) > _MAX_PIPELINE_CHARS or ".env" not in command:
        return False
    for pipeline in _pipelines(command):
        if any(map(_picks_lines_by_name, pipeline)):
            continue
        for index, words in enumerate(pipeline):
            if len(words) >= 2 and ENV_FILE.search(words[-1]) and any(map(_extracts, pipeline[index:])):
                return True
    return False


_GREPS = frozenset(("grep", "egrep", "fgrep", "rg"))
_NAME = re.compile(r"[a-z_][a-z0-9_]")  # two characters of a name, in a pattern
# A line address of an `awk` or `sed` program (`/NODE_ENV/{print $2}`, `$1=="PORT"`, `/^PORT=/s/.*=//p`).
_ADDRESS = re.compile(r"/(?P<pattern>[^/]{1,256})/|\$1\s*(?:==|~)")


def _picks_lines_by_name(words: list[str]) -> bool:
    """Whether a simple command keeps only the lines matching a name (not `grep -v '^#'`)."""
    if not words:
        return False
    if words[0] in _GREPS:
        flags = "".join(word[1:] for word in words[1:] if word.startswith("-") and not word.startswith("--"))
        patterns = [word for word in words[1:] if not word.startswith("-") and not ENV_FILE.search(word)]
        return "v" not in flags and any(_NAME.search(pattern) for pattern in patterns[:1])
    if words[0] in ("awk", "gawk", "sed"):
        return any(
            found.group("pattern") is None or _NAME.search(found.group("pattern")) is not None
            for word in words[1:]
            if not word.startswith("-")
            for found in _ADDRESS.finditer(word)
        )
    return False


def _pipelines(command: str) -> Iterator[list[list[str]]]:
    """The pipelines of `command`'s lines, each as its simple commands' words (a leading `sudo` left out)."""
    for line in command.splitlines():
        pipeline: list[list[str]] = [[]]
        for word in [*_shell_words(line), ";"]:
            if word in ("|", "|&"):
                pipeline.append([])
            elif word in (";", "&&", "||", "&"):
                yield pipeline
                pipeline = [[]]
            elif word == "sudo" and not pipeline[-1]:
                continue
            else:
                pipeline[-1].append(word)


def _shell_words(line: str) -> list[str]:
    """A line's words as a shell reads them (quotes removed; `|`, `;`, `&&` words of their own)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: read by white space
        return line.split()


def _pipeline_picks(pipeline: list[list[str]]) -> bool:
    for index, words in enumerate(pipeline):
        if len(words) < 3 or words[0] not in _READERS or not _CONFIG_FILE.search(words[-1]):
            continue
        patterns = [word for word in words[1:-1] if not word.startswith("-")]
        names = (name for pattern in patterns for name in _IDENTIFIER.findall(pattern))
        if any(credential_field(name) for name in names) and any(map(_extracts, pipeline[index:])):
            return True
    return False


def _extracts(words: list[str]) -> bool:
    """Whether a simple command prints a field of its lines after the first, not the lines."""
    if not words or words[0] not in _EXTRACTORS:
        return False
    program = " ".join(words[1:])
    if words[0] == "cut":
        return any(
            (word.startswith("-f") and _LATER_FIELD.match(word.lstrip("-f'\"") or next_word))
            or (word.startswith("--fields=") and _LATER_FIELD.match(word[9:]))
            for word, next_word in zip(words, [*words[1:], ""], strict=True)
        )
    if words[0] in ("awk", "gawk"):
        return _PRINTS_FIELD.search(program) is not None
    if words[0] == "perl":
        return _PRINTS_GROUP.search(program) is not None
    if words[0] == "sed":
        return "-i" not in words and any(_SUBSTITUTION.match(word) for word in words[1:])
    flags = "".join(word[1:] for word in words[1:] if word.startswith("-") and not word.startswith("--"))
    return "o" in flags and ("(?<=" in program or "\\k" in program)  # grep -oP '(?<=password: ).*'


# A query's columns (`SELECT password FROM users`, `select u.api_key, name from accounts`) sent to a
# database's client (`sqlite3 app.db '…'`, `psql -c "…"`, `mysql -e "…"`, a heredoc piped to one,
# a framework's `dbshell`) or run by a script through a driver (Python's `sqlite3`, `psycopg2`,
# `pymysql`, SQLAlchemy; Node's `pg`, `mysql2`, `better-sqlite3`), which prints its rows as
# `('value',)`: each printed bare. A query merely named (`git log -S "SELECT password FROM"`,
# `grep -rl`) prints none.
_SQL_CLIENT = re.compile(
    r"\b(?:sqlite3|psql|mysql|mariadb|duckdb|sqlcmd|clickhouse(?:-client)?|mycli|pgcli|litecli|cqlsh|snowsql"
    r"|dbshell|dbconsole|psycopg2?|pymysql|mysqldb|mysql\.connector|asyncpg|aiosqlite|pg8000|pyodbc|oracledb"
    r"|sqlalchemy|mysql2|better-sqlite3)\b|\brequire\(\s*[\"']pg[\"']\s*\)"
)
_SELECT_WORD = re.compile(r"\bselect\b")
_FROM_WORD = re.compile(r"\bfrom\b")
_MAX_COLUMNS_CHARS = 512
_COLUMN = re.compile(r"""[`"\[]?(?:\w+[`"\]]?\.[`"\[]?)?(?P<name>\w+)[`"\]]?(?:\s+(?:as\s+)?\w+)?""")


def selects_credential_column(command: str) -> bool:
    """Whether a SQL query sent to a client in `command` (lower-cased) selects a credential's column
    as it is: not inside a call (`count(password)`, `length(api_key)`) nor in a subquery (`where
    password in (select password …)` prints ids). Its first `_MAX_WALKS` `select`s are read, each
    up to `_MAX_COLUMNS_CHARS` on for its `from`."""
    if _SQL_CLIENT.search(command) is None:
        return False
    position = 0
    for _ in range(_MAX_WALKS):
        word = _SELECT_WORD.search(command, position)
        if word is None:
            return False
        position = word.end()
        end = _FROM_WORD.search(command, word.end(), word.end() + _MAX_COLUMNS_CHARS)
        if end is None or command[max(0, word.start() - 16) : word.start()].rstrip().endswith("("):
            continue
        columns = command[word.end() : end.start()].strip()
        if not columns or any(char in columns for char in ";()"):
            continue
        if columns.startswith("distinct") and columns[8:9].isspace():
            columns = columns[9:]
        for column in columns.split(","):
            plain = _COLUMN.fullmatch(column.strip())
            if plain is not None and credential_field(plain.group("name"), key=False):
                return True
    return False


# A Redis key (`redis-cli GET user:1:password`, `HGET user:1 api_token`) or a `dasel` selector
# (`dasel -f config.yaml '.database.password'`) whose last part names a credential.
_REDIS_GETS = {"get": 1, "getdel": 1, "getex": 1, "hget": 2}
_KEY_PARTS = re.compile(r"[:.\[\]'\"]+")


def reads_stored_credential(command: str) -> bool:
    """Whether `command` (lower-cased) prints a credential's key out of Redis or a config file by
    `dasel`: the key's last part names one (`rl:auth:127.0.0.1`, `.services.auth.image`, `.eos_token`
    do not)."""
    if len(command) > _MAX_PIPELINE_CHARS or ("redis-cli" not in command and "dasel" not in command):
        return False
    for line in command.splitlines():
        for key in _stored_keys(_shell_words(line)):
            parts = [part for part in _KEY_PARTS.split(key) if part]
            if parts and credential_field(parts[-1]):
                return True
    return False


def _stored_keys(words: list[str]) -> list[str]:
    """The keys a line's `redis-cli` gets (`GET key`, `HGET hash field`), and the selector a `dasel`
    reads (its last word; none for `dasel put` or `delete`)."""
    keys: list[str] = []
    for index, word in enumerate(words):
        if word.endswith("redis-cli"):
            for at, command in enumerate(words[index + 1 :], index + 1):
                offset = _REDIS_GETS.get(command)
                if offset is not None and at + offset < len(words):
                    keys.append(words[at + offset])
        elif word.endswith("dasel") and _selects(words[index + 1 :]):
            keys.append(words[-1])
    return keys


def _selects(arguments: list[str]) -> bool:
    """Whether a `dasel`'s arguments end on a selector it reads (not `put` or `delete`, not a flag)."""
    return bool(arguments) and not arguments[-1].startswith("-") and not {"put", "delete"} & set(arguments[:2])
