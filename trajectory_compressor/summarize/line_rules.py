"""The line rules: a credential known by the line it stands on, with no name beside it.

A `.pgpass` line (`host:port:database:user:password`, as `cat ~/.pgpass` shows it or `echo '…'
>> ~/.pgpass` writes it) names nothing: its shape does. Five fields, the second a port or `*`,
alone on their line or as one token; what else reads `a:b:c:d:e` has blanks in it (a compiler's
`src/a.c:12:5: error: …`), more fields (`/etc/passwd`, IPv6), fewer (times, `image:tag`) or a
name where the port goes (Maven's `group:artifact:jar:1.0:compile`).

A password typed after a prompt (`Password:`, `Enter password:`, `[sudo] password for alice:`,
`alice@host's password:`, `Enter PEM pass phrase:`) stands alone on the next line, as a
terminal's transcript or a note shows it (`Password:` / `hunter2`): that line's one token is the
answer, a plain word too. A prompt is told from code (`if not password:` / `return`) by its words
and from YAML's key with a schema under it by the line after it: a blank one, a sentence
(`Sorry, try again.`), another prompt, a shell's prompt (`root@web-1:~#`) or a word a schema
holds (`Required`) is no answer.

Each rule anchors at a literal (where a port ends and a database name starts, `3:a`; a prompt's
`password`) and looks around it within a bounded window, so the work stays linear in the text.
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


# The few words before a prompt's name (`Enter`, `[sudo]`, `alice@host's`, `(current) UNIX`);
# code's keywords among them make the line code (`if not password:`).
_PROMPT_PREFIX = re.compile(r"[ \t]*(?:\S{1,64}[ \t]+){0,5}")
_CODE_WORDS = frozenset(
    {
        *("if", "elif", "while", "not", "and", "or", "def", "class", "return", "assert", "else", "in", "is"),
        *("lambda", "with", "match", "case", "async", "await", "except", "for", "from", "import", "yield"),
        *("function", "fn", "let", "const", "var", "raise", "del", "try"),
    }
)
_WORDS = re.compile(r"[a-z]+")
# What follows a prompt alone on a line and is no answer: a shell's prompt (`root@web-1:~#`,
# `bash-5.1#`, `mysql>`), a schema's word, a key, a control character as shown.
_SHELL_PROMPT = re.compile(r"\S*@\S*[$#%>]|[\w.]*sh-[\d.]+[$#]|[a-z]+=?[#>]")
_NOT_ANSWERS = frozenset(
    {
        *("required", "optional", "none", "null", "nil", "true", "false", "yes", "no", "string", "str"),
        *("hidden", "empty", "unset", "return", "break", "continue", "^c", "^d"),
    }
)


def _prompted_password(match: re.Match[str], text: str) -> Span | None:
    """The one token on the line after a password prompt: the prompt's line holds a few words
    before its name and no code (it starts after a line break or a quote, the start of the
    string holding the text), the token's line nothing else (but a quote closing that string)."""
    low = max(0, match.start() - 256)
    line_start = max(text.rfind(char, low, match.start()) for char in "\n\r\"'`") + 1
    if line_start == 0 and low > 0:
        return None
    prefix = text[line_start : match.start()]
    if _PROMPT_PREFIX.fullmatch(prefix) is None or _CODE_WORDS.intersection(_WORDS.findall(prefix.lower())):
        return None
    start, end = match.span("value")
    value_end = _value_end(text, start, end, "")
    if value_end is None:
        return None  # longer than a password
    line_end = text.find("\n", end, end + 1024)
    if value_end == end and text[end : end + 1024 if line_end < 0 else line_end].strip():
        return None  # words after it: a sentence
    if value_end - start > 2 and text[start] in _QUOTES and text[value_end - 1] == text[start]:
        start, value_end = start + 1, value_end - 1  # `'hunter2'`: the quotes stay
    value = text[start:value_end]
    if not _answer(value):
        return None
    return start, value_end


def _answer(value: str) -> bool:
    """Whether a token alone after a prompt can be what was typed: a credential's value (or a
    PIN of four digits or more), with a letter or a digit, not a key or a prompt (`su:`), a path,
    a URL, a shell's prompt or a word a schema or a terminal shows there."""
    return (
        (credential_value(value) or (value.isdigit() and len(value) >= 4))
        and any(char.isalnum() for char in value)
        and not value.endswith(":")
        and value[0] not in "/~"
        and "://" not in value
        and value.lower() not in _NOT_ANSWERS
        and _SHELL_PROMPT.fullmatch(value) is None
    )


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
    # A password typed after a prompt, alone on the next line (`Password:` / `hunter2`): the name,
    # ` for <who>` (`[sudo] password for alice:`), ` (again)` or ` again`, `:` ending the line.
    Rule(
        "prompted-password",
        ("password", "passphrase", "pass phrase"),
        re.compile(
            r"(?:password|passphrase|pass phrase)(?![\w-])"
            r"(?:[ \t]+(?:for[ \t]+[^\n]{1,128}?|\([^\n()]{1,32}\)|again))?"
            r"[ \t]*:[ \t]*\r?\n[ \t]*(?P<value>\S{1,256}+)"
        ),
        _prompted_password,
        folded=True,
    ),
)
