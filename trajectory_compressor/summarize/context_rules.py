"""The context rules: a credential known by what stands near it, not by its own name or shape.

A secret's name and its value given apart (`{"name": "DB_PASSWORD", "value": "…"}` as ECS,
`kubectl -o json` and SSM print them; `os.getenv("API_KEY", "…")`, PHP's `define('DB_PASSWORD',
'…')`; Dockerfile's `ENV DB_PASSWORD …`; a `vault kv get` table), an AWS secret key printed beside
its key id (`credentials.csv`, `aws iam create-access-key --output text`, the `aws configure`
prompt), an Azure SAS signature (`sig=` beside `sv=`) and `.npmrc`'s `_auth` (the base64 of
`user:password`). Each rule anchors at a literal, and its span function checks the context
around it (a bounded window: the work stays linear).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from trajectory_compressor.summarize.assignment_rules import (
    ASSIGNMENT_STEMS,
    CREDENTIAL_NAMES,
    assignment_value,
)
from trajectory_compressor.summarize.config_rules import login_pair
from trajectory_compressor.summarize.prose_rules import secret_looking
from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value, high_entropy, name_start

# A JSON object's name field (keys any case: `Name`, `ParameterName`; an Azure Key Vault secret's
# `id`, `https://v.vault.azure.net/secrets/…`), up to the secret's name in it.
_NAME_FIELD_BEFORE = re.compile(r'"(?:name|key|id|parametername)"\s{0,16}:\s{0,16}"[^"\n]{0,256}\Z', re.I)


def _object_value(match: re.Match[str], text: str) -> Span | None:
    """The `"value"` after a secret's name, when that name is a JSON object's name field."""
    if _NAME_FIELD_BEFORE.search(text, max(0, match.start() - 300), match.start()) is None:
        return None
    value_start, value_end = match.span("value")
    value = text[value_start:value_end]
    return (value_start, value_end) if credential_value(value) and len(value) >= 4 else None


def _paired_argument(match: re.Match[str], text: str) -> Span | None:
    """The argument after a quoted secret's name (`getenv("DB_PASSWORD", "…")`), when it is a literal."""
    start = name_start(text, match.start(), also=".-/")
    if text[start - 1 : start] not in ("'", '"') or _char_before(text, start - 1) != "(":
        return None  # the first argument of a call, not a JSON value (`"format": "password", "minLength"`)
    start, end = match.span("value")
    return (start, end) if assignment_value(text[start:end], quoted=True) else None


def _char_before(text: str, index: int) -> str:
    """The character before `index` past up to 16 blanks ("" if none): looked at, never sliced."""
    position = index
    while position and index - position < 16 and text[position - 1] in " \t\r\n":
        position -= 1
    return text[position - 1] if position else ""


def _env_instruction(match: re.Match[str], text: str) -> Span | None:
    """The value of `ENV DB_PASSWORD value` (a Dockerfile) or `set -x DB_PASSWORD value` (fish),
    the name upper-case, the value a literal: any at the start of a line, as a Dockerfile holds
    it; elsewhere (quoted in a message) only one with a digit or a symbol (`ENV DB_PASSWORD must be
    set` is prose)."""
    name = name_start(text, match.start())
    blank = name
    while blank and name - blank < 16 and text[blank - 1] in " \t":
        blank -= 1
    head = _ENV_WORD.search(text, max(0, blank - 48), blank) if blank < name else None
    if head is None or not text[name : match.end("name")].isupper():
        return None
    start, end = match.span("value")
    value = text[start:end]
    if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) > 1:
        start, end, value = start + 1, end - 1, value[1:-1]
    line_start = text.rfind("\n", max(0, head.start() - 64), head.start()) + 1
    at_line_start = (line_start > 0 or head.start() < 64) and not text[line_start : head.start()].strip(" \t")
    if not at_line_start and value.isalpha():
        return None
    return (start, end) if assignment_value(value, quoted=False, literal=True) else None


_ENV_WORD = re.compile(r"(?<![\w-])(?:ENV|set(?:[ \t]+-[a-zA-Z]{1,4})+)\Z")


