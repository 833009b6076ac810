"""The command-line rules: a password given to a program's option or argument, not by its shape.

`--password VALUE` and its kin in any program; the short options some programs take a password
with (`mysql -pVALUE`, `docker login -p VALUE`, `redis-cli -a VALUE`, `ldapsearch -w VALUE`,
`smbclient -U user%VALUE`, `htpasswd -b file user VALUE`), a Go-style `-password VALUE`, a
literal piped or given as a here-string to `sudo -S`, `--password-stdin`, `passwd --stdin` or
`chpasswd` (and the programs that read a token there: `gh auth login --with-token`, `wrangler secret
put`, ...), or through a process substitution to a password file option (`--vault-password-file
<(echo VALUE)`), `openssl passwd VALUE`, and the settings commands that store one
(`aws configure set aws_secret_access_key VALUE`, `npm config set _authToken VALUE`, `git config
github.token VALUE`, `netlify env:set API_KEY VALUE`).

A short option means a password only for the program that defines it (`-p` is a port for
`docker run` and `ssh`, a path for `mkdir`), so each such rule names its programs, and the
options between the program and the password are skipped word by word, never past a pipe or
`;`/`&`. Values are judged as `--password`'s are (`option_value`): no placeholder (`$PASS`),
number, port or next option.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value, word_char

# A credential's option: `--password`, `--db-password`, `--api-key`, `--secret`, `--auth-token`.
# A key's kinds a long option names (`--account-key`, `--master-key`, `--s3-secret-access-key`); not
# GnuPG's `--delete-secret-key KEYID` and its kin, whose value is a key's id.
_KEY_KINDS = ("api", "auth", "account", "secret", "license", "master", "access", "encryption")
_LONG_OPTION_NAME = (
    r"--(?!(?:delete|export|import|list|gen|edit)-)(?:[a-z][\w-]{0,23}[_-])?"
    r"(?:pass(?:word|wd|phrase)?|(?:" + "|".join(_KEY_KINDS) + r")[_-]?key|secret|token)"
)
# Also with one dash, as Go's `flag` package writes options (`-password VALUE`, `-token=...`),
# but not a bare `-pass` (OpenSSL's `-pass pass:...`: its own rule).
_OPTION_NAME = (
    r"(?:"
    + _LONG_OPTION_NAME
    + r"|-(?:[a-z][\w-]{0,23}[_-])?(?:password|passwd|passphrase|api[_-]?key|apikey|secret|token))"
)
# The words between a program and its password option (other options and their values).
WORDS = r"(?:[ \t]+[^\s|;&]{1,256}){0,24}?"
# What follows a password option: quoted (spaces and all), or a bare word.
OPTION_VALUE = r"""(?:'(?P<single>[^'\n]{1,256})'|"(?P<double>[^"\n]{1,256})"|(?P<bare>[^\s'"`;|&]{1,256}))"""
# Programs that read a token or a secret's value on stdin (`echo VALUE | gh auth login --with-token`).
_STDIN_SECRET = (
    r"gh[ \t]+auth[ \t]+login[^|;&\n<]{0,256}--with-token|(?:npx[ \t]+)?wrangler[ \t]+secret[ \t]+put"
    r"|vercel[ \t]+env[ \t]+add|gcloud[ \t]+secrets[ \t]+(?:create|versions[ \t]+add)[^|;&\n<]{0,256}--data-file[= ]-"
    r"|firebase[ \t]+functions:secrets:set|gpg[^|;&\n<]{0,256}--passphrase-fd[ \t]+0|keepassxc-cli"
)


def option_value(match: re.Match[str], text: str) -> Span | None:
    """A password option's value, unless it is a placeholder, a number, a port or the next option.

    Given after a space (`--password VALUE`), a bare value must hold a digit or a symbol: usage
    lines and prose (`[--password PASSWORD]`, `the --password option`) name it with a word.
    """
    before = text[match.start() - 1] if match.start() else " "
    if word_char(before) or before in ".-":  # part of another name: `py-mysql`, `db.mysql`
        return None
    groups = match.re.groupindex
    group = next(name for name in ("single", "double", "bare") if name in groups and match.start(name) >= 0)
    value_start, value_end = match.span(group)
    value = text[value_start:value_end]
    if not credential_value(value) or value.startswith("-") or not value.strip("0123456789.:/"):
        return None  # a placeholder, the next option, a port mapping (`docker run --name mysql -p3306:3306`)
    if group == "bare" and match.groupdict().get("spaced") and value.rstrip("])}>.,").isalpha():
        return None
    return value_start, value_end


