"""The credential rules `redact` applies: one line per kind of secret, grouped by family.

Modelled on the default rule sets of gitleaks, trufflehog and detect-secrets (their prefixes
and lengths), rewritten for speed. Every rule names literals it cannot match without: `redact`
runs a rule only when one of them occurs in the text (a `str.__contains__` scan at memory
speed, one Aho-Corasick pass for all literals at once), and then only where the literal
occurs: each pattern starts with its literal and is matched anchored at each occurrence, never
scanned over the text (`re` scans at ~20 MB/s). Whatever precedes a literal (the 32 hex digits
before a Mailchimp `-us1`) is checked by the rule's `span` function; so is the left word
boundary. A rule marked `scan` has no literal to anchor at: its literal only gates a full scan.

Rules marked `folded` are written in lower case and run on an ASCII-lower-cased copy of the
text of the same length (header and key names are case-insensitive); their spans apply to the
original text unchanged.

To add a rule: one `token_rule(...)` line (or `Rule(...)` for a masked group other than the whole
match) with its literals, and a true positive in tests/summarize/test_redact.py.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

Span = tuple[int, int]
REDACTED = "[REDACTED]"  # what a masked credential reads as


@dataclass(frozen=True)
class Rule:
    """One kind of credential: where to look (`literals`), what it looks like, what to mask."""

    name: str
    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    # The masked span of a match (None: not a secret after all). Default: the whole match,
    # if it does not continue a word on its left.
    span: Callable[[re.Match[str], str], Span | None] | None = None
    folded: bool = False
    scan: bool = False


def word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def name_start(text: str, index: int, also: str = "", limit: int = 64) -> int:
    """Where the name ending at `index` starts: back over word characters and those of `also`, at
    most `limit` of them (a rule looking left of each match stays linear in the text)."""
    start = index
    while start and index - start < limit and (word_char(text[start - 1]) or text[start - 1] in also):
        start -= 1
    return start


def whole_token(match: re.Match[str], text: str) -> Span | None:
    """The whole match, unless it starts inside a word (`xghp_...` is not a GitHub token)."""
    start = match.start()
    if start and word_char(text[start - 1]) and word_char(text[start]):
        return None
    return match.span()


def group_span(
    name: str | int, check: Callable[[str], bool] | None = None
) -> Callable[[re.Match[str], str], Span | None]:
    """Mask only group `name` of the match, when `check(value)` (on the original text) agrees."""

    def span(match: re.Match[str], text: str) -> Span | None:
        start, end = match.span(name)
        if start < 0 or start == end:
            return None
        if check is not None and not check(text[start:end]):
            return None
        return start, end

    return span


def token_rule(name: str, literals: str | tuple[str, ...], pattern: str, flags: int = 0) -> Rule:
    literals = (literals,) if isinstance(literals, str) else literals
    return Rule(name, literals, re.compile(pattern, flags), whole_token)


def _preceded(name: str, literal: str, before: str, pattern: str, *, boundary: bool = True) -> Rule:
    """A token whose literal is not at its start: `before` (a regex) must end where it begins.

    `boundary`: the token must not continue a word on its left (else `before` says what may precede).
    """
    lookback = re.compile(f"(?:{before})\\Z")

    def span(match: re.Match[str], text: str) -> Span | None:
        start = match.start()
        found = lookback.search(text, max(0, start - 80), start)
        if found is None or (boundary and found.start() and word_char(text[found.start() - 1])):
            return None
        return found.start(), match.end()

    return Rule(name, (literal,), re.compile(pattern), span)


def shannon_entropy(value: str) -> float:
    """Bits per character of `value` (detect-secrets' measure of randomness)."""
    if not value:
        return 0.0
    length = len(value)
    return -sum(n / length * math.log2(n / length) for n in Counter(value).values())


_HEX = frozenset("0123456789abcdefABCDEF")


def high_entropy(value: str) -> bool:
    """Random-looking: detect-secrets' limits (hex 3.0, base64 4.5 bits/char) scaled for length.

    A 20-character string cannot reach 4.5 bits per character (log2(20) = 4.32), so the limit
    is the lower of detect-secrets' and 80 % of the maximum for the value's length.
    """
    if len(value) < 16:
        return False
    limit_hex, limit_b64 = 3.0, 4.5
    most = math.log2(len(value))
    entropy = shannon_entropy(value)
    if all(ch in _HEX for ch in value):
        return entropy >= min(limit_hex, 0.8 * most)
    digits = value.replace("-", "")
    if len(digits) >= 16 and all(ch in _HEX for ch in digits):  # a UUID (`NPM_TOKEN`, `SNYK_TOKEN`)
        return shannon_entropy(digits) >= min(limit_hex, 0.8 * math.log2(len(digits)))
    has_digit = any(ch.isdigit() for ch in value)
    return has_digit and entropy >= min(limit_b64, 0.8 * most)


def _authorization_value(value: str) -> bool:
    """A header value, not prose: a digit or a symbol in it, or long and mixed-case."""
    if value.lower() in {"required", "optional", "redacted", "none", "null"}:
        return False
    if any(not ch.isalpha() for ch in value):
        return True
    return len(value) >= 20 and not value.islower() and not value.isupper()


def _authorization_span(match: re.Match[str], text: str) -> Span | None:
    """The header's value; not its scheme when the value after it is masked already
    (`Klaviyo-API-Key [REDACTED]`: redaction is idempotent)."""
    start, end = match.span(1)
    if not _authorization_value(text[start:end]) or text[end : end + 16].lstrip(" \t").startswith(REDACTED):
        return None
    return start, end


def credential_value(value: str) -> bool:
    """A password, not a placeholder (`$PASS`, `{password}`) nor a number (`-u 1000:1000`, uid:gid)."""
    return (
        bool(value)
        and value[0] not in "${<["
        and not placeholder_percent(value)
        and not value.isdigit()
        and value.lower() not in {"password", "pass", "redacted"}
    )


_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def placeholder_percent(value: str) -> bool:
    """Whether `value` starts with a `%` that opens a placeholder (`%PASSWORD%`, `%s`, `%(pw)s`),
    not a percent-escape (`%21Xk9…`: a URL-encoded password starting with `!`)."""
    return value[:1] == "%" and _PERCENT_ESCAPE.match(value) is None


_B64 = r"[A-Za-z0-9+/=]"
_ID = r"[A-Za-z0-9_-]"

# Private keys: PEM (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8), PGP and PuTTY, masked to their end
# marker, or to the end of the text when it was cut away.
PRIVATE_KEYS = (
    token_rule(
        "pem-private-key",
        "-----BEGIN ",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
        re.DOTALL,
    ),
    token_rule(
        "pgp-private-key",
        "-----BEGIN ",
        r"-----BEGIN PGP (?:PRIVATE|SECRET) KEY BLOCK-----.*?(?:-----END PGP (?:PRIVATE|SECRET) KEY BLOCK-----|\Z)",
        re.DOTALL,
    ),
    token_rule(
        "ssh2-private-key",
        "---- BEGIN SSH2 ",
        r"---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----.*?(?:---- END SSH2 (?:ENCRYPTED )?PRIVATE KEY ----|\Z)",
        re.DOTALL,
    ),
    token_rule(
        "openvpn-static-key",
        "-----BEGIN OpenVPN Static key",
        r"-----BEGIN OpenVPN Static key V\d-----.*?(?:-----END OpenVPN Static key V\d-----|\Z)",
        re.DOTALL,
    ),
    token_rule(
        "putty-private-key",
        "PuTTY-User-Key-File-",
        r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC: [0-9a-fA-F]+|\Z)",
        re.DOTALL,
    ),
    token_rule("age-secret-key", "AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
)

CLOUD = (
    token_rule(
        "aws-access-key-id", ("AKIA", "ASIA", "ABIA", "ACCA"), r"A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    ),
    token_rule("gcp-api-key", "AIza", rf"AIza{_ID}{{35}}"),
    token_rule("gcp-oauth-client-secret", "GOCSPX-", rf"GOCSPX-{_ID}{{28}}"),
    token_rule("gcp-oauth-access-token", "ya29.", rf"ya29\.{_ID}{{20,1024}}"),
    Rule(
        "azure-storage-key",
        ("accountkey=", "sharedaccesskey="),
        re.compile(r"(?:accountkey|sharedaccesskey)=([a-z0-9+/=]{20,1024})"),
        group_span(1),
        folded=True,
    ),
    _preceded("azure-ad-client-secret", "Q~", r"[A-Za-z0-9_~.]{3}\d", r"Q~[A-Za-z0-9_~.-]{31,34}"),
    token_rule("digitalocean-token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"do[por]_v1_[a-f0-9]{64}"),
    token_rule("heroku-api-key", "HRKU-", rf"HRKU-{_ID}{{20,1024}}"),
    token_rule("databricks-token", "dapi", r"dapi[a-f0-9]{32}(?:-\d)?"),
    token_rule("vault-token", ("hvs.", "hvb.", "hvr."), rf"hv[sbr]\.{_ID}{{24,1024}}"),
    token_rule("doppler-token", "dp.", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,1024}"),
    token_rule("pulumi-token", "pul-", r"pul-[a-f0-9]{40}"),
    _preceded("terraform-token", ".atlasv1.", r"[A-Za-z0-9]{14}", r"\.atlasv1\.[A-Za-z0-9_=-]{60,1024}"),
)

VCS_AND_CI = (
    token_rule("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,1024}"),
    token_rule("github-fine-grained-pat", "github_pat_", r"github_pat_[A-Za-z0-9_]{22,1024}"),
    token_rule(
        "gitlab-token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glimt-", "glagent-", "glffct-", "gloas-", "glft-"),
        rf"gl(?:pat|dt|rt|ptt|soat|cbt|imt|agent|ffct|oas|ft)-{_ID}{{20,1024}}",
    ),
    token_rule("gitlab-runner-registration", "GR1348941", rf"GR1348941{_ID}{{20,1024}}"),
    token_rule("bitbucket-app-password", "ATBB", r"ATBB[A-Za-z0-9_=.-]{28,1024}"),
    token_rule("atlassian-api-token", ("ATATT3", "ATCTT3"), r"AT[AC]TT3[A-Za-z0-9_=.-]{20,1024}"),
    token_rule("circleci-token", ("CCIPAT_", "CCIPRJ_"), r"CCIP(?:AT|RJ)_[A-Za-z0-9_]{20,1024}"),
    token_rule(
        "grafana-token", ("glc_", "glsa_"), r"gl(?:c_[A-Za-z0-9+/=]{32,1024}|sa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8})"
    ),
    token_rule("sentry-token", ("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9_=+/]{40,1024}"),
    token_rule("postman-api-key", "PMAK-", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
)

CHAT = (
    token_rule("slack-token", "xox", r"xox[abposre]-[A-Za-z0-9-]{10,1024}"),
    token_rule("slack-app-token", "xapp-", r"xapp-[A-Za-z0-9-]{20,1024}"),
    Rule(
        "slack-webhook",
        ("hooks.slack.com/",),
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_+-]{20,1024})"),
        group_span(1),
    ),
    Rule(
        "discord-webhook",
        ("/api/webhooks/",),
        re.compile(r"/api/webhooks/(\d{5,1024}/[A-Za-z0-9_-]{30,1024})"),
        group_span(1),
    ),
    # No literal of its own: scanned for when the text names Discord.
    Rule(
        "discord-bot-token",
        ("discord",),
        re.compile(
            r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])"
        ),
        whole_token,
        scan=True,
    ),
    # Often in a URL path: `https://api.telegram.org/bot<token>/getMe`.
    _preceded(
        "telegram-bot-token",
        ":AA",
        r"(?:(?<=bot)|(?<![A-Za-z0-9_]))\d{8,10}",
        r":AA[A-Za-z0-9_-]{32,33}(?![A-Za-z0-9_-])",
        boundary=False,
    ),
)

