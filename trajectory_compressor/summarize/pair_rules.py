"""A credential's name given as one string and its value as the next, in a config file or code.

Found by the round-9 adversarial pass, each reached a summary whole: the name and the value are
apart, with no `=` or `:` between them for `assignment_rules` to read.

- .NET's `<add key="ApiKey" value="…" />`, Spring's `<property name="password" value="…"/>`, an
  Android resource's `<string name="api_key">…</string>`, a Java properties XML's `<entry
  key="password">…</entry>`;
- a Terraform variable's default (`variable "db_password" { default = "…" }`);
- WordPress's salts (`define('AUTH_KEY', '…')`; `define('DB_PASSWORD', …)` is a context rule's);
- a browser's storage or a cookie set to a token (`localStorage.setItem('token', '…')`);
- an SQL `INSERT` whose column list names a credential (`INSERT INTO users (username, password)
  VALUES ('admin', '…')`): that column's value in the first row.

The name is read as `masking.redact_json_value` reads a JSON key: one of the assignment rule's
names ending it, after a separator or a camelCase hump (`DbPassword`, `spring.datasource.password`).
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.assignment_rules import CREDENTIAL_NAMES
from trajectory_compressor.summarize.prose_rules import secret_looking
from trajectory_compressor.summarize.secret_rules import REDACTED, Rule, Span

_CREDENTIAL_KEY = re.compile(r"(?:^|[_.:-]|(?<=[a-z0-9])(?=[A-Z]))(?i:" + CREDENTIAL_NAMES + r"|token)$")
_VALUE = r"(?P<value>[^\"'<>\n]{1,512})"


def _named_value(match: re.Match[str], text: str) -> Span | None:
    """The value, when the name is a credential's and the value no placeholder."""
    if _CREDENTIAL_KEY.search(match.group("name")) is None:
        return None
    return _value(match)


def _value(match: re.Match[str]) -> Span | None:
    return match.span("value") if _looks_secret(match.group("value")) else None


def _looks_secret(value: str) -> bool:
    """A secret, not a setting or a label given to a name holding a credential's word (found by the
    round-9 adversarial pass: `value="true"`, `value="Sign in"`, `Passwort:`, `Forgot?`, a path, a
    placeholder, `YOUR_API_KEY`, `put your unique phrase here`): one word, not of letters alone
    (under 16), and looking like a secret as a value named in prose does (`secret_looking`)."""
    word = value.rstrip(":?!.")
    return (
        REDACTED not in value
        and not any(char.isspace() for char in value)
        and not (word.isalpha() and len(word) < _PLAIN_WORD_CHARS)
        and secret_looking(word)
    )


# A token's key in a browser's storage or a cookie's name (`token`, `authToken`, `jwt`, `sessionid`).
_TOKEN_KEY = re.compile(
    r"(?:^|[_.-]|(?<=[a-z0-9])(?=[A-Z]))(?i:token|jwt|session(?:[_-]?id)?|sid|auth|secret|password|credentials?|api[_-]?key)$"
)
# A column list and the first row of values: each value a quoted string, a number, NULL or a call.
_SQL_ITEM = re.compile(
    r"""\s*(?:'(?:[^'\\]|\\.|''){0,512}'|"(?:[^"\\]|\\.){0,512}"|[^,()'"]{0,128}(?:\([^()]{0,128}\))?)\s*"""
)
_MAX_COLUMNS = 64


def _inserted_value(match: re.Match[str], text: str) -> Span | None:
    """The first row's values of the columns that name a credential: from the first to the last."""
    columns = [column.strip().strip('`"[]') for column in match.group("columns").split(",")]
    wanted = [index for index, column in enumerate(columns[:_MAX_COLUMNS]) if _CREDENTIAL_KEY.search(column)]
    if not wanted:
        return None
    spans: list[Span] = []
    position = match.end()
    for index in range(min(len(columns), _MAX_COLUMNS)):
        item = _SQL_ITEM.match(text, position)
        if item is None:
            return None
        if index in wanted:
            raw = item.group()
            start = item.start() + len(raw) - len(raw.lstrip())
            end = item.end() - (len(raw) - len(raw.rstrip()))
            # A quoted literal only (not a placeholder, `?`, `:password`, `%s`, nor code); its quotes stay.
            quoted = end - start >= 2 and text[start] in "'\"" and text[end - 1] == text[start]
            if quoted and _looks_secret(text[start + 1 : end - 1]):
                spans.append((start + 1, end - 1))
        position = item.end()
        separator = text[position : position + 1]
        if separator != ("," if index < len(columns) - 1 else ")"):
            return None
        position += 1
    return (spans[0][0], spans[-1][1]) if spans else None


