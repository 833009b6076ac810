"""Vendor tokens known by their prefix alone, beyond `secret_rules`' families.

Found by the round-12 adversarial pass: each passed when no revealing name stood beside it (a
positional argument, `Client("tvly-…")`, a JSON value under an innocent key, a line of a tool's
output), since the assignment rules need a name. The prefixes and lengths are the vendors'
documented formats (and gitleaks' rules where it has one); each prefix is specific enough that
ordinary text does not hold it followed by a run of that length (`rfc-7231`, `self.pat.sub`,
`oauth: true` and a transaction's `0x…` hash stay; tests/summarize/test_vendor_tokens.py). Values
with no prefix of their own (Datadog's, Azure OpenAI's, Mistral's 32 characters, an Ethereum
private key that looks like any hash) are masked only by their name, as before.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.secret_rules import Rule, whole_token

_ID = r"[A-Za-z0-9_-]"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_END = r"(?![A-Za-z0-9_-])"  # the run ends: a longer one is another shape


def _token(name: str, literals: str | tuple[str, ...], pattern: str) -> Rule:
    literals = (literals,) if isinstance(literals, str) else literals
    return Rule(name, literals, re.compile(pattern + _END), whole_token)


VENDOR_RULES: tuple[Rule, ...] = (
    # Observability and cloud.
    _token("new-relic-key", ("NRAK-", "NRII-"), r"NR(?:AK-[A-Z0-9]{27}|II-[A-Za-z0-9_-]{32})"),
    _token("dynatrace-token", "dt0", r"dt0[a-z][0-9]{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    _token("alibaba-access-key-id", "LTAI", r"LTAI(?=[A-Za-z]{0,20}[0-9])[A-Za-z0-9]{12,20}"),
    _token("tencent-secret-id", "AKID", r"AKID(?=[A-Za-z]{0,32}[0-9])[A-Za-z0-9]{32}"),
    _token("yandex-api-key", "AQVN", rf"AQVN{_ID}{{35,38}}"),
    _token(
        "aws-session-token",
        ("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz", "FQoGZXIvYXdz"),
        r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9+/=]{100,8192}",
    ),
    _token("google-oauth-refresh-token", "1//0", rf"1//0{_ID}{{40,1024}}"),
    _token(
        "doppler-service-token",
        "dp.",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.[a-z0-9_-]{1,35}\.[A-Za-z0-9]{40,1024}",
    ),
    # Hosting, databases and CI.
    _token("supabase-token", ("sbp_", "sb_secret_"), rf"sb(?:p_[a-f0-9]{{40}}|_secret_{_ID}{{20,1024}})"),
    _token("netlify-token", "nfp_", r"nfp_[A-Za-z0-9]{36,64}"),
    _token("fly-io-token", ("fm1_", "fm2_", "fo1_"), r"f(?:m[12]_[A-Za-z0-9+/=_-]{40,4096}|o1_[A-Za-z0-9_-]{43})"),
    _token("planetscale-token", "pscale_", r"pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_.=-]{32,64}"),
    _token("neon-api-key", "napi_", r"napi_[a-z0-9]{64}"),
    _token("render-api-key", "rnd_", r"rnd_[A-Za-z0-9]{32}"),
    _token("buildkite-token", "bkua_", r"bkua_[a-f0-9]{40}"),
    _token("sonarqube-token", ("squ_", "sqp_", "sqa_"), r"sq[upa]_[a-f0-9]{40}"),
    _token("jfrog-api-key", "AKCp", r"AKCp[A-Za-z0-9]{69}"),
    _token("prefect-api-key", "pnu_", r"pnu_[A-Za-z0-9]{36}"),
    _token("harness-token", "pat.", rf"pat\.{_ID}{{22}}\.[0-9a-f]{{24}}\.[A-Za-z0-9]{{20}}"),
    _token("onepassword-service-account", "ops_eyJ", r"ops_eyJ[A-Za-z0-9+/=_-]{100,8192}"),
    # SaaS.
    _token("mapbox-secret-token", "sk.eyJ", rf"sk\.eyJ{_ID}{{10,1024}}\.{_ID}{{20,1024}}"),
    _token("contentful-token", "CFPAT-", rf"CFPAT-{_ID}{{43}}"),
    _token("hubspot-token", ("pat-na", "pat-eu"), rf"pat-(?:na|eu)[0-9]-{_UUID}"),
    _token("plaid-token", "access-", rf"access-(?:sandbox|development|production)-{_UUID}"),
    _token("twitch-oauth-token", "oauth:", r"oauth:[a-z0-9]{30}"),
    _token("figma-token", "figd_", rf"figd_{_ID}{{40,1024}}"),
    _token("brevo-key", "xkeysib-", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    # AI and agent tools.
    _token("tavily-key", "tvly-", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32,64}"),
    _token("firecrawl-key", "fc-", r"fc-[a-f0-9]{32}"),
    _token("pinecone-key", "pcsk_", r"pcsk_[A-Za-z0-9]{4,10}_[A-Za-z0-9]{40,1024}"),
    _token("elevenlabs-key", "sk_", r"sk_[a-f0-9]{48}"),
    _token("nvidia-key", "nvapi-", rf"nvapi-{_ID}{{60,1024}}"),
    _token("cerebras-key", "csk-", r"csk-[a-z0-9]{48}"),
)
