"""Credentials given to an HTTP client's auth option: HTTPie's and xh's `-a`, curl's `-u` in all its
spellings.

`secret_rules` masks `curl -u user:password` and `--user user:password`, spaced. Left to it,
HTTPie's `http -a alice:pw URL` (`--auth alice:pw`, `--auth=alice:pw`, xh's the same), a bearer
token given to `-a` (`http -A bearer -a TOKEN`), and curl's other spellings (`-ualice:pw` glued,
`-sSfu alice:pw` after other flags, `--proxy-user alice:pw`, `-u 'alice:pass word'` quoted with a
space) reached prompts and summaries.

`-a` is a password only for the HTTP clients (`ls -a`, `rsync -a host:/src`, `git commit -a`), and a
short flag glued to curl's `-u` only for curl, so those rules look for the program on the value's
line (or the lines a trailing `\\` continues), at most `_LOOKBACK` characters back.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value, high_entropy

_LOOKBACK = 1024  # how far from a value its command's program is looked for
# A program's name standing alone, or ending a path (`/opt/homebrew/bin/http`, `./xh`,
# `C:\tools\curl.exe`); not inside a word (`pyhttp`, `http.server`, `my-curl`).
_PROGRAM_START = r"(?:(?<![\w./\\-])|(?<=[/\\]))"
_HTTP_CLIENT = re.compile(_PROGRAM_START + r"(?:https?|xhs?|httpie)(?=[ \t])")
_CURL = re.compile(_PROGRAM_START + r"curl(?:\.exe)?(?=[ \t])")
_BEARER = re.compile(r"(?:-A|--auth-type)[ \t=]{1,4}[\"']?bearer")
# A value after the option: quoted (spaces and all), or a bare word (not the next option).
_VALUE = r"""(?:(?P<quote>["'])(?P<quoted>[^"'\n]{1,256})(?P=quote)|(?P<bare>[^\s"'`|;&-][^\s"'`|;&]{0,255}))"""

# The last text's occurrences of each pattern above: found once per text, whatever the number of
# options in it (a text of a million `-a x:y` looks each program up by bisection, not by a scan).
_FOUND: dict[re.Pattern[str], tuple[str, list[int]]] = {}


def _occurrences(pattern: re.Pattern[str], text: str) -> list[int]:
    known = _FOUND.get(pattern)
    if known is not None and known[0] is text:
        return known[1]
    positions = [match.start() for match in pattern.finditer(text)]
    _FOUND[pattern] = (text, positions)  # one assignment: another thread sees the old or the new pair
    return positions


# What ends a command on its line (`&&`, `||`, `|`, `;`), and the quoted arguments that hide one
# (`-H 'Cookie: a=b; c=d'`, a URL's `&&`): a separator found outside quotes ends the command.
_SEPARATOR = re.compile(r""""[^"\n]*"|'[^'\n]*'|(?P<separator>&&|\|\|?|;)""")


def _one_command(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is within one command: every line break in it continued (the line
    before ends in a `\\`, or the next is indented: a decoded view may have lost the `\\`), and
    no `&&`, `||`, `|` or `;` outside quotes (`http x && rsync -a host:/src`: rsync's `-a`)."""
    if end - start > _LOOKBACK:
        return False
    if any(found.group("separator") for found in _SEPARATOR.finditer(text, start, end)):
        return False
    position = text.find("\n", start, end)
    while position >= 0:
        continued = text[position - 1 : position] == "\\" or text[position - 2 : position] == "\\\r"
        if not continued and text[position + 1 : position + 2] not in (" ", "\t"):
            return False
        position = text.find("\n", position + 1, end)
    return True


def _in_command(pattern: re.Pattern[str], text: str, index: int, *, after: bool = False) -> bool:
    """Whether `pattern` occurs in the command `text[index]` stands in: before it (or `after` it too)."""
    positions = _occurrences(pattern, text)
    nearest = bisect_right(positions, index)
    if nearest and _one_command(text, positions[nearest - 1], index):
        return True
    return after and nearest < len(positions) and _one_command(text, index, positions[nearest])


def _value(match: re.Match[str]) -> tuple[int, int]:
    group = "quoted" if match.group("quote") else "bare"
    return match.span(group)


def _password_of(text: str, start: int, end: int) -> tuple[Span | None, bool]:
    """In the value `text[start:end]`: the password of `user:password`, and whether the value is
    `user:password` at all. None for a URL, a placeholder or uid:gid (`-u 1000:1000`)."""
    value = text[start:end]
    user, colon, password = value.partition(":")
    if not colon or "://" in value or not credential_value(password) or user.isdigit():
        return None, bool(colon)
    return (start + len(user) + 1, end), True


def _httpie_auth(match: re.Match[str], text: str) -> Span | None:
    """`http -a user:password` (HTTPie, xh), `--auth` and `--auth=` in any program: the password;
    a bearer token whole (`-A bearer` in the command, or random-looking)."""
    start = match.start()
    if start and not text[start - 1].isspace():
        return None
    value_start, value_end = _value(match)
    span, paired = _password_of(text, value_start, value_end)
    if not paired:
        value = text[value_start:value_end]
        token = credential_value(value) and (high_entropy(value) or _in_command(_BEARER, text, start, after=True))
        span = (value_start, value_end) if token else None
    if span is None or match.group("option") == "--auth":
        return span
    return span if _in_command(_HTTP_CLIENT, text, start) else None


def _curl_user(match: re.Match[str], text: str) -> Span | None:
    """curl's `-u` glued or after other flags (`-ualice:pw`, `-sSfu alice:pw`), `--proxy-user`, a
    quoted `user:pass word`: the password, in a curl command."""
    if match.start() and not text[match.start() - 1].isspace():
        return None
    span, _ = _password_of(text, *_value(match))
    return span if span is not None and _in_command(_CURL, text, match.start()) else None


HTTP_AUTH_RULES = (
    Rule(
        "httpie-auth",
        ("-a ", "--auth ", "--auth="),
        re.compile(r"(?P<option>-a|--auth)(?:[ \t]{1,4}|=)" + _VALUE),
        _httpie_auth,
    ),
    # Gated by `curl`, scanned once: the option's spellings start with `-`, no literal of their own.
    Rule(
        "curl-user",
        ("curl",),
        re.compile(r"-(?:[A-Za-z]{0,16}[uU]|-(?:proxy-)?user)(?:[ \t]{1,4}|=)?" + _VALUE),
        _curl_user,
        scan=True,
    ),
)
