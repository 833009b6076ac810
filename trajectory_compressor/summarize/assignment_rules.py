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

from trajectory_compressor.summarize.config_rules import CONFIG_AND_SQL
from trajectory_compressor.summarize.secret_rules import (
    REDACTED,
    Rule,
    Span,
    high_entropy,
    name_start,
    placeholder_percent,
)
from trajectory_compressor.summarize.yaml_values import block_scalar, value_after_properties

# `password = "..."`, `"api_key": "..."`, `DB_PASSWORD=...`, `DB_PASS=...`, `client_secret: ...` (on
# lower-cased, decoded text: `escapes`). The key name must END with one of these words
# (`db_password=` matches from `password`); the value is judged by `_assignment_span`. No prefix
# is matched: scanning `\w*` before the keyword at every word start made this pattern the
# slowest by far.
# A quoted value ends at the first quote of its own kind (`"it's"` holds a `'`).
# A bare value ends at a NUL too: `/proc/1/environ` separates its `NAME=value` entries with them.
_VALUE = r"""(?:(?P<quote>["'])(?P<quoted>[^\n]{0,512}?)(?P=quote)|(?P<bare>[^\s"'`,;\x00]{1,512}))"""
# The gap may close a subscript (`os.environ["DB_PASSWORD"] = "..."`, `config['password'] = '...'`);
# `=>` is PHP's and Ruby's (`'password' => '...'`).
_OPERATOR = r"""(?P<gap>(?:\]["']|["']?\]?)\s{0,4})(?P<operator>:=|=>|=|:)[ \t]{0,16}"""  # `"user[password]": …`
CREDENTIAL_NAMES = (
    r"pass(?:word|wd|phrase|code)?|pwd|pw|secret(?:[_-]?(?:key(?:[_-]?base)?|token))?|api[_-]?(?:key|token)|apikey"
    r"|access[_-]?(?:key|token)|private[_-]?key|client[_-]?secret|(?:auth|refresh|bearer|session)[_-]?token"
)
# An environment's or a version's suffix after the name (`DB_PASSWORD_PROD`, `SECRET_TOKEN_BASE`,
# `API_KEY_V2`): counted in upper-case names only (`password_length=12` is a setting).
_SUFFIX = (
    r"(?P<suffix>(?:_(?:base|prod|production|dev|development|staging|stage|test|qa|live|sandbox|local"
    r"|primary|secondary|old|new|admin|root|ro|rw|readonly|v?\d{1,2})){1,2})?"
)
# A form's second field for the same password, in any case (`password_confirmation`, Django's
# `password1` / `password2` and `new_password2`, `passwordRepeat`): the value is the password again.
_FIELD = r"(?P<field>[_-]?(?:confirmation|confirm|repeat|again)|[12])?"
_ASSIGNMENT = re.compile(r"(?P<name>" + CREDENTIAL_NAMES + ")" + _FIELD + _SUFFIX + _OPERATOR + _VALUE)
ASSIGNMENT_STEMS = (
    "pass",
    "pwd",
    "pw=",  # `ADMIN_PW=`, `ADMIN_PW: ` (`pw` alone is in too many words)
    "pw:",
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
_CODE_CHARS = frozenset("()[]{}<>$*=")  # a bare value starting with one is code or a placeholder (`%`: see below)
# Templates and placeholders inside a value (`prefix${SUFFIX}`, `{{ pw }}`, `%(pw)s`, `#{pw}`, `<%= pw %>`).
_TEMPLATE_OPENERS = ("${", "$(", "{{", "{%", "%(", "#{", "<%")
# A call or a subscript (`get_password()`, `os.environ[`, `Optional[str]`, `kwargs.get(`, cut at a
# quote): a name, then a bracket. A name with a digit and no dot before the bracket (`T4(nR8)wQ2z!`,
# `Mn4[Qz8]Lp2w`) is more likely a generated password than a call.
_CALL_HEAD = re.compile(r"[A-Za-z_][\w.]*[(\[]")
_WRAPPED = ("<>", "{}", "[]", "()")  # a quoted value wrapped whole: `"<password>"`, `"{password}"`
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)*")
# A value ending in base64 padding (`VHIwdWI0ZG9yM3h5elE=`, a `kubectl get secret -o yaml`
# field): encoded data, never code, whatever its letters.
_PADDED = re.compile(r"[A-Za-z0-9+/_-]{4,}={1,2}")
# Where a bare value ends before its text does: the next parameter of a query string
# (`?access_token=...&limit=50`), an HTML tag (`<td>DB_PASSWORD&#61;...</td>`, `...<br>`; not
# `Qz7<rT2>pL9w`).
_VALUE_END = re.compile(r"&[\w.\[\]-]{1,64}=|</[A-Za-z]|<[A-Za-z]+[\s/>]")


