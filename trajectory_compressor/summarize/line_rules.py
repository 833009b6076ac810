"""The line rules: a credential known by the line it stands on, with no name beside it.

A `.pgpass` line (`host:port:database:user:password`, as `cat ~/.pgpass` shows it or `echo '…'
>> ~/.pgpass` writes it) names nothing: its shape does. Five fields, the second a port or `*`,
alone on their line or as one token; what else reads `a:b:c:d:e` has blanks in it (a compiler's
`src/a.c:12:5: error: …`), more fields (`/etc/passwd`, IPv6), fewer (times, `image:tag`) or a
name where the port goes (Maven's `group:artifact:jar:1.0:compile`).

A rule anchors at a literal (`:` and a digit, for a port) and looks around it within a bounded
window, so the work stays linear in the text.
"""

from __future__ import annotations

import re
import string

from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value, name_start

_QUOTES = "\"'`"
# A quote that closes the string holding the text (`{"out": "…:pw", "code": 0}` read decoded):
# one followed by a blank, the end, or what follows a JSON or code string.
_CLOSING_QUOTE = re.compile(r"[\"'`](?=[\s,;)\]}]|\Z)")


def _value_end(text: str, start: int, end: int, quote: str) -> int | None:
    """Where a value found at `text[start:end]` really ends: at the quote that opened its token,
    or at a quote closing the string around the text; None when the token goes on past `end`
    (another field: `a:b:c:d:e:f`)."""
    if quote:
        found = text.find(quote, start, end)
        if found >= 0:
            return found
    else:
        closing = _CLOSING_QUOTE.search(text, start, min(len(text), end + 1))
        if closing is not None and closing.start() < end:
            return closing.start()
    return end if end == len(text) or text[end].isspace() else None


def _pgpass_password(match: re.Match[str], text: str) -> Span | None:
    """The password of a `.pgpass` line whose port ends where the match starts: the port (digits
    or `*`) after a `:`, and the host before it, which must start the line or a token (after a
    blank or a quote) and not be a number (`12:30:45:…`)."""
    port = match.start()
    if text[port] != "*":
        while port and match.start() - port < 4 and text[port - 1].isdigit():
            port -= 1
    if text[port - 1 : port] != ":":
        return None
    host_start = name_start(text, port - 1, also=".-*", limit=253)
    host = text[host_start : port - 1]
    if not host or host.isdigit() or ("*" in host and host != "*"):
        return None
    before = text[host_start - 1] if host_start else "\n"
    if not before.isspace() and before not in _QUOTES:
        return None
    start, end = match.span("value")
    value_end = _value_end(text, start, end, before if before in _QUOTES else "")
    if value_end is None or not credential_value(text[start:value_end]):
        return None
    return start, value_end


# The end of a port and the start of a database name (`3:a`, `*:*`): rarer than a colon and a
# digit, which every time of day holds.
_PORT_ENDS = tuple(f"{end}:{first}" for end in "0123456789*" for first in string.ascii_lowercase + "_*")


LINE_RULES = (
    # A `.pgpass` line, `host:port:database:user:password`, on any port (pgbouncer's 6432,
    # Supabase's 6543) or a wildcard: anchored at the port's last character and the database's
    # first, the port and host looked for behind it (`_pgpass_password`). `\:` is a colon in a password.
    Rule(
        "pgpass-line",
        _PORT_ENDS,
        re.compile(r"[\d*]:[\w.*-]{1,64}:[\w.*@-]{1,64}:(?P<value>(?:\\\S|[^:\s\\]){1,256}+)"),
        _pgpass_password,
    ),
)
