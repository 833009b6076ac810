"""The credentials a base URL carries, and the URL shown without them.

A base URL can carry the endpoint's secret in four places: as user and password
(`https://user:pass@host/v1`, sent as HTTP Basic auth), as the user alone (`https://TOKEN@host`),
in its query (an Azure Function's `?code=`, a gateway's `?key=`), and in its path (a gateway that
takes the key as a path segment: `https://gw.example.com/key/<KEY>/v1`, `https://host/v1/sk-.../`).
`url_secrets` gives each in every form it travels in, for `redact.scrub` to remove from anything
we write (an error, a log line, `--json`, the report): an aiohttp error quotes the whole URL a
request went to. `display_url` shows a URL with each of them masked.
"""

from __future__ import annotations

import re
from base64 import b64encode
from contextlib import suppress
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from trajectory_compressor.summarize.redact import REDACTED, find_secrets, redact_secrets, scrub
from trajectory_compressor.summarize.secret_rules import high_entropy


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials embedded in a URL, in every form they travel in, to be scrubbed.

    A query parameter named as a credential (`?code=…`, `?key=…`, `?sig=…`) is one, raw and
    decoded; so is a path segment that is one (`_path_secrets`).

    `http://user:p%40ss@host` is sent as HTTP Basic auth, `base64("user:p@ss")`, and a server
    may echo the header back in an error or even in a completion: the password raw and
    percent-decoded, and the Basic value of the decoded and the raw pair, are all secrets. The
    user name alone is not (scrubbing a short one, "api", would garble messages), except in a
    URL without a password (`https://TOKEN@host`), where it is the credential.
    """
    if not url:
        return ()
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return ()
    forms = _query_secrets(parts.query) + _path_secrets(parts.path) + _fragment_secrets(parts.fragment)
    if user is None and password is None:
        return tuple(dict.fromkeys(forms))
    user, password = user or "", password or ""
    for u, p in ((user, password), (unquote(user), unquote(password))):
        if p:
            forms += [p, quote(p, safe="")]
        elif len(u) >= 8:
            forms.append(u)
        pair = f"{u}:{p}".encode("utf-8", errors="replace")
        forms.append(b64encode(pair).decode("ascii").rstrip("="))  # unpadded: matches with or without
        with suppress(UnicodeEncodeError):  # aiohttp encodes Basic credentials as latin-1
            forms.append(b64encode(f"{u}:{p}".encode("latin-1")).decode("ascii").rstrip("="))
    return tuple(dict.fromkeys(form for form in forms if form))


# A query parameter of the base URL that carries a credential: an Azure Function's `code`, a
# gateway's `key` or `subscription-key`, a SAS `sig`, a `token`, ... (`api-version` is none).
# Also a path segment naming the one after it (`/key/<KEY>/`, `/token/<TOKEN>/`).
_CREDENTIAL_NAME = re.compile(
    r"(?:^|[_.-])(?:key|apikey|code|sig|signature|secret|token|password|passwd|pwd|auth|credentials?)$", re.IGNORECASE
)


def _query_secrets(query: str) -> list[str]:
    """The values of a URL's query parameters named as credentials, raw and percent-decoded: a
    user's base URL carries one where a gateway takes it there, and it is as much the endpoint's
    secret as a password in the URL."""
    forms: list[str] = []
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if value and _CREDENTIAL_NAME.search(unquote(name)):
            forms += [value, unquote(value)]
    return forms


# A path segment's pieces between separators: a random one is a key's body, not a name's word.
_SEGMENT_PIECES = re.compile(r"[-_.~]")
_RANDOM_PIECE_CHARS = 16
# `/auth/openai`, `/token/v1`, `/claude-code/anthropic-proxy`: lower-case words, a version, not a key
_PLAIN_SEGMENT = re.compile(r"[a-z]+(?:[-_][a-z]+)*|v\d+(?:alpha|beta)?\d*")
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def _secret_segment(segment: str, after_name: bool) -> bool:
    """Whether a path segment (percent-decoded) is a credential: one after a segment named as one
    (`/key/<KEY>`, not words nor a version: `/auth/v1`, `/auth/openai-compat`); one a rule knows by its shape (`sk-...`,
    `AKIA...`); or a random one, a UUID or one with a random piece of 16 characters or more
    (`Zk3pQ9xLm2Rt7vWn4bYc`, a hex key). A model or deployment name (`claude-3-5-sonnet-20241022`,
    `Qwen2.5-Coder-32B-Instruct`), random as it may look whole, is words between dashes, none that
    long: it stays."""
    if not segment:
        return False
    if after_name and len(segment) >= 8 and _PLAIN_SEGMENT.fullmatch(segment) is None:
        return True
    if find_secrets(segment) or _UUID.fullmatch(segment):
        return True
    if "=" in segment and _query_secrets(segment.replace(";", "&")):  # `/key=<KEY>/`, `/v1;key=<KEY>`
        return True
    longest = max(_SEGMENT_PIECES.split(segment), key=len)
    return len(longest) >= _RANDOM_PIECE_CHARS and high_entropy(longest)


def _secret_segments(path: str) -> list[bool]:
    """For each `/`-separated segment of `path`, whether it is a credential (`_secret_segment`)."""
    segments = [unquote(segment) for segment in path.split("/")]
    return [
        _secret_segment(segment, index > 0 and bool(_CREDENTIAL_NAME.search(segments[index - 1])))
        for index, segment in enumerate(segments)
    ]


def _path_secrets(path: str) -> list[str]:
    """The base URL's path segments that are credentials (`_secret_segment`), raw and decoded: a
    gateway that takes its key in the path (`https://gw.example.com/key/<KEY>/v1`) has it printed
    wherever the URL is, an aiohttp error's included."""
    forms: list[str] = []
    for segment, secret in zip(path.split("/"), _secret_segments(path), strict=True):
        if secret:
            forms += [segment, unquote(segment), *_query_secrets(segment.replace(";", "&"))]
    return forms


def _fragment_secrets(fragment: str) -> list[str]:
    """The credentials of a URL's fragment (never sent, but printed with the URL): a parameter
    named as one (`#access_token=…`, as OAuth's implicit flow writes it) or a random one."""
    forms = _query_secrets(fragment)
    if not forms and _secret_segment(unquote(fragment), after_name=False):
        forms = [fragment, unquote(fragment)]
    return forms


def display_url(url: str | None) -> str:
    """`url` without user and password, its credentials in query and path masked, safe for logs
    and reports.

    `https://user:pass@host:8443/v1` -> `https://host:8443/v1`;
    `https://gw.example.com/key/<KEY>/v1` -> `https://gw.example.com/key/[REDACTED]/v1`. A URL that
    cannot be parsed is shown as `<invalid url>` rather than risk printing what might be a credential.
    """
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        path = "/".join(
            REDACTED if secret else segment
            for segment, secret in zip(parts.path.split("/"), _secret_segments(parts.path), strict=True)
        )
        shown = urlunsplit((parts.scheme, netloc, path, parts.query, parts.fragment))
    except ValueError:
        return "<invalid url>"
    # `?code=...`, `?api_key=...`, `#access_token=...`
    return redact_secrets(scrub(shown, _query_secrets(parts.query) + _fragment_secrets(parts.fragment)))