PAYMENT = (
    token_rule(
        "stripe-key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_"),
        r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,1024}",
    ),
    token_rule("stripe-webhook-secret", "whsec_", r"whsec_[A-Za-z0-9+/=]{24,1024}"),
    token_rule("square-token", ("sq0atp-", "sq0csp-"), rf"sq0(?:atp-{_ID}{{22}}|csp-{_ID}{{43}})"),
    token_rule("square-access-token", "EAAA", r"EAAA[A-Za-z0-9_+=-]{56,1024}"),
    token_rule(
        "paypal-braintree-token",
        "access_token$",
        r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}",
    ),
    token_rule("shopify-token", ("shpat_", "shpss_", "shpca_", "shppa_"), r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
)

PACKAGE_REGISTRIES = (
    token_rule("npm-token", "npm_", r"npm_[A-Za-z0-9]{36}"),
    token_rule("pypi-token", "pypi-AgE", rf"pypi-AgE{_ID}{{50,1024}}"),
    token_rule("rubygems-key", "rubygems_", r"rubygems_[a-f0-9]{48}"),
    token_rule("nuget-key", "oy2", r"oy2[a-z0-9]{43}"),
    token_rule("docker-hub-pat", "dckr_pat_", rf"dckr_pat_{_ID}{{20,1024}}"),
)

