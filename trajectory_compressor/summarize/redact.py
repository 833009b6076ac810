"""Masking credentials in text that leaves the machine, and in text we write down.

Two different jobs live here:

* `redact_secrets` masks *patterns* of well-known credentials (API keys, tokens, private keys,
  passwords in assignments and URLs) in trajectory text before it is sent to the summarizing
  endpoint, and in the summaries that come back. Trajectories are often recorded from real
  agents that printed their environment; a training set should not carry those keys further.
* `scrub` removes *known* secrets (our own API key, a password in the base URL) from any text
  that we put into an error message, a log line, a metric or the cache. `display_url` shows a
  URL without its credentials.

The patterns are precompiled and deliberately conservative for the fuzzy cases (assignments,
Bearer headers): ordinary code such as `password = getpass()` or `api_key=args.api_key` must
pass through untouched, or the summaries of coding trajectories would fill with noise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[REDACTED]"

# Whole-match replacements: the match is a credential by its shape alone.
_TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    # PEM private key blocks (RSA, EC, OPENSSH, ENCRYPTED, plain PKCS#8...).
    re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
        re.DOTALL,
    ),
    # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-api03-), OpenRouter (sk-or-v1-) style keys.
    # A digit is required so that long hyphenated words ("sk-learn-compatible-...") survive.
    re.compile(r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}"),
    # GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens.
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    # AWS access key ids (long-term AKIA, temporary ASIA).
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    # Slack bot/app/user/refresh/legacy tokens.
    re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}"),
    # Google API keys.
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
    # Hugging Face tokens.
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),
    # JSON Web Tokens: header.payload.signature, both first parts base64url of a JSON object.
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
)

# The base64 body and END line of a PEM key whose BEGIN line was cut away (a transcript cut).
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_PEM_BODY_LINE = re.compile(r"[A-Za-z0-9+/=]*|[A-Za-z-]+:.*")  # base64, or Proc-Type:/DEK-Info: headers

# `scheme://user:password@host` -> keep the user, mask the password. Bounded runs keep this
# linear on long dotted or hyphenated text.
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,30}://[^\s:/@'\"<>]{0,256}:)([^\s/@'\"<>]{1,256})(@)")

# `Authorization: Bearer <token>`; a digit is required so prose ("bearer tokens are...") survives.
_BEARER = re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z0-9._~+/=-]*[0-9])([A-Za-z0-9._~+/=-]{8,})")

# `password = "..."`, `"api_key": "..."`, `DB_PASSWORD=...`, `client_secret: ...`.
# The key name must END with one of these words (`DB_PASSWORD=` matches from `PASSWORD`); the
# value is judged by `_assignment_value`. No prefix is matched: scanning `\w*` before the
# keyword at every word start made this pattern the slowest by far.
# The leading lookahead on the possible first letters lets the engine skip most positions fast.
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?=[psacrb])
    (?P<key>(?:pass(?:word|wd|phrase)|secret(?:[_-]?(?:key|token))?|api[_-]?(?:key|token)|apikey
          |access[_-]?(?:key|token)|private[_-]?key|client[_-]?secret|(?:auth|refresh|bearer|session)[_-]?token)
        ["']?\s*(?::=|=|:)[ \t]*)
    (?:(?P<quote>["'])(?P<quoted>[^"'\n]*)(?P=quote)
      |(?P<bare>[^\s"'`,;]+))
    """
)

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
    }
)
_CODE_CHARS = frozenset("()[]{}<>$%*=")
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)*")


def _assignment_value(value: str, quoted: bool) -> bool:
    """True when `value` (right of `password=`) looks like a literal credential.

    Quoted: any literal of 4+ characters without spaces (spaces mean a description or a
    message: `"password": "must be 8 characters"`). Bare: it must not look like code — no
    calls, indexing, templating or placeholders, and not a plain (dotted) identifier without
    digits, which is a variable (`password=password`, `api_key=self.api_key`).
    """
    stripped = value.rstrip(".")
    if len(stripped) < 4 or stripped.lower() in _NOT_VALUES:
        return False
    if stripped[0] in _CODE_CHARS or REDACTED in stripped:
        return False
    if quoted:
        return not any(ch.isspace() for ch in stripped)
    if any(ch in _CODE_CHARS for ch in stripped):
        return False
    return _DOTTED_IDENTIFIER.fullmatch(stripped) is None