def _vault_row(match: re.Match[str], text: str) -> Span | None:
    """A secret's row of a `vault kv get` table (`password    …`) or of PowerShell's (`Get-ChildItem
    Env:`): the name first on its line, under the table's `Key  Value` / `---  -----` heading (`Name
    Value` / `----  -----`)."""
    line_start = text.rfind("\n", max(0, match.start() - 80), match.start()) + 1
    if (line_start == 0 and match.start() >= 80) or _FIRST_COLUMN.fullmatch(text, line_start, match.start()) is None:
        return None
    if _VAULT_HEADING.search(text, max(0, match.start() - 4096), match.start()) is None:
        return None
    start, end = match.span("value")
    value = text[start:end]
    return (start, end) if assignment_value(value, quoted=False, literal=True) else None


_FIRST_COLUMN = re.compile(r"[ \t]*[\w.-]{0,64}")
# `vault kv get`'s heading, and PowerShell's (`Get-ChildItem Env:`, a hashtable: `Name  Value` / `----  -----`).
_VAULT_HEADING = re.compile(r"(?:Key[ \t]+Value\r?\n-{3}|Name[ \t]+Value\r?\n-{4})[ \t]+-{5}")


def _aws_secret_after_key_id(match: re.Match[str], text: str) -> Span | None:
    """A 40-character secret key printed after its key id (mixed case and a digit: not a word)."""
    start, end = match.span("value")
    value = text[start:end]
    mixed = not value.isupper() and not value.islower() and any(map(str.isdigit, value))
    return (start, end) if mixed and high_entropy(value) else None


def _sas_signature(match: re.Match[str], text: str) -> Span | None:
    """An Azure SAS token's `sig=`, after `?`, `&` or `;`, with its `sv=` (service version) near."""
    start = match.start()
    if start and text[start - 1] not in "?&;\"' \n":
        return None
    window = text[max(0, start - 1024) : match.end() + 1024]
    return match.span("value") if "sv=" in window else None


def _quoted_literal(match: re.Match[str], text: str) -> Span | None:
    """The `value` group when it is a quoted literal, not a placeholder or a template."""
    return match.span("value") if assignment_value(match.group("value"), quoted=True) else None


def _credential(match: re.Match[str], text: str) -> Span | None:
    """The `value` group unless it is a placeholder (`$PASS`, `{password}`) or a number."""
    return match.span("value") if credential_value(match.group("value")) else None


# What may follow a secret's name, each with the span it masks (tried in order at each name: one
# rule, so that the text's many names cost one match each, not five).
_NAME_CONTEXTS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], str], Span | None]], ...] = (
    # `{"name": "DB_PASSWORD", "value": "…"}` (ECS, `kubectl get … -o json`), SSM's `"Name":
    # "/prod/db/password", "Type": "SecureString", "Value": "…"` (the name first, as they print it).
    (
        re.compile(
            r"(?:" + CREDENTIAL_NAMES + r')[^"\n]{0,64}"\s{0,16},\s{0,16}'
            r'(?:"[^"\n]{1,64}"\s{0,16}:\s{0,16}(?:"[^"\n]{0,256}"|null|true|false|\d{1,32}|\{\}|\[\])\s{0,16},\s{0,16}){0,8}'
            r'"value"\s{0,16}:\s{0,16}"(?P<value>[^"\n]{1,1024})"',
            re.I,
        ),
        _object_value,
    ),
    # A literal given beside a quoted secret's name: `os.getenv("DB_PASSWORD", "…")`,
    # `monkeypatch.setenv("API_KEY", "…")`, `props.setProperty("password", "…")`, `define('DB_PASSWORD', '…')`.
    (
        re.compile(
            r"(?:" + CREDENTIAL_NAMES + r")[\"']\s{0,4},\s{0,16}(?P<quote>[\"'])(?P<value>[^\"'\n]{1,512})(?P=quote)",
            re.I,
        ),
        _paired_argument,
    ),
    # A literal fallback for a secret read from the environment: `process.env.DB_PASSWORD || '…'`,
    # `os.getenv("API_KEY") or "…"`, `ENV["DB_PASSWORD"] || "…"`.
    (
        re.compile(
            r"(?:" + CREDENTIAL_NAMES + r")[\"'\])]{0,3}\s{0,4}(?:\|\||\?\?|or)\s{0,4}"
            r"(?P<quote>[\"'])(?P<value>[^\"'\n]{1,512})(?P=quote)",
            re.I,
        ),
        _quoted_literal,
    ),
    # `vault kv get`'s table: `password    …` under `Key  Value` / `---  -----`.
    (
        re.compile(r"(?:" + CREDENTIAL_NAMES + r")[ \t]{2,64}(?P<value>\S{1,512})[ \t]*(?=\r?\n|\Z)", re.I),
        _vault_row,
    ),
    # A table's row: psql's ` db_password | …`, Markdown's `| DB_PASSWORD | … |`; the cell must
    # look like a secret (`secret_looking`: a schema's `| password | string |` stays).
    (
        re.compile(
            r"(?:" + CREDENTIAL_NAMES + r")[ \t]{1,64}\|[ \t]{1,64}(?P<value>[^\s|]{1,512})[ \t]*(?=\||\r?\n|\Z)", re.I
        ),
        lambda match, text: match.span("value") if secret_looking(match.group("value")) else None,
    ),
    # Dockerfile's `ENV DB_PASSWORD value`, fish's `set -gx DB_PASSWORD value` (no `=`).
    (re.compile(r"(?P<name>" + CREDENTIAL_NAMES + r")[ \t]+(?P<value>\S{1,512})", re.I), _env_instruction),
)