# Passwords given to a long option on a command line.
LONG_OPTIONS = (
    # `--password=VALUE`, `--password VALUE` (docker login, most CLIs), `--passwd`, `--passphrase`,
    # and the same with a prefix (`--db-password`), and `--api-key`, `--secret`, `--token` (`--auth-token`);
    # with one dash too (`-password VALUE`, `-token=VALUE`).
    Rule(
        "password-option",
        (
            "--pass",
            "-password",
            "-passwd",
            "-passphrase",
            "-apikey",
            "-secret",
            "-token",
            "--authkey",
            *(f"-{kind}{separator}key" for kind in _KEY_KINDS for separator in "-_"),
        ),
        re.compile(_OPTION_NAME + r"(?:=|(?P<spaced>[ \t]+))" + OPTION_VALUE),
        option_value,
        scan=True,  # a literal may sit inside the name (`--db-password`): the text is scanned
    ),
    # The MySQL / MariaDB clients take the password glued to `-p` (`-pSECRET`, `-p'...'`); a
    # separate word after `-p` is the database, and other commands' `-p` is a port or a path.
    Rule(
        "mysql-password-option",
        ("mysql", "mariadb"),
        re.compile(r"(?:mysql|mariadb)[\w.-]{0,16}" + WORDS + r"[ \t]+-p" + OPTION_VALUE),
        option_value,
    ),
    Rule("sshpass-option", ("sshpass",), re.compile(r"sshpass[ \t]+-p[ \t]*" + OPTION_VALUE), option_value),
    # The same options in an argv written as a JSON or Python list: `"--password", "VALUE"`.
    Rule(
        "password-option-listed",
        ("--pass", "-password", "-passwd", "-api-key", "-api_key", "-secret", "-token"),
        re.compile(_LONG_OPTION_NAME + r"""(?P<q>["'])\s{0,4},\s{0,4}(?P=q)(?P<listed>[^"'\n]{1,256})(?P=q)"""),
        lambda match, text: _listed_value(match),
        scan=True,
    ),
)


def _listed_value(match: re.Match[str]) -> Span | None:
    """The list item after a password option, unless it is a placeholder or the next option."""
    value = match.group("listed")
    return None if not credential_value(value) or value.startswith("-") else match.span("listed")


def _unbracketed(span: Span | None, text: str) -> Span | None:
    """`span` without the `)` that closes a command substitution around it (`$(openssl passwd VALUE)`)."""
    if span is None:
        return None
    start, end = span
    while end - start > 1 and text[end - 1] == ")" and text.count("(", start, end) < text.count(")", start, end):
        end -= 1
    return start, end


def _htpasswd_value(match: re.Match[str], text: str) -> Span | None:
    """`htpasswd -b FILE USER PASSWORD`, or with `-n` (no file) `htpasswd -nb USER PASSWORD`."""
    flags = match.group("flags")
    if "b" not in flags:
        return None
    group = "second" if "n" in flags else "third"
    start, end = match.span(group)
    if start < 0:
        return None
    if end - start >= 2 and text[start] in "'\"" and text[end - 1] == text[start]:
        start, end = start + 1, end - 1
    value = text[start:end]
    return (start, end) if credential_value(value) and not value.startswith("-") else None


