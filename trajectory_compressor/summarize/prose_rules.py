"""The prose rules: a password named in a sentence, not assigned (`the admin password is …`).

Agents and users write credentials into messages and logs as English: `my password is …`,
`login failed for user admin with password …`, `password for root: …`, `the secret is …`,
`use passphrase …`, `set the password to …`, `credentials: admin / …`. No shape gives these
away and no `=` binds them, so a rule reads the words: a credential's name (`password`,
`passwd`, `passphrase`, `pwd`, `secret`, `secret key`), a linking word (`is`, `was`, `of`,
`to`, `set to`, or `:` / `=` after `for <user>`), then the value; after `password` and
`passphrase` the value may follow at once (`ssh … password …`).

English says the same words of everything else (`the password is correct`, `password is
required`, `reset your password via the link`), so the value must look like a secret: six
characters or more with a digit, a symbol or a capital inside (not a CamelCase name), and not
code, a placeholder, a path, a URL, a measure (`12-characters`) or a hash's name
(`sha256-hashed`). A password of plain lower-case words (`correcthorse`) passes: it reads
like the prose around it. `password: …` and `password = …` with nothing between are the
assignment rules' (`assignment_rules`), which know YAML's and code's forms.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.assignment_rules import assignment_value
from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value, group_span

# `for root`, `for user admin`, `for 'https://bob@github.com'`, `for the db account`.
_FOR_USER = (
    r"""(?P<for>[ \t]+for[ \t]+(?:'[^'\n]{1,256}'|"[^"\n]{1,256}"|[^\s:'"]{1,64}(?:[ \t]+[^\s:'"]{1,64}){0,2}?))"""
)
_SET_TO = r"(?:(?:is|was|has[ \t]+been|have[ \t]+been|now)[ \t]+)?(?:set|changed|reset|updated)[ \t]+to"
# A linking word (then a blank), or `:` / `=`: these only after `for <user>` (`_named_value`).
_LINK = r"(?:[ \t]*[:=]|[ \t]+(?P<word>is[ \t]+now|" + _SET_TO + r"|is|was|of|to)(?:[ \t]*:)?(?=[ \t]))"
# A bare value starts with none of what `secret_looking` refuses first (an option, a path, a
# placeholder): the regex fails there, at no cost (`--password --password …`).
_VALUE = r"""(?:(?P<q>['"`])(?P<quoted>[^'"`\n]{1,256})(?P=q)|(?P<bare>[^\s'"`/~.@!&#$<{\[(*=-][^\s'"`]{0,255}))"""
# `for <user>` belongs to the link: without one (`password for root from 10.0.0.1`) no value.
_NAME = r"(?P<name>pass(?:word|wd|phrase)|pwd|secret(?:[ _-]?key)?)"
_NAMED = re.compile(_NAME + r"(?P<link>" + _FOR_USER + r"?" + _LINK + r")?[ \t]+" + _VALUE)
# `credentials: admin / …`, `credentials are admin:…`.
_PAIR = re.compile(
    r"credentials?(?:[ \t]*[:=]|[ \t]+(?:are|is)(?:[ \t]*:)?)[ \t]*[\w.@+-]{1,64}[ \t]*[/:][ \t]*" + _VALUE
)

_NOT_FIRST = "-/~.@!&#"  # an option, a path, a file (`@file`), YAML's tags and anchors
_TRAILING = ".,;:!?"  # a sentence's punctuation after a bare value
_OPENERS = {")": "(", "]": "[", "}": "{", ">": "<"}
# Words about a password, not one: a hash's, a cipher's or a system's name (`sha256-hashed`,
# `aes-256-cbc`, `base64`, `k8s`), read as a word's hyphen; a measure (`12-characters`,
# `8chars`) or a version (`v1.2.3`); words, a capital first or all capitals, or a name in code
# (`NotImplemented`, `SecretStr`).
_TECHNICAL = re.compile(
    r"(?<![a-z0-9])(?:(?:sha|md|base|utf|aes|rsa|argon|pbkdf|crc|hmac|ipv|tls|ssl|http|ed|x|oauth|gpt)-?\d{1,5}"
    r"|k8s|s3|ec2|2fa|i18n)"
)
_MEASURE = re.compile(r"\d{1,3}\+?-?[a-z]+|v?\d{1,4}(?:\.\d{1,4})+[\w.-]*")
_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+|[A-Z]?[a-z]+(?:[A-Z][a-z]+)+")
_WORD_SEPARATORS = re.compile(r"[-_/.]")


def secret_looking(value: str) -> bool:
    """Whether a value named in prose looks like a password rather than English: six characters
    or more, a letter among them; not words alone (`re-entered`, `Base64-encoded`, a CamelCase
    name) but a digit, a symbol or a capital inside a word too; not code or a placeholder
    (`assignment_value`), a path, a URL, a measure or a version."""
    if len(value) < 6 or not credential_value(value) or value[0] in _NOT_FIRST or "://" in value:
        return False
    lowered = value.lower()
    if not any(c.isalpha() for c in value) or _MEASURE.fullmatch(lowered) or value[1:3] == ":\\":
        return False
    if not assignment_value(value, quoted=False, literal=True):
        return False
    rest = value
    for found in reversed(list(_TECHNICAL.finditer(lowered))):
        rest = rest[: found.start()] + "-" + rest[found.end() :]
    return not all(_WORD.fullmatch(part) for part in _WORD_SEPARATORS.split(rest) if part)


def _unbalanced(text: str, start: int, end: int, opener: str) -> bool:
    """Whether `text[start:end]` closes the bracket it ends with more often than it opens it."""
    return text.count(opener, start, end) < text.count(text[end - 1], start, end)


def _value_span(match: re.Match[str], text: str) -> Span | None:
    """The value group, quoted or bare (a bare value's trailing punctuation is the sentence's),
    when it looks like a secret."""
    if match.start("quoted") >= 0:
        start, end = match.span("quoted")
    else:
        start, end = match.span("bare")
        while end > start and text[end - 1] in _TRAILING:
            end -= 1
        while end > start and (opener := _OPENERS.get(text[end - 1])) and _unbalanced(text, start, end, opener):
            end -= 1  # a bracket closed around the value, not in it: `[--password PASSWORD]`
        if end > start and secret_looking(text[start:end]):
            while text[end : end + 1] == "!":  # a password's as often as the sentence's: masked
                end += 1
            return start, end
        return None
    return (start, end) if secret_looking(text[start:end]) else None


def _named_value(match: re.Match[str], text: str) -> Span | None:
    """A value after a credential's name in a sentence: after a linking word, or at once after
    `password` / `passphrase`; `:` and `=` only after `for <user>` (without it, the assignment
    rules' forms). The name must not end another word (`bypassword`; `db_password` counts)."""
    if match.start() and text[match.start() - 1].isalnum():
        return None
    name = match.group("name").lower()
    if match.start("link") < 0 and name not in ("password", "passphrase"):
        return None
    if match.start("link") >= 0 and match.start("word") < 0 and match.start("for") < 0:
        return None
    return _value_span(match, text)


# The credentials a service prints in its log on first start (round-9 adversarial pass): MySQL's
# temporary root password, Jenkins' initial admin password (after a blank line), Elasticsearch's
# reset password, Vault's unseal keys. Each message's words are its own; the value follows.
BOOT_MESSAGES = (
    Rule(
        "mysql-temporary-password",
        ("temporary password is generated for ",),
        re.compile(r"temporary password is generated for [^\s:]{1,128}:[ \t]{1,8}(\S{4,256})"),
        group_span(1),
        folded=True,
    ),
    Rule(
        "jenkins-initial-password",
        ("password to proceed to installation:",),
        re.compile(r"password to proceed to installation:\s{1,16}(\S{8,256})"),
        group_span(1),
        folded=True,
    ),
    Rule(
        "elasticsearch-reset-password",
        ("user successfully reset.",),
        re.compile(r"user successfully reset\.\s{1,16}new value:[ \t]{0,8}(\S{4,256})"),
        group_span(1),
        folded=True,
    ),
    Rule(
        "elasticsearch-generated-password",
        ("built-in superuser is",),
        re.compile(r"built-in superuser is[ \t]{0,4}:[ \t]{0,8}(\S{4,256})"),
        group_span(1),
        folded=True,
    ),
    Rule(
        "vault-unseal-key",
        ("unseal key ",),
        re.compile(r"unseal key (?:\d{1,2}|\(will be hidden\)):[ \t]{1,8}(\S{16,256})"),
        group_span(1),
        folded=True,
    ),
)

PROSE_RULES = (
    Rule("named-in-prose", ("password", "passwd", "passphrase", "pwd", "secret"), _NAMED, _named_value, folded=True),
    Rule("credentials-pair", ("credential",), _PAIR, _value_span, folded=True),
    *BOOT_MESSAGES,
)
