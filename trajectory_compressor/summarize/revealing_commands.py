"""What a command's words say it prints: a credential kept in a store or a variable, or a new one.

`revealed_secrets` reads each call with its result; these are the commands whose output is a
credential's value bare, known by what they run, not by a file they read: a secret manager's or a
cloud CLI's (`vault kv get`, `gh auth token`, `aws … --query …SecretAccessKey --output text`), a
variable printed (`printenv DB_PASSWORD`, `echo $GH_PAT`, `$ENV{API_KEY}`), a new secret made
(`openssl rand -hex 32`), a credential's field expanded (PowerShell's `-ExpandProperty token`).
Each is given the command lower-cased.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.printed_fields import WORKING_FOLDER_NAMES, credential_field

# A store asked for what is no credential (round-9 adversarial pass): a field of a secret's that
# is a setting (`vault kv get -field=host`, `op item get --fields username`, `doppler secrets get
# DB_HOST`), or the names and kinds of Kubernetes secrets (`kubectl get secrets -o name`,
# `-o jsonpath='{.metadata.name}'`, `'{.type}'`).
SETTING_WORD = (
    r"(?:\w*[_-])?(?:host(?:name)?|user(?:name)?|port|url|uri|endpoint|region|database|db_?name|email|namespace)\b"
)
_ASKS_STORE_SETTING = re.compile(
    r"(?:-field[= ]|--fields?[= ]|secrets\s+get\s+)[\"']?"
    + SETTING_WORD
    + r"|kubectl\s+get\s+secrets?\b[^|;&\n]{0,256}"
    r"(?:-o\s*=?\s*name\b|--output[= ]name\b|\{\.(?:items\[\*\]\.)?(?:metadata|type)\b)"
)
# A secret manager's or a cloud CLI's command that prints a credential (`gh auth token`,
# `vault kv get -field=password secret/db`, `op read op://vault/item/password`).
_READS_STORE = re.compile(
    r"(?:^|[\s;&|(`'\"])(?:vault\s+(?:kv\s+get|read|print\s+token)|aws\s+(?:secretsmanager\s+get-secret-value"
    r"|ecr\s+get-login-password)|gcloud\s+(?:auth\s+(?:application-default\s+)?print-(?:access|identity)-token"
    r"|secrets\s+versions\s+access)|gh\s+auth\s+token|az\s+account\s+get-access-token|az\s+keyvault\s+secret\s+show"
    r"|op\s+(?:read|item\s+get)|security\s+find-(?:generic|internet)-password|kubectl\s+get\s+secrets?"
    r"|doppler\s+secrets\s+get|heroku\s+auth:token|doctl\s+auth\s+token|vault\s+token\s+create|sops\s+(?:-d|--decrypt)\b"
    r"|bw\s+get\s+(?:password|totp|notes)|lpass\s+show\s+(?:--password|--field)"
    r"|php\s+artisan\s+key:generate\s+--show"  # Laravel's new app key
    r"|redis-cli\b[^|;&\n]{0,256}\bconfig\s+get\s+[\"']?(?:requirepass|masterauth)"  # Redis's own password
    r"|(?:terraform\s+output(?:\s+-(?:raw|json))?|heroku\s+config:get|netlify\s+env:get|railway\s+variables\s+get)"
    r"\s+\S*(?:secret|token|pass|key)\S*|keyring\s+get|secret-tool\s+lookup|(?:go)?pass\s+(?:show|cat)"
    # Round 9: a cloud CLI's credential, or one field of its JSON picked as text (`aws … --query
    # AccessKey.SecretAccessKey --output text`, `az … --query password -o tsv`).
    r"|aws\s+ssm\s+get-parameters?\b[^|;&\n]{0,512}--with-decryption|aws\s+codeartifact\s+get-authorization-token"
    r"|az\s+storage\s+account\s+keys\s+list|az\s+acr\s+credential\s+show|az\s+ad\s+sp\s+credential\s+reset"
    r"|kubectl\s+create\s+token|fly(?:ctl)?\s+auth\s+token"
    # The query's last field names the credential (not `SecretList[].Name`).
    r"|(?:aws|az)\s[^|;&\n]{0,512}--query\s+[\"']?[^\s\"']{0,256}(?:secret|token|password)\w*(?:\[\d+\])?(?=[\"'\s]|$)"
    # A client's own store, asked for a credential's setting (`aws configure get aws_secret_access_key`,
    # `git config --get github.token`, `npm config get //registry.npmjs.org/:_authToken`, `dotenv get API_KEY`).
    r"|(?:aws\s+configure|(?:git|npm|yarn|pnpm)\s+config(?:\s+--[\w-]+)*|dotenv(?:\s+-\w+\s+\S+)*)\s+(?:--)?get\s+\S*"
    r"(?:secret|token|pass|key|_auth))\b"
)
# `printenv NAME`, `echo $NAME`, `echo "${NAME}"`, `printf '%s' "$NAME"`, `os.environ["NAME"]`, `os.getenv('NAME')`.
_READS_VARIABLE = re.compile(
    # `echo ${API_KEY:-}`, `${API_KEY?}`, `${API_KEY:0:8}`: a default, a check or a slice prints the value.
    r"printenv\s+(?P<a>\w+)|echo\s+(?:-\w+\s+)?[\"']?\$(?:\{(?P<i>\w+)(?=\}|:?[-?=]|:\d)|\{?(?P<b>\w+)(?![:\w]))"
    r"|printf\s+(?:'[^']*'|\"[^\"]*\"|[^\s'\"]+)\s+[\"']?\$\{?(?P<e>\w+)"
    r"|os\.environ(?:\.get\(|\[)\s*[\"'](?P<c>\w+)|getenv\(\s*[\"'](?P<d>\w+)"
    # Node's `process.env.NAME`; PowerShell's `echo $env:NAME` (or the bare expression); cmd's `echo %NAME%`.
    r"|process\.env(?:\.|\[\s*[\"'])(?P<f>\w+)|(?:^|[;&|(]\s*|(?:echo|write-output|write-host)\s+[\"']?)\$env:(?P<g>\w+)"
    r"|echo\s+%(?P<h>\w+)%"
    # Perl's `$ENV{NAME}`, Ruby's `ENV.fetch("NAME")`, Rust's `env::var("NAME")`, Deno's `Deno.env.get("NAME")`.
    r"|\$env\{\s*[\"']?(?P<j>\w+)|env\.fetch\(\s*[\"'](?P<k>\w+)|env::var\(\s*\"(?P<l>\w+)|env\.get\(\s*[\"'](?P<m>\w+)"
)
# A command that makes a new secret and prints it (`openssl rand -hex 32`, `secrets.token_urlsafe()`,
# `head -c 32 /dev/urandom | base64`, `pwgen -s 32`, `rails secret`, `wg genkey`): the value is a
# key the run is about to use (`SECRET_KEY=…` in the next call), with no shape of its own.
_GENERATES_SECRET = re.compile(
    r"(?:^|[\s;&|(`'\"])(?:openssl\s+rand|pwgen|(?:bin/)?(?:rails|rake)\s+secret|wg\s+genkey(?![^;&\n]{0,256}\bwg\s+pubkey))\b"
    r"|\bsecrets\.token_(?:hex|urlsafe|bytes)\(|\brandombytes\(|\bos\.urandom\(|/dev/u?random\b"
    r"|\bget_random_secret_key\(|\bfernet\.generate_key\("
)
# PowerShell's `… | ConvertFrom-Json | Select-Object -ExpandProperty token` (`select -expand`): the field's value.
_EXPANDS_PROPERTY = re.compile(r"\bselect(?:-object)?\s+-exp(?:and(?:property)?)?\s+[\"']?(?P<field>[\w.]+)")
# A variable of a credential's setting, not the credential (`HF_TOKEN_PATH`, `TOKEN_URL`, `GIT_ASKPASS`).
_SETTING_NAME = re.compile(
    r"(?:_path|_file|_dir|_url|_uri|_host|_name|_expiry|_expires(?:_at)?|_ttl|_type|askpass"
    r"|_env_var|_var|_backend|_audience|_provider|_model|_length|_len|_size|_count|_limit|_header|_scope|_scopes)$"
)


def secret_variable(name: str) -> bool:
    """Whether an environment variable's name (lower-cased) says it holds a credential, read by its
    `_`-separated words: one naming a credential (`DB_PASSWORD`, `HF_TOKEN`, `NPM_AUTHTOKEN`,
    `DB_PW`, `CREDS`), a key's kind (`OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`), or a last word
    `key`, `pat`, `sk` or `auth` after a word no data key has (`OPENAI_KEY`, `GH_PAT`, `STRIPE_SK`,
    `BASIC_AUTH`; not `SORT_KEY`). A word only holding one is none (`TOKENIZERS_PARALLELISM`,
    `PASSENGER_APP_ENV`), nor is a setting about a credential (`HF_TOKEN_PATH`, `API_KEY_ENV_VAR`,
    `AIRFLOW__SECRETS__BACKEND`), nor the shell's working folder (`PWD`: `/testbed`, masked in
    every path of the row)."""
    if name in WORKING_FOLDER_NAMES or _SETTING_NAME.search(name):
        return False
    words = [word for word in name.split("_") if word]
    if any(_CREDENTIAL_WORD.fullmatch(word) for word in words) or _KEY_KIND.search(name):
        return True
    if not words or words[-1] not in ("key", "pat", "sk", "auth"):
        return False
    if len(words) == 1:
        return words[0] == "auth"  # `$AUTH`; a bare `$KEY` is any key (`sort_order_v2`)
    return words[-2] not in DATA_KEY_WORDS and words[-2] not in _SWITCH_WORDS


# A word before `_AUTH` or `_KEY` that makes the name a switch's (`NO_AUTH`, `SKIP_AUTH`, `USE_KEY`).
_SWITCH_WORDS = frozenset(
    ("no", "skip", "disable", "disabled", "enable", "enabled", "use", "require", "with", "without")
)


_CREDENTIAL_WORD = re.compile(
    r"\w*(?:password|passwd|passphrase|secret|token)|pass|pwd|pw|secrets|creds?|credentials?|apikey"
)
_KEY_KIND = re.compile(r"(?:api|access|private|secret|signing|encryption|license|master|client|app)_?key")
# The word before a `_KEY` that makes it a data key's or a public one's name (`SORT_KEY`, `S3_KEY`).
DATA_KEY_WORDS = frozenset(
    (
        "sort", "primary", "foreign", "partition", "cache", "hash", "row", "group", "map", "lookup", "object",
        "s3", "idempotency", "public", "pub", "kms", "routing", "shard", "dedup", "unique", "composite",
        "index", "column", "field", "translation", "i18n", "redis", "ssh", "gpg", "pgp", "registry", "sign",
    )
)  # fmt: skip


def reads_store(command: str) -> bool:
    """Whether `command` asks a store or a cloud CLI for a credential (not for a setting's field)."""
    return _READS_STORE.search(command) is not None and _ASKS_STORE_SETTING.search(command) is None


def reads_variable(command: str) -> bool:
    """Whether `command` prints an environment variable named for a credential (`secret_variable`)."""
    return any(
        secret_variable(next(name for name in found.groups() if name)) for found in _READS_VARIABLE.finditer(command)
    )


def generates_secret(command: str) -> bool:
    """Whether `command` makes a new secret and prints it: not a search for the code that would
    (`rg -l 'secrets.token_urlsafe(' django`, `git log -S 'openssl rand'` print paths and commits)."""
    for found in _GENERATES_SECRET.finditer(command):
        simple_command_start = max(command.rfind(separator, 0, found.start()) for separator in "|;&\n") + 1
        if _SEARCH.search(command, simple_command_start, found.start()) is None:
            return True
    return False


_SEARCH = re.compile(r"\b(?:grep|egrep|rg|ag|ack|git[ \t]+(?:log|grep|show|diff))\b")


def expands_credential(command: str) -> bool:
    """Whether `command` expands a credential's field of an object (PowerShell's `-ExpandProperty`)."""
    return any(
        credential_field(found.group("field").rsplit(".", 1)[-1]) for found in _EXPANDS_PROPERTY.finditer(command)
    )
