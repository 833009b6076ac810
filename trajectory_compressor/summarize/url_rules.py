"""A URL's password holding an unencoded `/`, `?` or `#`: `https://alice:pa/ss@git.example.com/…`,
`postgres://u:p?w#d@db:5432/x`.

Each of those characters ends a URL's authority, so `secret_rules.URL_PASSWORD` (the password up
to the authority's last `@`) stops at it and finds no `@`. A generated password pasted into a
`DATABASE_URL` is rarely encoded, and the clients that split a URL at its last `@` accept it.
So this rule reads the password to the last `@` of the URL's token (up to a blank, a quote or
`<>`) that a host follows: a name, dotted or not, an IP or `[IPv6]`, a port or not, then the
path, the query, the fragment or the token's end. The user comes right after `scheme://`, with
no `/` before its colon (`https://github.com/a:b/c@d` is a path), digits alone before the
first `/`, `?` or `#` are a port (`http://localhost:8080/users/bob@example.com`), and an `@`
right after a `/` starts a path's segment (`/@scope/pkg`, `/@alice`).

Credentials and an `@` later in the same URL (`https://u:…@host/p?to=a@b.com`) are masked to
that last `@`, the host with them: a little of the URL lost, rather than a password whose `@`
and `/` both went unencoded.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value

_DELIMITER = re.compile(r"[/?#]")
# What follows the `@` that ends the password: a host, a port, then the rest of the URL or its end.
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]{2,45}\]|[\w.-]{1,253})(?::\d{1,5})?(?=[/?#),;\]]|\Z)")


def _delimited_password(match: re.Match[str], text: str) -> Span | None:
    """From after `user:` to the token's last `@` that a host follows, when a `/`, `?` or `#`
    comes before that `@` and what precedes the first of them is not a port."""
    start, end = match.span("rest")
    delimiter = _DELIMITER.search(text, start, end)
    if delimiter is None or text[start : delimiter.start()].isdigit():
        return None  # no delimiter: `URL_PASSWORD`'s; a port then a path
    at = text.rfind("@", delimiter.start(), end)
    while at > delimiter.start():
        if text[at - 1] != "/" and _HOST.match(text, at + 1, end) is not None:  # `/@scope`: a path's
            return (start, at) if credential_value(text[start:at]) else None
        at = text.rfind("@", delimiter.start(), at)
    return None


URL_RULES = (
    Rule(
        "url-password-delimited",
        ("://",),
        re.compile(r"://[^\s:/@'\"<>\[\]`]{0,256}:(?P<rest>[^\s'\"<>`]{1,512}+)"),
        _delimited_password,
    ),
)