# Passwords given on a command line by a program's own short option, or fed to it.
SHORT_OPTIONS = (
    # Registry and cloud logins: `docker login -u me -p VALUE` (podman, buildah, skopeo, nerdctl,
    # oras, `helm registry login`), `az login -u me -p VALUE`.
    Rule(
        "login-password-option",
        ("docker", "podman", "buildah", "skopeo", "nerdctl", "oras", "helm", "az ", "crane"),
        re.compile(
            r"(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]+registry|az(?:[ \t]+acr)?|crane[ \t]+auth)"
            r"[ \t]+login" + WORDS + r"[ \t]+-p(?:[ \t]+|=)?" + OPTION_VALUE
        ),
        option_value,
    ),
    # MongoDB's shells and tools: `mongosh -u admin -p VALUE`, `mongodump ... -p VALUE`.
    Rule(
        "mongo-password-option",
        ("mongo",),
        re.compile(
            r"mongo(?:sh|dump|restore|export|import|stat|top|files)?(?![\w.-])"
            + WORDS
            + r"[ \t]+-p[ \t]+"
            + OPTION_VALUE
        ),
        option_value,
    ),
    # SQL Server's clients: `sqlcmd -S host -U sa -P VALUE`, `bcp ... -P VALUE`.
    Rule(
        "sqlcmd-password-option",
        ("sqlcmd", "bcp"),
        re.compile(r"(?:sqlcmd|bcp)(?![\w.-])" + WORDS + r"[ \t]+-P[ \t]*" + OPTION_VALUE),
        option_value,
    ),
    Rule(
        "redis-cli-password-option",
        ("redis-cli",),
        re.compile(r"redis-cli" + WORDS + r"[ \t]+-a[ \t]+" + OPTION_VALUE),
        option_value,
    ),
    # OpenLDAP's clients: `ldapsearch -x -D cn=admin -w VALUE` (`-W` asks instead).
    Rule(
        "ldap-password-option",
        ("ldap",),
        re.compile(
            r"ldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn|exop|url)"
            + WORDS
            + r"[ \t]+-w[ \t]*"
            + OPTION_VALUE
        ),
        option_value,
    ),
    # Samba's clients: `smbclient //host/share -U user%VALUE`, `--user=user%VALUE`.
    Rule(
        "samba-user-password",
        ("smbclient", "rpcclient", "smbcacls", "smbget", "smbmap"),
        re.compile(
            r"(?:smbclient|rpcclient|smbcacls|smbget|smbmap)"
            + WORDS
            + r"[ \t]+(?:-U[ \t]*|--user(?:name)?[= \t])[\"']?[^\s%\"'/]{1,64}%(?P<bare>[^\s\"'|;&]{1,256})"
        ),
        option_value,
    ),
    Rule(
        "htpasswd-batch-password",
        ("htpasswd",),
        re.compile(
            r"htpasswd(?P<flags>(?:[ \t]+-[A-Za-z]{1,8})+)[ \t]+(?P<first>[^\s|;&]{1,256})[ \t]+"
            r"(?P<second>'[^'\n]{1,256}'|\"[^\"\n]{1,256}\"|[^\s|;&]{1,256})"
            r"(?:[ \t]+(?P<third>'[^'\n]{1,256}'|\"[^\"\n]{1,256}\"|[^\s|;&]{1,256}))?"
        ),
        _htpasswd_value,
    ),
    # A literal fed to a program that reads its password on stdin: `echo VALUE | sudo -S ...`,
    # `echo VALUE | docker login --password-stdin`, `echo 'user:VALUE' | chpasswd`, `sudo -S ... <<< VALUE`.
    Rule(
        "piped-password",
        ("echo", "printf"),
        re.compile(
            r"(?:echo(?:[ \t]+-[neE]{1,3})?|printf(?:[ \t]+'%s(?:\\n)?'|[ \t]+\"%s(?:\\n)?\")?)[ \t]+"
            + OPTION_VALUE
            + r"[ \t]*\|[ \t]*(?:sudo(?:[ \t]+-[A-Za-z]{1,8})*?[ \t]+-[A-Za-z]{0,7}S|[^|;&\n]{0,256}--password-stdin"
            r"|(?:sudo[ \t]+)?(?:chpasswd|passwd[ \t]+--stdin)|docker[ \t]+secret[ \t]+create|" + _STDIN_SECRET + ")"
        ),
        option_value,
    ),
    # The same given as a here-string: `sudo -S … <<< VALUE`, `chpasswd <<< 'user:VALUE'`,
    # `passwd --stdin root <<< VALUE`.
    Rule(
        "here-string-password",
        (
            "sudo",
            "chpasswd",
            "passwd --stdin",
            "gh auth",
            "npx",
            "wrangler",
            "vercel",
            "gcloud",
            "firebase",
            "gpg",
            "keepassxc",
        ),
        re.compile(
            r"(?:sudo(?:[ \t]+-[A-Za-z]{1,8})*?[ \t]+-[A-Za-z]{0,7}S|chpasswd|passwd[ \t]+--stdin|"
            + _STDIN_SECRET
            + ")"
            r"[^\n<|;&]{0,256}<<<[ \t]*" + OPTION_VALUE
        ),
        option_value,
    ),
    # A literal given through a process substitution to a password or token file option:
    # `--vault-password-file <(echo VALUE)`, `gh auth login --with-token < <(echo VALUE)`.
    Rule(
        "substituted-password",
        ("<(echo", "<(printf", "< (echo"),
        re.compile(
            r"(?:--[\w-]{0,32}(?:password|passphrase|secret|token|data-file)[\w-]{0,16}(?:=|[ \t]+)|--with-token[ \t]*)"
            r"<?[ \t]*<\([ \t]*(?:echo(?:[ \t]+-[neE]{1,3})?|printf(?:[ \t]+'%s(?:\\n)?')?)[ \t]+" + OPTION_VALUE
        ),
        lambda match, text: _unbracketed(option_value(match, text), text),
        scan=True,
    ),
    # Settings commands that store a credential: `aws configure set aws_secret_access_key VALUE`,
    # `npm config set //registry.example.com/:_authToken VALUE` (yarn's `npmAuthToken`, pnpm).
    Rule(
        "aws-configure-secret",
        ("aws configure set",),
        re.compile(
            r"aws[ \t]+configure[ \t]+set[ \t]+(?:[\w.-]{0,64}\.)?(?:aws_secret_access_key|aws_session_token)[ \t]+"
            + OPTION_VALUE
        ),
        option_value,
        folded=True,
    ),
    Rule(
        "package-manager-auth-setting",
        ("npm config set", "yarn config set", "pnpm config set"),
        re.compile(
            r"(?:npm|yarn|pnpm)[ \t]+config[ \t]+set[ \t]+(?:[^\s:]{0,256}:)?"
            r"(?:_authtoken|_auth|_password|npmauthtoken)(?:[ \t]+|=)" + OPTION_VALUE
        ),
        option_value,
        folded=True,
    ),
)