def _name_context(match: re.Match[str], text: str) -> Span | None:
    """The value the first of `_NAME_CONTEXTS` to match at this name masks (after a blank, only
    a fallback, a table's row or an `ENV` line can follow: the others are not tried)."""
    after_blank = text[match.end() : match.end() + 1] in (" ", "\t")
    for pattern, span_of in _NAME_CONTEXTS[2:] if after_blank else _NAME_CONTEXTS[:3]:
        found = pattern.match(text, match.start())
        if found is not None and (span := span_of(found, text)) is not None:
            return span
    return None


# A connection string's keywords (the window around the password holds one), and one of its
# fields given as a format field (`Server={host};Uid={user}`): the string is a template.
_ODBC_KEYWORD = re.compile(
    r"(?:^|[;\s\"'{])(?:driver|server|uid|user id|user|username|database|dsn|data source|provider"
    r"|initial catalog|host|port|dbq)[ \t]{0,4}=",
    re.I,
)
_ODBC_TEMPLATE = re.compile(
    r"(?:server|uid|user id|user|username|database|host|data source|initial catalog)[ \t]{0,4}=[ \t]{0,4}"
    r"\{[A-Za-z_][\w.]{0,64}\}",
    re.I,
)
# Code in the braces: a format field with a conversion, a spec or `=` (`{password!r}`,
# `{pw:>10}`), a .NET index (`{2,-10}`), a PHP variable (`{$pwd}`), a name naming a credential
# (`{db_password_1}`, `{pwd2}`) or a dotted one (`{self.pw}`).
_ODBC_FIELD = re.compile(
    r"[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*(?:![rsa]|:.*|=)\s*|\d{1,3}(?:,-?\d{1,4})?(?::.*)?|\$[A-Za-z_][\w>\[\]'\"-]*"
)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CREDENTIAL_WORD = re.compile(r"pass|pwd|secret|token|cred|(?:^|_)pw(?:$|_|\d)", re.I)


def _odbc_value(match: re.Match[str], text: str) -> Span | None:
    """The braces of `Pwd={…}` in a connection string that is not a template, holding no code."""
    start, end = match.span("value")
    value = text[start:end]
    low, high = max(0, match.start() - 256), min(len(text), match.end() + 256)
    if not value or _odbc_code(value) or _ODBC_KEYWORD.search(text, low, high) is None:
        return None
    return None if _ODBC_TEMPLATE.search(text, low, high) else (start - 1, end + 1)


def _odbc_code(value: str) -> bool:
    if value[0] in "\"'" or value[-1] in "\"'" or any(map(str.isspace, value)):
        return True  # concatenation (`Pwd={" + pwd + "}`), an expression, a description
    if _ODBC_FIELD.fullmatch(value):
        return True
    if _IDENTIFIER.fullmatch(value):
        return "." in value or _CREDENTIAL_WORD.search(value) is not None
    return not assignment_value(value, quoted=False, literal=True)


