"""The assignment rules: a credential known by the name it is given to, not by its shape.

Also where a file format or a language names it (SQL's `IDENTIFIED BY`, XML tags, `.netrc`, a
Kubernetes env entry).

`password = "..."`, `"api_key": "..."`, `DB_PASSWORD=...`, `client_secret: ...`, a JSON list or
object given to such a name, and high-entropy values given to any `*token` / `*key` / `*secret`
name. Kept apart from the shape rules (`secret_rules`): what they match depends on judging the
value (a literal, not code; not a placeholder), which is most of their code. `redact` runs
them with the others.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.encoded_secrets import decoded_text
from trajectory_compressor.summarize.secret_rules import REDACTED, Rule, Span, credential_value, high_entropy

# `password = "..."`, `"api_key": "..."`, `DB_PASSWORD=...`, `DB_PASS=...`, `client_secret: ...` (on
# lower-cased, decoded text: `escapes`). The key name must END with one of these words
# (`db_password=` matches from `password`); the value is judged by `_assignment_span`. No prefix
# is matched: scanning `\w*` before the keyword at every word start made this pattern the
# slowest by far.
_VALUE = r"""(?:(?P<quote>["'])(?P<quoted>[^"'\n]{0,512}?)(?P=quote)|(?P<bare>[^\s"'`,;]{1,512}))"""
# The gap may close a subscript (`os.environ["DB_PASSWORD"] = "..."`, `config['password'] = '...'`);
# `=>` is PHP's and Ruby's (`'password' => '...'`).
_OPERATOR = r"""(?P<gap>["']?\]?\s{0,4})(?P<operator>:=|=>|=|:)[ \t]{0,16}"""
CREDENTIAL_NAMES = (
    r"pass(?:word|wd|phrase)?|pwd|secret(?:[_-]?(?:key|token))?|api[_-]?(?:key|token)|apikey"
    r"|access[_-]?(?:key|token)|private[_-]?key|client[_-]?secret|(?:auth|refresh|bearer|session)[_-]?token"
)
_ASSIGNMENT = re.compile(r"(?x)(?P<name>" + CREDENTIAL_NAMES + ")" + _OPERATOR + _VALUE)
_ASSIGNMENT_STEMS = (
    "pass",
    "pwd",
    "secret",
    *(f"{a}{sep}{b}" for a in ("api", "access", "private") for sep in ("", "_", "-") for b in ("key", "token")),
    *(
        f"{a}{sep}{b}"
        for a in ("client", "auth", "refresh", "bearer", "session")
        for sep in ("", "_", "-")
        for b in ("secret", "token")
    ),
)
# Any other `*token`, `*key`, `*secret`, `*credential(s)`, `*signature` name: only a
# high-entropy value counts (`key = "name"` and `token: 4096` are not credentials).
_KEYED = re.compile(r"(?P<name>token|key|secret|credentials?|signature)" + _OPERATOR + _VALUE)
_KEYED_STEMS = ("token", "key", "secret", "credential", "signature")

# Values that are code, types or placeholders, not credentials.
_NOT_VALUES = frozenset(
    {
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "required",
        "optional",
        "str",
        "string",
        "bytes",
        "int",
        "bool",
        "secretstr",
        "any",
        "redacted",
        "hidden",
        "changeme",
        "final",
    }
)
_CODE_CHARS = frozenset("()[]{}<>$%*=")
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)*")
# A value ending in base64 padding (`VHIwdWI0ZG9yM3h5elE=`, a `kubectl get secret -o yaml`
# field): encoded data, never code, whatever its letters.
_PADDED = re.compile(r"[A-Za-z0-9+/_-]{4,}={1,2}")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
# Where a bare value ends before its text does: the next parameter of a query string
# (`?access_token=...&limit=50`), an HTML tag (`<td>DB_PASSWORD&#61;...</td>`).
_VALUE_END = re.compile(r"&[\w.\[\]-]{1,64}=|</?[A-Za-z]")


def _assignment_value(value: str, quoted: bool, literal: bool = False) -> bool:
    """True when `value` (right of `password=`) looks like a literal credential.

    Quoted: any literal of 4+ characters without spaces (spaces mean a description or a
    message: `"password": "must be 8 characters"`). Bare: it must not look like code — no
    calls, indexing, templating or placeholders, and not a plain (dotted) identifier without
    digits, which is a variable (`password=password`, `api_key=self.api_key`). In a `literal`
    context (`PGPASSWORD=postgres`, `POSTGRES_PASSWORD: postgres`, `--password=postgres`) a plain
    word is the value itself; a dotted name is still taken for code.
    """
    if len(value) < 4 or value.lower() in _NOT_VALUES:
        return False
    if value[0] in _CODE_CHARS or REDACTED in value:
        return False
    if _PADDED.fullmatch(value):
        return True
    if quoted:
        return not any(ch.isspace() for ch in value)
    if "%" in value:  # percent-encoding (`p%40ss`, a URL's value) is not formatting code
        value = _PERCENT_ESCAPE.sub("", value)
    if any(ch in _CODE_CHARS for ch in value):
        return False
    if literal and "." not in value:
        return True
    return _DOTTED_IDENTIFIER.fullmatch(value) is None


def _literal_context(match: re.Match[str], text: str) -> bool:
    """`NAME=value` or `NAME: value` with an upper-case name, or `--name=value`: an environment
    variable, an env or docker-compose file, a command-line option, whose value is never a
    variable name."""
    operator = match.group("operator")
    if operator not in ("=", ":") or match.group("gap"):
        return False
    start, end = match.span("name")
    return text[start:end].isupper() or (operator == "=" and text[max(0, start - 2) : start] == "--")


def _short_pass_name(match: re.Match[str], text: str, quoted: bool) -> bool:
    """Whether a name ending in `pass` names a password: `DB_PASS`, `db-pass`; `pass=` or a quoted
    `pass: "..."` alone. Not `bypass` nor `compass`, nor a test result (`PASS: test_1`)."""
    start = match.start("name")
    before = text[start - 1] if start else " "
    if before.isalnum():
        return False
    return before in "_-." or match.group("operator") == "=" or quoted


def _assignment_span(match: re.Match[str], text: str, *, entropy: bool = False) -> Span | None:
    """The value's span in `text` (the original, not the lower-cased copy matched)."""
    quoted = match.group("quote") is not None
    group = "quoted" if quoted else "bare"
    start, end = match.span(group)
    value = text[start:end]
    if not quoted:  # keep a sentence's full stop, a query string's next parameter, a tag
        if ("&" in value or "<" in value) and (following := _VALUE_END.search(value)):
            value = value[: following.start()]
        value = value.rstrip(".")
        end = start + len(value)
    name = match.group("name")
    if name == "pass" and not _short_pass_name(match, text, quoted):
        return None
    if name == "pwd" and value[:1] in ("/", "~"):  # PWD=/testbed, OLDPWD=~: the working directory
        return None
    literal = _literal_context(match, text)
    if name == "pass" and value.isdigit() and not literal:  # n_pass=1000
        return None
    if not _assignment_value(value, quoted, literal) or (entropy and not high_entropy(value)):
        return None
    return start, end


# `"password": ["..."]`, `"password": {"value": "..."}`: a JSON list or object given to a
# credential's name is its value, all of it to the closing bracket (within `_STRUCTURE_CHARS`).
_STRUCTURED = re.compile(r"(?x)(?P<name>" + CREDENTIAL_NAMES + r")[\"']\s{0,4}:\s{0,16}[\[{]")
_STRUCTURE_CHARS = 2048


def _structured_span(match: re.Match[str], text: str) -> Span | None:
    """The inside of the list or object, to its closing bracket (none found within
    `_STRUCTURE_CHARS`: not masked here; the readers of decoded arguments mask it by its key)."""
    start = match.start("name")
    if start and text[start - 1].isalnum():  # `"bypass": [...]`, `"compass": {...}`
        return None
    opening = match.end() - 1
    close = _closing_bracket(text, opening)
    return (opening + 1, close) if close is not None and close > opening + 1 else None


def _closing_bracket(text: str, opening: int) -> int | None:
    """Where the JSON list or object opened at `opening` closes (strings and escapes skipped),
    or None past `_STRUCTURE_CHARS`."""
    depth, in_string, escaped = 0, False, False
    for position in range(opening, min(len(text), opening + _STRUCTURE_CHARS)):
        char = text[position]
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return position
    return None


def _named_value(match: re.Match[str], text: str) -> Span | None:
    """The `value` group, unless it is a placeholder (`${DB_PASS}`, `%(pw)s`) or a number."""
    value = match.group("value")
    return match.span("value") if credential_value(value) and len(value) >= 4 else None


def _login_pair(match: re.Match[str], text: str) -> Span | None:
    """The `value` group when it is the base64 of `user:password` (not `"auth": "oauth2"`)."""
    decoded = decoded_text(match.group("value"))
    return match.span("value") if decoded is not None and ":" in decoded.strip(":") else None


# Credentials where a file format or a language names them (scanned: the literal is inside).
CONFIG_AND_SQL = (
    # SQL: `CREATE USER app IDENTIFIED BY '...'`, `ALTER ROLE app WITH [ENCRYPTED] PASSWORD '...'`.
    Rule(
        "sql-password",
        ("identified by", "with password", "encrypted password"),
        re.compile(r"(?:identified[ \t]+by|password)[ \t]+'(?P<value>[^'\n]{1,256})'"),
        _named_value,
        folded=True,
        scan=True,
    ),
    # XML and HTML-like config: `<password>...</password>`, `<db:apiKey>...</db:apiKey>`.
    Rule(
        "xml-password",
        ("password>", "passwd>", "secret>", "apikey>", "api_key>", "token>"),
        re.compile(
            r"<(?P<tag>[\w:.-]{0,32}(?:password|passwd|secret|api[_-]?key|token))>(?P<value>[^<\s]{1,256})</(?P=tag)>"
        ),
        _named_value,
        folded=True,
        scan=True,
    ),
    # `.netrc`: `machine host login user password VALUE`, on one line or, as most are written,
    # one token pair a line.
    Rule(
        "netrc-password",
        ("machine",),
        re.compile(
            r"machine\s{1,64}\S{1,256}(?:\s{1,64}login\s{1,64}\S{1,256})?\s{1,64}password\s{1,64}(?P<value>\S{1,256})"
        ),
        _named_value,
        scan=True,
    ),
    # Docker's `config.json`: `"auth": "<base64 of user:password>"` (`docker login` writes it).
    Rule(
        "docker-config-auth",
        ("auth",),  # without its quotes: an escaped quote (`\\"`) decodes to one
        re.compile(r'"auth"\s{0,16}:\s{0,16}"(?P<value>[A-Za-z0-9+/]{8,1024}={0,2})"'),
        _login_pair,
        scan=True,
    ),
    # OpenSSL's `-pass pass:VALUE` (`-passin`, `-passout`).
    Rule(
        "openssl-pass",
        ("pass:",),
        re.compile(r"-pass(?:in|out)?[ \t]+pass:(?P<value>[^\s'\"]{1,256})"),
        _named_value,
        scan=True,
    ),
    # A Kubernetes or compose env entry: `- name: DB_PASSWORD` then `value: ...` on the next line.
    Rule(
        "env-entry-value",
        ("value:",),
        re.compile(
            r"name:[ \t]*[\"']?[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY)[A-Z0-9_]*[\"']?[ \t]*\r?\n"
            r"[ \t]*(?:-[ \t]*)?value:[ \t]*[\"']?(?P<value>[^\s\"'\n]{1,256})"
        ),
        _named_value,
        scan=True,
    ),
)

ASSIGNMENT_RULES = (
    Rule("secret-assignment", _ASSIGNMENT_STEMS, _ASSIGNMENT, _assignment_span, folded=True),
    Rule("secret-structure", _ASSIGNMENT_STEMS, _STRUCTURED, _structured_span, folded=True),
    *CONFIG_AND_SQL,
    Rule(
        "high-entropy-assignment",
        _KEYED_STEMS,
        _KEYED,
        lambda match, text: _assignment_span(match, text, entropy=True),
        folded=True,
    ),
)