def program_rule(name: str, literals: tuple[str, ...], before_value: str, *, scan: bool = False) -> Rule:
    """A program given a password or token by `before_value` (a regex ending where the value
    starts), the value judged as an option's."""
    return Rule(name, literals, re.compile(before_value + OPTION_VALUE), option_value, scan=scan)


# Programs that take a password, a key's passphrase or a token as an argument of their own.
PROGRAM_ARGUMENTS = (
    # Java's keystores: `keytool ... -storepass VALUE -keypass VALUE` (`-srcstorepass`, `-deststorepass`).
    program_rule(
        "keytool-password", ("keytool",), r"keytool" + WORDS + r"[ \t]+-(?:src|dest|new)?(?:storepass|keypass)[ \t]+"
    ),
    # A key's passphrase: `ssh-keygen -N VALUE` (`-P` the old one); an archive's: `zip -P VALUE`, `7z a -pVALUE`.
    program_rule("ssh-keygen-passphrase", ("ssh-keygen",), r"ssh-keygen" + WORDS + r"[ \t]+-[NP][ \t]*"),
    program_rule("zip-password", ("zip -", "unzip -"), r"(?<![\w.-])(?:un)?zip" + WORDS + r"[ \t]+-P[ \t]+"),
    program_rule(
        "7z-password", ("7z a ", "7za a ", "7z x ", "7za x ", "7z e "), r"(?<![\w.-])7z[a-z]?" + WORDS + r"[ \t]+-p"
    ),
    # `openssl enc -aes-256-cbc -k VALUE` (the key's passphrase; `-pass pass:` has its own rule).
    program_rule(
        "openssl-enc-key",
        ("openssl",),
        r"openssl[ \t]+(?:enc|aes|des|bf|camellia|chacha)[\w-]*" + WORDS + r"[ \t]+-k[ \t]+",
    ),
    # `openssl passwd [-1|-5|-6|-apr1|-salt S] VALUE` hashes a password given as an argument
    # (`usermod --password $(openssl passwd -6 VALUE) bob`).
    Rule(
        "openssl-passwd",
        ("openssl passwd",),
        re.compile(
            r"openssl[ \t]+passwd(?:[ \t]+-(?:1|5|6|apr1|aixmd5|crypt|quiet|table|noverify|reverse)"
            r"|[ \t]+-salt[ \t]+[^\s|;&)]{1,64})*[ \t]+" + OPTION_VALUE
        ),
        lambda match, text: _unbracketed(option_value(match, text), text),
    ),
    # Redis's settings: `requirepass VALUE`, `masterauth VALUE` (redis.conf, `CONFIG SET`).
    program_rule("redis-password-setting", ("requirepass", "masterauth"), r"(?:requirepass|masterauth)[ \t]+"),
    program_rule("mysqladmin-password", ("mysqladmin",), r"mysqladmin" + WORDS + r"[ \t]+password[ \t]+"),
    program_rule(
        "rabbitmqctl-password",
        ("rabbitmqctl",),
        r"rabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+[^\s|;&]{1,256}[ \t]+",
    ),
    # Secret stores set from a command line: `gh secret set NAME --body VALUE`,
    # `aws ssm put-parameter ... --value VALUE`.
    program_rule(
        "gh-secret-body",
        ("secret set",),
        r"gh[ \t]+secret[ \t]+set" + WORDS + r"[ \t]+(?:-b[ \t]*|--body(?:[ \t]+|=))",
        scan=True,
    ),
    program_rule("ssm-parameter-value", ("put-parameter",), r"put-parameter" + WORDS + r"[ \t]+--value(?:[ \t]+|=)"),
    # Tokens given as an argument: `ngrok config add-authtoken VALUE`, `vault login VALUE`,
    # `poetry config pypi-token.pypi VALUE` / `http-basic.corp USER VALUE`.
    program_rule("ngrok-authtoken", ("ngrok",), r"ngrok(?:[ \t]+config)?[ \t]+(?:add-)?authtoken[ \t]+"),
    program_rule(
        "vault-login-token",
        ("vault",),
        r"vault[ \t]+login(?:[ \t]+-[^\s=]{1,64}(?:=[^\s]{1,256})?){0,8}[ \t]+(?![^\s]*=)",
    ),
    program_rule(
        "poetry-credential",
        ("poetry",),
        r"poetry[ \t]+config[ \t]+(?:http-basic\.[^\s]{1,128}[ \t]+[^\s]{1,128}|pypi-token\.[^\s]{1,128})[ \t]+",
    ),
    program_rule("vercel-token", ("vercel",), r"vercel" + WORDS + r"[ \t]+-t[ \t]+"),
    # Redis's `AUTH [user] VALUE` at its prompt (`127.0.0.1:6379> AUTH …`).
    Rule(
        "redis-auth-command",
        ("> auth",),
        re.compile(r">[ \t]?(?i:auth)(?:[ \t]+[^\s]{1,64}(?=[ \t]+[^\s]))?[ \t]+(?P<value>[^\s'\"]{1,256})"),
        lambda match, text: match.span("value") if credential_value(match.group("value")) else None,
    ),
    program_rule("twine-password", ("twine",), r"twine" + WORDS + r"[ \t]+-p[ \t]+"),
    # Oracle's `user/password@db`: `sqlplus system/VALUE@//host/XE`, `rman target sys/VALUE@db`,
    # `jdbc:oracle:thin:scott/VALUE@host:1521:ORCL`.
    Rule(
        "oracle-user-password",
        ("sqlplus", "rman target", "expdp", "impdp", "sqlldr", "jdbc:oracle:"),
        re.compile(
            r"(?:(?:sqlplus|rman|expdp|impdp|sqlldr)(?:[ \t]+-\w{1,16})*[ \t]+(?:target[ \t]+|userid=)?[\"']?"
            r"|jdbc:oracle:(?:thin|oci):)[\w$#]{1,64}/(?P<bare>[^@\s\"'/]{1,128})(?=[@\s\"']|\Z)"
        ),
        option_value,
    ),
    program_rule("lftp-user-password", ("lftp",), r"lftp" + WORDS + r"[ \t]+-u[ \t]+[^\s,'\"]{1,64},"),
    # Windows: `net user NAME PASSWORD [/add]` (`*` asks for one), `psexec \\host -u NAME -p PASSWORD`.
    Rule(
        "net-user-password",
        ("net user",),
        re.compile(r"net[ \t]+user[ \t]+[^\s/*]{1,64}[ \t]+(?P<bare>[^\s/*'\"][^\s'\"]{0,255})"),
        option_value,
        folded=True,
    ),
    program_rule("psexec-password", ("psexec",), r"psexec" + WORDS + r"[ \t]+-p[ \t]+"),
    # Round 12. A key as a login's only argument, after its flags: `wandb login [--relogin] KEY`,
    # `cargo login TOKEN`, `snyk auth TOKEN` (a key's length: `wandb login --host URL` stays).
    Rule(
        "login-key-argument",
        ("wandb", "cargo", "snyk"),
        re.compile(
            r"(?:wandb[ \t]+login|cargo[ \t]+login|snyk[ \t]+auth)(?:[ \t]+--?[\w-]{1,32})*[ \t]+" + OPTION_VALUE
        ),
        lambda match, text: _key_value(option_value(match, text), text),
    ),
    # Short options these programs take a token or password with.
    program_rule("doctl-token", ("doctl",), r"doctl[ \t]+auth[ \t]+init" + WORDS + r"[ \t]+-t[ \t]+"),
    program_rule("codecov-token", ("codecov",), r"codecov" + WORDS + r"[ \t]+-t[ \t]+"),
    program_rule("unrar-password", ("unrar",), r"unrar" + WORDS + r"[ \t]+-p"),
    program_rule("poetry-publish-password", ("poetry",), r"poetry[ \t]+publish" + WORDS + r"[ \t]+-p[ \t]+"),
    program_rule(
        "keychain-password",
        ("security",),
        r"security[ \t]+add-(?:generic|internet)-password" + WORDS + r"[ \t]+-w[ \t]+",
    ),
    # A registry's `user:password` pair: `skopeo copy --src-creds alice:VALUE …` (`--dest-creds`, `--creds`).
    program_rule("registry-creds", ("-creds",), r"--(?:src-|dest-)?creds(?:[ \t]+|=)[\"']?[^\s:'\"]{1,64}:", scan=True),
    # Settings that store one: `git config github.token VALUE`, rclone's `secret_access_key VALUE`,
    # MinIO's `mc alias set NAME URL ACCESS SECRET`, and a credential's name set to a value
    # (`netlify env:set STRIPE_SECRET_KEY VALUE`, `doppler secrets set`, `convex env set`).
    program_rule(
        "git-config-credential",
        ("git config",),
        r"git[ \t]+config(?:[ \t]+--[\w-]{1,16})*[ \t]+[\w.-]{0,64}\.(?:token|password|secret|api-?key)[ \t]+",
    ),
    program_rule(
        "rclone-config-secret",
        ("rclone",),
        r"rclone[ \t]+config[ \t]+(?:create|update)"
        + WORDS
        + r"[ \t]+(?:secret_access_key|pass|password|client_secret|token)[ \t=]",
    ),
    program_rule(
        "minio-alias-secret",
        ("mc alias set", "mc config host add"),
        r"mc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)(?:[ \t]+[^\s|;&]{1,256}){3}[ \t]+",
    ),
    program_rule(
        "env-set-credential",
        ("env:set", "secrets set", "env set"),
        r"(?:netlify[ \t]+env:set|doppler[ \t]+secrets[ \t]+set|convex[ \t]+env[ \t]+set|dotenv[ \t]+set)[ \t]+"
        r"[A-Z0-9_]{0,64}(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?)[A-Z0-9_]{0,32}[ \t]+",
        scan=True,
    ),
)


def _key_value(span: Span | None, text: str) -> Span | None:
    """`span` when it reads as a key (16 characters or more, no `/`): a login's argument may be a
    word or a flag's URL (`wandb login --host https://…`)."""
    return span if span is not None and span[1] - span[0] >= 16 and "/" not in text[span[0] : span[1]] else None


COMMAND_LINE_RULES: tuple[Rule, ...] = (*LONG_OPTIONS, *SHORT_OPTIONS, *PROGRAM_ARGUMENTS)
