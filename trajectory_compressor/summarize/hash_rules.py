"""Password hashes and the hashes that stand for a password (round 9).

A hash is no password, but it is cracked offline from any copy of it, and an NT hash or a Kerberos
key logs in as the password does (pass the hash): detect-secrets' and gitleaks' users mask a shadow
line. Each shape is exact (its salt and digest lengths), so `$1$2` in a shell script or an awk
program, and `$5$` in prose, stay.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.secret_rules import Rule, group_span, token_rule

_CRYPT = r"[./A-Za-z0-9]"
_HASH_END = r"(?![./A-Za-z0-9])"
PASSWORD_HASHES = (
    token_rule("bcrypt-hash", ("$2a$", "$2b$", "$2y$", "$2x$"), rf"\$2[abxy]\$\d\d\${_CRYPT}{{53}}{_HASH_END}"),
    token_rule("md5-crypt-hash", ("$1$", "$apr1$"), rf"\$(?:1|apr1)\${_CRYPT}{{1,8}}\${_CRYPT}{{22}}{_HASH_END}"),
    token_rule(
        "sha-crypt-hash",
        ("$5$", "$6$"),
        rf"\$(?:5\$(?:rounds=\d{{1,9}}\$)?{_CRYPT}{{1,16}}\${_CRYPT}{{43}}"
        rf"|6\$(?:rounds=\d{{1,9}}\$)?{_CRYPT}{{1,16}}\${_CRYPT}{{86}}){_HASH_END}",
    ),
    token_rule(
        "yescrypt-hash", ("$y$", "$gy$"), rf"\$g?y\${_CRYPT}{{1,32}}\${_CRYPT}{{1,64}}\${_CRYPT}{{43}}{_HASH_END}"
    ),
    token_rule(
        "argon2-hash",
        "$argon2",
        r"\$argon2(?:id|i|d)\$v=\d{1,4}\$m=\d{1,10},t=\d{1,10},p=\d{1,4}\$[A-Za-z0-9+/]{8,128}\$[A-Za-z0-9+/]{16,512}",
    ),
    token_rule(
        "django-password-hash",
        ("pbkdf2_sha", "pbkdf2-sha", "bcrypt_sha256$", "scrypt$"),
        r"(?:pbkdf2[_-]sha(?:1|256|512)\$\d{1,9}\$[A-Za-z0-9./+]{1,128}\$[A-Za-z0-9+/]{20,128}={0,2}"
        r"|bcrypt_sha256\$\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}"
        r"|scrypt\$\d{1,9}\$[A-Za-z0-9./+]{1,128}\$\d{1,3}\$\d{1,3}\$[A-Za-z0-9+/]{20,256}={0,2})",
    ),
    # An NTLM hash dump's line (`secretsdump.py`, `hashdump`: `user:RID:LM:NT:::`): both hashes, each
    # a credential to a pass-the-hash tool.
    Rule(
        "ntlm-hash-line",
        (":::",),
        re.compile(r"(?<!\S)[^:\s]{1,64}:\d{1,10}:(?P<hashes>[0-9a-fA-F]{32}:[0-9a-fA-F]{32}):::"),
        group_span("hashes"),
        scan=True,
    ),
    token_rule(
        "werkzeug-password-hash",
        ("pbkdf2:sha", "scrypt:"),
        r"(?:pbkdf2:sha(?:1|256|512)(?::\d{1,9})?|scrypt:\d{1,9}:\d{1,3}:\d{1,3})\$[A-Za-z0-9]{1,64}\$[a-f0-9]{40,256}",
    ),
)

# phpass (WordPress, phpBB: `$P$` / `$H$`, a cost letter, a salt and a digest: 31 characters).
PHPASS = token_rule("phpass-hash", ("$p$", "$h$"), r"\$[PH]\$[./A-Za-z0-9]{31}(?![./A-Za-z0-9])")
# What a credential dump shows for each account: a Kerberos key (`secretsdump.py`'s
# `CORP\svc:aes256-cts-hmac-sha1-96:<64 hex>`), Mimikatz's `* NTLM     : <32 hex>`.
DUMPED_KEYS = (
    Rule(
        "kerberos-key-line",
        ("-cts-hmac-sha1-96:", ":des-cbc-md5:"),
        re.compile(r"(?:-cts-hmac-sha1-96|:des-cbc-md5):(?P<value>[0-9a-f]{16,64})(?![0-9a-f])"),
        group_span("value"),
    ),
    Rule(
        "mimikatz-hash",
        ("* ntlm", "* sha1"),
        re.compile(r"\* (?:ntlm|sha1)[ \t]{1,16}:[ \t]{1,4}(?P<value>[0-9a-f]{32,40})(?![0-9a-f])"),
        group_span("value"),
        folded=True,
    ),
)
HASH_RULES = (*PASSWORD_HASHES, PHPASS, *DUMPED_KEYS)