AI_PROVIDERS = (
    # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-api03-), OpenRouter (sk-or-v1-), DeepSeek and
    # others. A digit is required so that long hyphenated words ("sk-learn-compatible-...") survive.
    token_rule("openai-style-key", "sk-", r"sk-(?=[A-Za-z0-9_-]{0,1024}[0-9])[A-Za-z0-9_-]{20,1024}"),
    token_rule("huggingface-token", ("hf_", "api_org_"), r"(?:hf_|api_org_)[A-Za-z0-9]{30,1024}"),
    token_rule("groq-key", "gsk_", r"gsk_[A-Za-z0-9]{40,1024}"),
    token_rule("replicate-token", "r8_", r"r8_[A-Za-z0-9]{30,1024}"),
    token_rule("perplexity-key", "pplx-", r"pplx-[A-Za-z0-9]{40,1024}"),
    token_rule("xai-key", "xai-", r"xai-[A-Za-z0-9]{60,1024}"),
    token_rule("langsmith-key", "lsv2_", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
)

SAAS = (
    token_rule("sendgrid-key", "SG.", rf"SG\.{_ID}{{22}}\.{_ID}{{43}}"),
    token_rule("twilio-api-key", "SK", r"SK[0-9a-fA-F]{32}(?![0-9a-zA-Z])"),
    token_rule("mailgun-key", "key-", r"key-[0-9a-zA-Z]{32}(?![0-9a-zA-Z])"),
    _preceded("mailchimp-key", "-us", r"[0-9a-f]{32}", r"-us\d{1,2}(?![0-9])"),
    token_rule("linear-api-key", "lin_api_", r"lin_api_[A-Za-z0-9]{40}"),
    token_rule(
        "notion-token", ("secret_", "ntn_"), r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,1024})(?![A-Za-z0-9])"
    ),
    # A JWT, signed or not (`alg: none`: an empty signature, and still a session's bearer token), and
    # a JWE (five parts: header, key, IV, ciphertext, tag; the key empty in `dir` mode).
    token_rule(
        "jwt",
        "eyJ",
        r"eyJ[A-Za-z0-9_-]{8,4096}\.(?:eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{0,4096}"
        r"|[A-Za-z0-9_-]{0,4096}\.[A-Za-z0-9_-]{8,256}\.[A-Za-z0-9_-]{8,65536}\.[A-Za-z0-9_-]{8,256})",
    ),
)