CONTEXT_RULES = (
    # A secret's name with its value given apart (`_NAME_CONTEXTS`): only a quote or a bracket
    # before a comma or an `or`, or a blank, after the name can start one.
    Rule(
        "secret-name-context",
        ASSIGNMENT_STEMS,
        re.compile(r"(?:" + CREDENTIAL_NAMES + r")(?=[\w./-]{0,64}[\"'\])]{1,3}\s{0,4}(?:,|\|\||\?\?|or\b)|[ \t])"),
        _name_context,
        folded=True,
    ),
    # A user and password given as a pair: `requests.get(url, auth=("admin", "…"))`,
    # `HTTPBasicAuth("admin", "…")`, aiohttp's `BasicAuth("admin", "…")`.
    Rule(
        "basic-auth-pair",
        ("auth=(", "auth = (", "basicauth("),
        re.compile(
            r"(?:basic)?auth(?:[ \t]{0,4}=[ \t]{0,4})?\(\s{0,4}[\"'][^\"'\n]{1,128}[\"']\s{0,4},\s{0,16}"
            r"(?P<quote>[\"'])(?P<value>[^\"'\n]{1,512})(?P=quote)"
        ),
        _quoted_literal,
        folded=True,
    ),
    # A password given to a login call by position: smtplib's, imaplib's, ftplib's
    # `server.login("me@example.com", "…")` (`login(user, password)`, variables, stays).
    Rule(
        "login-call-password",
        (".login(",),
        re.compile(
            r"\.login\(\s{0,4}[^,()\n]{1,128},\s{0,16}(?P<quote>[\"'])(?P<value>[^\"'\n]{1,512})(?P=quote)\s{0,4}\)"
        ),
        _quoted_literal,
    ),
    # PowerShell's `ConvertTo-SecureString '…' -AsPlainText` (`-String "…"`).
    Rule(
        "powershell-securestring",
        ("convertto-securestring",),
        re.compile(
            r"convertto-securestring[ \t]+(?:-string[ \t]+)?(?P<quote>[\"'])(?P<value>[^\"'\n]{1,512})(?P=quote)"
        ),
        _quoted_literal,
        folded=True,
    ),
    # AWS Secrets Manager's `"SecretString": "…"` (a JSON string in it is read by the other rules).
    Rule(
        "secrets-manager-string",
        ("secretstring",),
        re.compile(r'secretstring"\s{0,16}:\s{0,16}"(?P<value>[^"\n]{4,4096})"'),
        _credential,
        folded=True,
    ),
    # A secret key printed after its key id: `credentials.csv` (`AKIA…,<secret>`), `aws iam
    # create-access-key --output text`.
    Rule(
        "aws-secret-after-key-id",
        ("AKIA", "ASIA"),
        re.compile(
            r"A(?:KIA|SIA)[A-Z0-9]{16}[^\n]{0,160}?(?<![A-Za-z0-9/+=])(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        _aws_secret_after_key_id,
    ),
    # The `aws configure` prompt answered: `AWS Secret Access Key [None]: …`.
    Rule(
        "aws-configure-prompt",
        ("secret access key",),
        re.compile(r"secret access key(?:[ \t]*\[[^\]\n]{0,64}\])?[ \t]*:[ \t]*(?P<value>[^\s\"']{8,256})"),
        _credential,
        folded=True,
    ),
    # An Azure SAS token's signature: `…?sv=2022-11-02&…&sig=…` (a blob URL,
    # `SharedAccessSignature=`, `AZURE_STORAGE_SAS_TOKEN=`).
    Rule("azure-sas-signature", ("sig=",), re.compile(r"sig=(?P<value>[A-Za-z0-9%+/=]{16,256})"), _sas_signature),
    # Firebase's `?auth=<secret>` (random-looking; `auth=` in other queries is a flag or a name).
    Rule(
        "query-auth",
        ("auth=",),
        re.compile(r"auth=(?P<value>[^&\s\"'#]{16,512})"),
        lambda match, text: (
            match.span("value")
            if text[match.start() - 1 : match.start()] in ("?", "&") and high_entropy(match.group("value"))
            else None
        ),
    ),
    # ODBC's braced value (`Driver={…};Uid=sa;Pwd={p;w}`; `}}` is a `}` in it): the whole brace,
    # in a connection string (another of its keywords near it), unless it is code (an f-string's
    # `{password}`, a concatenation's `{" + pwd + "}`) or the string a template.
    Rule(
        "odbc-braced-password",
        ("pwd", "password"),
        re.compile(
            r"(?:pwd|password)[ \t]{0,4}=[ \t]{0,4}\{(?P<value>[^}\n]{0,256}+(?:\}\}[^}\n]{0,256}+){0,8})\}(?![}\w])"
        ),
        _odbc_value,
        folded=True,
    ),
    # `.npmrc`'s `_auth=<base64 of user:password>` (also scoped: `//host/:_auth=`).
    Rule(
        "npmrc-auth",
        ("_auth",),
        re.compile(r"_auth[ \t]*=[ \t]*[\"']?(?P<value>[A-Za-z0-9+/]{8,1024}={0,2})"),
        login_pair,
    ),
)
