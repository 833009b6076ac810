"""Credentials where a file format or a language names them: SQL's `IDENTIFIED BY '…'`, an XML
`<password>`, a `.netrc` line, Docker's `config.json` `auth`, OpenSSL's `-pass pass:…`, a Kubernetes
env entry. Each rule is scanned (its literal stands inside the match) and takes its `value` group."""

from __future__ import annotations

import re

from trajectory_compressor.summarize.encoded_secrets import decoded_text
from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value


def _named_value(match: re.Match[str], text: str) -> Span | None:
    """The `value` group, unless it is a placeholder (`${DB_PASS}`, `%(pw)s`) or a number."""
    value = match.group("value")
    return match.span("value") if credential_value(value) and len(value) >= 4 else None


def login_pair(match: re.Match[str], text: str) -> Span | None:
    """The `value` group when it is the base64 of `user:password` (not `"auth": "oauth2"`)."""
    decoded = decoded_text(match.group("value"))
    return match.span("value") if decoded is not None and ":" in decoded.strip(":") else None


# Credentials where a file format or a language names them (scanned: the literal is inside).
CONFIG_AND_SQL = (
    # SQL: `CREATE USER app IDENTIFIED BY '...'`, `ALTER ROLE app WITH [ENCRYPTED] PASSWORD '...'`,
    # `ALTER USER postgres PASSWORD '...'`, MySQL's `IDENTIFIED WITH mysql_native_password BY '...'`
    # and `SET PASSWORD FOR 'u'@'h' = '...'`.
    Rule(
        "sql-password",
        ("identified by", "identified with", "password", "set password"),
        re.compile(
            r"(?:identified[ \t]+(?:with[ \t]+\w{1,64}[ \t]+)?by|password"
            r"|set[ \t]+password(?:[ \t]+for[ \t]+[^=\n]{1,128}?)?[ \t]*=)[ \t]+'(?P<value>[^'\n]{1,256})'"
        ),
        _named_value,
        folded=True,
        scan=True,
    ),
    # XML and HTML-like config: `<password>...</password>`, `<db:apiKey>...</db:apiKey>`.
    Rule(
        "xml-password",
        ("password>", "passwd>", "passphrase>", "secret>", "apikey>", "api_key>", "token>"),
        re.compile(
            r"<(?P<tag>[\w:.-]{0,32}(?:password|passwd|passphrase|secret|api[_-]?key|token))>(?P<value>[^<\s]{1,256})</(?P=tag)>"
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
        login_pair,
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