def _replace_assignment(match: re.Match[str]) -> str:
    quoted = match.group("quote") is not None
    value = match.group("quoted") if quoted else match.group("bare")
    if not _assignment_value(value, quoted):
        return match.group(0)
    if quoted:
        quote = match.group("quote")
        return f"{match.group('key')}{quote}{REDACTED}{quote}"
    trailing = value[len(value.rstrip(".")) :]  # keep a sentence's full stop
    return f"{match.group('key')}{REDACTED}{trailing}"


def _replace_url_password(match: re.Match[str]) -> str:
    password = match.group(2)
    if password == REDACTED or password[0] in "{$%<":  # already masked, or a template placeholder
        return match.group(0)
    return f"{match.group(1)}{REDACTED}{match.group(3)}"


def _mask_orphan_pem_ends(text: str) -> str:
    """Mask `...base64...\n-----END ... PRIVATE KEY-----` left without its BEGIN line.

    Done by walking back line by line from each END marker (found with a literal search)
    rather than by a regex over base64 lines, which would be quadratic on large blobs.
    """
    if "PRIVATE KEY-----" not in text:
        return text
    pieces: list[str] = []
    position = 0
    for match in _PEM_END.finditer(text):
        start = match.start()
        while start > position and text[start - 1] == "\n":  # walk back over whole body lines
            newline = start - 1
            line_start = max(position, text.rfind("\n", position, newline) + 1)
            line = text[line_start:newline].strip()
            if not line or _PEM_BODY_LINE.fullmatch(line) is None:
                break
            start = line_start
        pieces += [text[position:start], REDACTED]
        position = match.end()
    pieces.append(text[position:])
    return "".join(pieces)


# A literal each pattern cannot match without (lower-case ones are looked for in the lowered
# text): `in` scans at memory speed, while a pattern starting with `\b` or a look-behind makes
# `re` try every position. Most text holds none of them, so most patterns never run.
_TOKEN_LITERALS: tuple[tuple[str, ...], ...] = (
    ("PRIVATE KEY-----",),
    ("sk-",),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ("github_pat_",),
    ("AKIA", "ASIA"),
    ("xox",),
    ("AIza",),
    ("hf_",),
    ("eyJ",),
)
_ASSIGNMENT_STEMS = ("pass", "secret", "api", "access", "private", "client", "auth", "refresh", "bearer", "session")
# Under IGNORECASE, `re` also matches "ı" (dotless i) for i and "ſ" (long s) for s; lower() keeps them.
_FOLD = str.maketrans({"ı": "i", "ſ": "s"})


def redact_secrets(text: str) -> str:
    """Mask common credential patterns in `text` with `[REDACTED]`.

    Idempotent: redacting twice gives the same text.
    """
    if not text:
        return text
    for pattern, literals in zip(_TOKEN_PATTERNS, _TOKEN_LITERALS, strict=True):
        if any(literal in text for literal in literals):
            text = pattern.sub(REDACTED, text)
    text = _mask_orphan_pem_ends(text)
    if "://" in text:
        text = _URL_PASSWORD.sub(_replace_url_password, text)
    lowered = text.lower()
    if not lowered.isascii():
        lowered = lowered.translate(_FOLD)
    if "bearer" in lowered:
        text = _BEARER.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    if any(stem in lowered for stem in _ASSIGNMENT_STEMS):
        text = _ASSIGNMENT.sub(_replace_assignment, text)
    return text


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each known secret in `text` with `[REDACTED]`.

    Used on anything we write into an error, a log or a metric, whatever its origin (a server
    may echo our Authorization header in its error body).
    """
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The password embedded in a URL, to be scrubbed from messages.

    The user name is not a secret, and scrubbing a short one ("api") would garble messages.
    """
    if not url:
        return ()
    try:
        parts = urlsplit(url)
        return (parts.password,) if parts.password else ()
    except ValueError:
        return ()


def display_url(url: str | None) -> str:
    """`url` without user and password, safe for logs and reports.

    `https://user:pass@host:8443/v1` -> `https://host:8443/v1`. A URL that cannot be parsed is
    shown as `<invalid url>` rather than risk printing what might be a credential.
    """
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        shown = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return "<invalid url>"
    return redact_secrets(shown)  # `?api_key=...` in the query string