def assignment_value(value: str, quoted: bool, literal: bool = False, spaced: bool = False) -> bool:
    """True when `value` (right of `password=`) looks like a literal credential.

    Quoted: any literal of 4+ characters without spaces (spaces mean a description or a
    message: `"password": "must be 8 characters"`; with `spaced`, they are a passphrase's),
    unless it is a placeholder (`"$DB_PASS"`, `"<password>"`, `"{password}"`, `"****"`) or a
    template. Bare: it must not look like code —
    a call or a subscript, a template or a placeholder, and not a plain (dotted) identifier
    without digits, which is a variable (`password=password`, `api_key=self.api_key`). The
    symbols of a generated password are not code (`DB_PASSWORD=Xk9*pQ2!mZ7v`, `T4(nR8)wQ2z!`).
    In a `literal` context (`PGPASSWORD=postgres`, `POSTGRES_PASSWORD: postgres`,
    `--password=postgres`) a plain word is the value itself; a dotted name is still taken for code.
    """
    if len(value) < 4 or value.lower() in _NOT_VALUES or REDACTED in value:
        return False
    if _PADDED.fullmatch(value):
        return True
    if any(opener in value for opener in _TEMPLATE_OPENERS) or not value.strip("*"):
        return False
    if quoted:
        wrapped = value[0] + value[-1] in _WRAPPED
        spaces = not spaced and any(map(str.isspace, value))
        return value[0] != "$" and not placeholder_percent(value) and not wrapped and not spaces
    if value[0] in _CODE_CHARS or placeholder_percent(value):
        return False
    head = _CALL_HEAD.match(value)
    if head is not None and ("." in head.group() or not any(map(str.isdigit, head.group()))):
        return False
    if literal and "." not in value:
        return True
    return _DOTTED_IDENTIFIER.fullmatch(value) is None


def _literal_context(match: re.Match[str], text: str) -> bool:
    """`NAME=value` or `NAME: value` with an upper-case name, or `--name=value`: an environment
    variable, an env or docker-compose file, a command-line option, whose value is never a
    variable name."""
    operator, gap = match.group("operator"), match.group("gap")
    if operator not in ("=", ":") or gap.strip(" \t"):
        return False
    start, end = match.start("name"), match.start("gap")  # the name with its field and suffix
    if not gap and (text[start:end].isupper() or (operator == "=" and text[max(0, start - 2) : start] == "--")):
        return True
    return _in_config_file(text, start) or (operator == "=" and _in_conninfo(text, start))


def _in_config_file(text: str, index: int) -> bool:
    """Whether the name starts its line under an INI section (`[client]` of a `.my.cnf`,
    `[database]`): a config file's value, never code."""
    token_start = name_start(text, index, also=".-")
    line_start = text.rfind("\n", max(0, token_start - 64), token_start) + 1
    if (line_start == 0 and token_start >= 64) or text[line_start:token_start].strip(" \t"):
        return False
    return _INI_SECTION.search(text, max(0, line_start - 4096), line_start) is not None


def _in_conninfo(text: str, index: int) -> bool:
    """Whether `password=` is a keyword of a libpq connection string (`host=db user=app
    password=... dbname=app`): another of its keywords on either side, on the same line."""
    window = text[max(0, index - 256) : index + 256]
    return _CONNINFO_KEYWORD.search(window) is not None


_INI_SECTION = re.compile(r"(?m)^[ \t]*\[[A-Za-z0-9_.: -]{1,64}\][ \t]*\r?$")
_CONNINFO_KEYWORD = re.compile(r"(?<![\w.-])(?:dbname|host|hostaddr|sslmode)=[^\s'\"]")


def _short_pass_name(match: re.Match[str], text: str, quoted: bool) -> bool:
    """Whether a name ending in `pass` names a password: `DB_PASS`, `db-pass`; `pass=` or a quoted
    `pass: "..."` alone. Not `bypass` nor `compass`, nor a test result (`PASS: test_1`)."""
    start = match.start("name")
    before = text[start - 1] if start else " "
    if before.isalnum():
        return text[start] == "P" and before.islower()  # camelCase: `adminPass`, not `bypass`
    return before in "_-." or match.group("operator") == "=" or quoted