# `scheme://user:password@host` (any scheme): the password, to the authority's last `@` (an
# unencoded `@` in a password is common: `admin:p@ss@db`). Bounded runs keep it linear.
URL_PASSWORD = Rule(
    "url-password",
    ("://",),
    re.compile(r"://[^\s:/@'\"<>]{0,256}:([^\s/?#'\"<>]{1,256})@"),
    group_span(1, credential_value),
)

_SESSION_VALUE = re.compile(r"=(?=[^;\s]{0,4096}[0-9])[^;\s]{12,4096}")


def _session_values(match: re.Match[str], text: str) -> Span | None:
    """From the first token-like cookie value in group 1 to the last (None: none there)."""
    start, end = match.span(1)
    values = list(_SESSION_VALUE.finditer(text, start, end))
    return (values[0].start() + 1, values[-1].end()) if values else None


# `scheme://TOKEN@host`: a token given as the user, no password (`git clone
# https://<token>@github.com/...`, as GitHub and GitLab take one); random-looking, with a digit, so
# `https://git@host` and `ssh://deploy-user@host` stay.
URL_TOKEN_USER = Rule(
    "url-token-user",
    ("://",),
    re.compile(r"://([^\s:/@'\"<>]{16,256})@"),
    group_span(1, lambda user: high_entropy(user) and any(char.isdigit() for char in user)),
)