# What stands before an XML `value=` that names a credential: `key="ApiKey" ` or `name="password" `.
_ATTRIBUTE_NAME = re.compile(r"(?i:key|name)\s{0,4}=\s{0,4}[\"'](?P<name>[\w.:-]{1,128})[\"']\s{1,16}\Z")
# What stands before a WordPress salt's name: `define( '` and `SECURE_` or not.
_DEFINE = re.compile(r"(?i:define)\(\s{0,16}[\"'](?i:secure_)?\Z")
_LOOK_BACK = 192


def _attribute_value(match: re.Match[str], text: str) -> Span | None:
    """A `value` attribute's value after a `key` or `name` attribute naming a credential."""
    before = _ATTRIBUTE_NAME.search(text, max(0, match.start() - _LOOK_BACK), match.start())
    if before is None or _CREDENTIAL_KEY.search(before.group("name")) is None:
        return None
    return _value(match)


def _salt_value(match: re.Match[str], text: str) -> Span | None:
    """A WordPress salt's value, given to `define(`."""
    if _DEFINE.search(text, max(0, match.start() - 32), match.start()) is None:
        return None
    return _value(match)


# Each rule's literal is a word its text cannot do without, and not a common one (`name=` and
# `define` are in every other file: a text holding a rule's literal is read decoded, and more).
PAIR_RULES = (
    # `<add key="ApiKey" value="…"/>`, `<property name="password" value="…"/>`: found at `value=`.
    Rule(
        "xml-attribute-value",
        ("value=",),
        re.compile(r"(?i:value)\s{0,4}=\s{0,4}[\"']" + _VALUE + r"[\"']"),
        _attribute_value,
    ),
    # `<string name="api_key">…</string>`, `<entry key="password">…</entry>`.
    Rule(
        "xml-element-text",
        ("<string ", "<entry "),
        re.compile(
            r"<(?i:string|entry)\s[^<>]{0,128}?(?i:name|key)\s{0,4}=\s{0,4}[\"'](?P<name>[\w.:-]{1,128})[\"']"
            r"[^<>]{0,64}>(?P<text>[^\"'<>\n]{1,512})</"
        ),
        lambda match, text: _xml_text(match),
    ),
    Rule(
        "terraform-variable-default",
        ("variable",),
        re.compile(
            r"variable\s{1,16}\"(?P<name>[\w-]{1,128})\"\s{0,16}\{[^{}]{0,512}?\bdefault\s{0,16}=\s{0,16}\""
            + _VALUE
            + r"\""
        ),
        _named_value,
    ),
    Rule(
        "wordpress-salt",
        ("auth_key", "auth_salt", "logged_in_key", "logged_in_salt", "nonce_key", "nonce_salt"),
        re.compile(
            r"(?:auth|logged_in|nonce)_(?:key|salt)[\"']\s{0,16},\s{0,64}[\"'](?P<value>[^\"'\n]{8,512})[\"']", re.I
        ),
        _salt_value,
    ),
    Rule(
        "stored-token",
        ("setitem(", "set_cookie(", "setcookie(", "cookies.set(", ".cookie("),
        re.compile(
            r"(?i:setitem|set_cookie|setcookie|cookies\.set|\.cookie)\(\s{0,16}[\"'](?P<name>[\w.-]{1,64})[\"']"
            r"\s{0,16},\s{0,16}[\"'](?P<value>[^\"'\s]{8,4096})[\"']"
        ),
        lambda match, text: _value(match) if _TOKEN_KEY.search(match.group("name")) else None,
    ),
    Rule(
        "sql-insert-credential",
        ("insert into", "insert or ", "insert ignore", "replace into"),
        re.compile(
            r"(?:insert\s{1,16}(?:or\s{1,16}\w{1,16}\s{1,16}|ignore\s{1,16})?into|replace\s{1,16}into)\s{1,16}[\w.\"`\[\]]{1,128}\s{0,16}\((?P<columns>[^()]{1,2048})\)\s{0,16}values\s{0,16}\(",
            re.I,
        ),
        _inserted_value,
    ),
)


def _xml_text(match: re.Match[str]) -> Span | None:
    """An element's text when its name is a credential's and the text reads as a secret, not a label
    (an Android resource named `password` is often the field's label: `Passwort`, `Mot de passe`)."""
    if _CREDENTIAL_KEY.search(match.group("name")) is None:
        return None
    return match.span("text") if _looks_secret(match.group("text")) else None


_PLAIN_WORD_CHARS = 16  # a value of letters only shorter than this may be a word (`known_secrets`)