def _assignment_span(match: re.Match[str], text: str, *, entropy: bool = False) -> Span | None:
    """The value's span in `text` (the original, not the lower-cased copy matched)."""
    if _url_user(match, text):
        return None
    found = _value_span(match, text)
    if found is None:
        return None
    quoted, start, end = found
    value = text[start:end]
    value = value.split("\n", 1)[0].rstrip("\r")  # a block scalar's lines: judged by the first
    literal = _literal_context(match, text)
    if match.groupdict().get("suffix") and not text[match.start("name") : match.end("suffix")].isupper():
        return None
    if not quoted:  # keep a sentence's full stop, a query string's next parameter, a tag
        if literal:  # an env value runs to white space: `DB_PASSWORD=Lp5,Qz8;Tr2w`
            value = text[start : _bare_end(text, end)]
        if ("&" in value or "<" in value) and (following := _VALUE_END.search(value)):
            value = value[: following.start()]
        value = _without_closers(value.rstrip("."))
        end = start + len(value)
    name = match.group("name")
    if name == "pass" and not _short_pass_name(match, text, quoted):
        return None
    if name == "pw" and not (literal and text[match.start("name") - 1 : match.start("name")] == "_"):
        return None  # `ADMIN_PW=...`; not `pw = getpass()`
    if name == "secret" and text[match.start("name") - 1 : match.start("name")] == ":":
        return None  # an ARN's resource type (`arn:aws:secretsmanager:…:secret:prod/db-AbCdEf`)
    if name == "pwd" and value[:1] in ("/", "~"):  # PWD=/testbed, OLDPWD=~: the working directory
        return None
    if name == "pass" and value.isdigit() and not literal:  # n_pass=1000
        return None
    spaced = quoted and (literal or any(map(_passphrase_word, value.split())))
    if not assignment_value(value, quoted, literal, spaced) or (
        entropy and not _keyed_value(value, name, literal and not _special_token(text, match))
    ):
        return None
    if entropy and (
        _INTEGRITY.match(value)
        or text[max(0, match.start("name") - 7) : match.start("name")].lower().rstrip("_-").endswith("public")
    ):
        return None  # a package lock's `integrity: sha512-…`, a `publicKey`
    return start, end


def _url_user(match: re.Match[str], text: str) -> bool:
    """Whether the name is a URL's user (`https://x-access-token:…@github.com/o/r.git`, as `git
    remote -v` shows a CI checkout's remote; `https://gitlab-ci-token:…@…`): its password is the URL
    rules' to mask, up to the `@`. Read as an assignment, its value ran over the host and path,
    and that value, known in the row, no longer matched the password used bare."""
    key = name_start(text, match.start("name"), also=".-")
    return text.endswith("://", max(0, key - 3), key)


def _passphrase_word(word: str) -> bool:
    """A word no message holds: 8 characters or more, letters and digits both
    (`"password": "pw Lqgi8Xv2Pz9wQ"`), which makes the quoted value around it, spaces and all, a
    passphrase; `"must be 8 characters"` has none. A value with spaces given to an environment's
    or a config file's name (`PASSWORD='correct horse battery staple'`) is one whatever its words."""
    word = word.strip(".,;:!?()[]{}\"'`")
    return len(word) >= 8 and any(map(str.isdigit, word)) and any(map(str.isalpha, word))


# A model's special token before the name (`EOS_TOKEN=`, `PAD_TOKEN=`): a setting, not a credential.
_SPECIAL_TOKEN = re.compile(r"(?i)(?:bos|eos|pad|unk|sep|cls|mask|start|end|special|image|audio)_?$")


def _special_token(text: str, match: re.Match[str]) -> bool:
    start = match.start("name")
    return _SPECIAL_TOKEN.search(text[max(0, start - 8) : start]) is not None


def _keyed_value(value: str, name: str, literal: bool) -> bool:
    """Whether a value given to a `*token`/`*key`/`*secret` name is a credential: random-looking;
    or, given to an environment's `*_TOKEN` or `*_SECRET` (`GITHUB_TOKEN=ab12cd34ef56gh`, a
    `--token=` flag), any word of letters and digits of 8 or more: an env token is no setting
    (`MAX_TOKENS=4096` is digits, `SORT_KEY=created_at2` a key's name, not a `*_TOKEN`, and a
    model's `EOS_TOKEN=endoftext1` a special token's: `literal` is False for those)."""
    if high_entropy(value):
        return True
    return (
        literal
        and name in ("token", "secret")
        and len(value) >= 8
        and any(char.isdigit() for char in value)
        and any(char.isalpha() for char in value)
    )