HEADERS = (
    # `Authorization: Basic|Bearer|SSWS|Klaviyo-API-Key|... <value>`, in a header, a curl line, JSON
    # or YAML, a call (`Header.Set("Authorization", "…")`) or nginx (`proxy_set_header Authorization "…"`).
    Rule(
        "authorization-header",
        ("authorization",),
        re.compile(
            r"authorization[\"']?(?:\s{0,4}[:=,]\s{0,4}|[ \t]{1,4})[\"']?"
            r"(?:[a-z][\w-]{1,32}\s+)?([\w.~+/=:-]{8,8192})"
        ),
        _authorization_span,
        folded=True,
    ),
    # `Bearer <token>` anywhere; a digit is required so prose ("bearer tokens are...") survives.
    Rule(
        "bearer-token",
        ("bearer",),
        re.compile(r"bearer\s+(?=[a-z0-9._~+/=-]{0,8192}[0-9])([a-z0-9._~+/=-]{8,8192})"),
        group_span(1),
        folded=True,
    ),
    # `Cookie:` and `Set-Cookie:` headers (curl -v, -H, a HAR or a browser's dump): their
    # token-like values (12 characters or more, a digit among them), from the first to the last,
    # so `cookie: true` in a config and `theme=dark` stay.
    Rule(
        "cookie-header",
        ("cookie",),
        re.compile(r"cookie[\"']?\s{0,4}:\s{0,4}[\"']?([^\r\n'\"]{1,4096})"),
        _session_values,
        folded=True,
        scan=True,  # one pass: a header's value is read once, not again at each `cookie` inside it
    ),
    # curl's `-b 'name=value'` / `--cookie ...`: as the header.
    Rule(
        "cookie-option",
        ("-b ", "--cookie"),
        re.compile(r"(?:-b|--cookie)[ =]{1,4}[\"']?([^\r\n'\"\s]{1,4096})"),
        _session_values,
        folded=True,
        scan=True,
    ),
    # `curl -u user:password`, `--user user:password`, `-u :password` (a token with no user).
    Rule(
        "basic-auth-option",
        ("-u ", "--user ", "--user="),
        re.compile(r"(?:-u|--user)[ =][\"']?[^\s:\"'$]{0,64}:([^\s\"'@]{3,256})"),
        group_span(1, credential_value),
        folded=True,
    ),
)

BY_FAMILY: dict[str, tuple[Rule, ...]] = {
    "private keys": PRIVATE_KEYS,
    "cloud": CLOUD,
    "VCS and CI": VCS_AND_CI,
    "chat": CHAT,
    "payment": PAYMENT,
    "package registries": PACKAGE_REGISTRIES,
    "AI providers": AI_PROVIDERS,
    "SaaS and tokens": SAAS,
    "passwords in URLs": (URL_PASSWORD, URL_TOKEN_USER),
    "authorization headers": HEADERS,
}
RULES: tuple[Rule, ...] = tuple(rule for family in BY_FAMILY.values() for rule in family)