def _value_span(match: re.Match[str], text: str) -> tuple[bool, int, int] | None:
    """Whether the value is quoted, and its span; past a YAML tag or anchor before it (`password:
    !!str …`, `&pw …`), None after a local tag (`!secret db_password`, `!Ref DbPassword`: a
    reference, not a value). A YAML block scalar's value (`password: |` and the lines under it,
    `yaml_values.block_scalar`) is taken as quoted: `_assignment_span` judges it by its first line."""
    quoted = match.group("quote") is not None
    start, end = match.span("quoted" if quoted else "bare")
    if quoted or match.group("operator") != ":" or text[start] not in "!&|>":
        return quoted, start, end
    position = value_after_properties(text, start)
    if position is None:
        return None
    if text[position : position + 1] in ("|", ">"):
        block = block_scalar(text, name_start(match.string, match.start("name"), also=".-"), position)
        return (True, *block) if block is not None else (quoted, start, end)
    value = _VALUE_AT.match(text, position) if position > start else None
    if value is None:
        return quoted, start, end
    quoted = value.group("quote") is not None
    return (quoted, *value.span("quoted" if quoted else "bare"))


_VALUE_AT = re.compile(_VALUE)


def _bare_end(text: str, end: int) -> int:
    """Where a bare value that ended at `end` (a `,`, `;` or backtick) ends in an env file: at
    white space or a quote, within `_BARE_CHARS`."""
    found = _BARE_REST.match(text, end)
    return found.end() if found is not None else end


_BARE_REST = re.compile(r"""[^\s"'\x00]{0,512}""")


def _without_closers(value: str) -> str:
    """`value` without the brackets at its end that close what it did not open, nor a colon
    after them: `f(password=pw1)` gives `pw1`, `def f(password=pw):` gives `pw`, `T4(nR8)` stays
    whole."""
    while value and (
        value[-1] in ":;" or (value[-1] in ")]}" and value.count(value[-1]) > value.count(_OPENER[value[-1]]))
    ):
        value = value[:-1]  # `def f(password=pw):`
    return value


_OPENER = {")": "(", "]": "[", "}": "{"}
_INTEGRITY = re.compile(r"sha(?:1|256|384|512)-")


# `"password": ["..."]`, `"password": {"value": "..."}`: a JSON list or object given to a
# credential's name is its value, all of it to the closing bracket (within `_STRUCTURE_CHARS`).
_STRUCTURED = re.compile(r"(?x)(?P<name>" + CREDENTIAL_NAMES + r")[\"']\s{0,4}:\s{0,16}[\[{]")
_STRUCTURE_CHARS = 2048


def starts_name(text: str, start: int) -> bool:
    """Whether a credential's name found at `start` starts a word of the name it stands in: after
    a separator (`db_password`, `client-secret`), or a camelCase hump (`webhookSecret`,
    `userPassword`); not inside a word (`bypass`, `compass`, `Bypass`)."""
    if not start or not text[start - 1].isalnum():
        return True
    return text[start].isupper() and (text[start - 1].islower() or text[start - 1].isdigit())


def _structured_span(match: re.Match[str], text: str) -> Span | None:
    """The inside of the list or object, to its closing bracket (none found within
    `_STRUCTURE_CHARS`: not masked here; the readers of decoded arguments mask it by its key)."""
    if not starts_name(text, match.start("name")):  # `"bypass": [...]`, `"compass": {...}`
        return None
    opening = match.end() - 1
    close = _closing_bracket(text, opening)
    if close is None or close <= opening + 1 or text[opening + 1 : close] == REDACTED[1:-1]:
        return None  # nothing, or a mask's own brackets (`"password": [REDACTED]`)
    if _DESCRIBES.search(text, opening, close) and '"value"' not in text[opening:close]:
        return None  # a schema's property or a volume's reference (a Terraform output holds a "value")
    return opening + 1, close


# An object that describes a field rather than holding its value: a JSON Schema or OpenAPI
# property (`"password": {"type": "string", "format": "password"}`), a Kubernetes volume's
# `"secret": {"secretName": "tls-certs"}`.
_DESCRIBES = re.compile(r'"(?:type"\s{0,4}:\s{0,4}"(?:string|object|array|integer|number|boolean)"|secretName")')


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


ASSIGNMENT_RULES = (
    Rule("secret-assignment", ASSIGNMENT_STEMS, _ASSIGNMENT, _assignment_span, folded=True),
    Rule("secret-structure", ASSIGNMENT_STEMS, _STRUCTURED, _structured_span, folded=True),
    *CONFIG_AND_SQL,
    Rule(
        "high-entropy-assignment",
        _KEYED_STEMS,
        _KEYED,
        lambda match, text: _assignment_span(match, text, entropy=True),
        folded=True,
    ),
)
