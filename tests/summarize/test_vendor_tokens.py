"""Vendor tokens known by their prefix alone (found by the round-12 adversarial pass: each passed
when given with no revealing name, as a positional argument, a JSON value under an innocent key or
a line of output), and ordinary text that shares a prefix with one."""

from __future__ import annotations

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

_HEX40 = "3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a"
_B62 = "Xk9pQ2mZ7vT4nR8wL3jH6bF1cD5gS0yA"  # 32 characters, every class

VENDOR_TOKENS = [
    ("new-relic", "NRAK-" + "QW7B3PDKHX4PY8GPAN0RLYKEI2I"),
    ("new-relic-insert", "NRII-" + _B62),
    ("mapbox-secret", "sk.eyJ1IjoiYWxpY2UiLCJhIjoiY2x4eXoxMjM0In0." + "Ab3dEfGh7jKlMnOpQr5tUv"),
    ("contentful", "CFPAT-" + _B62 + "AbCdEfGh7jK"),
    ("supabase", "sbp_" + _HEX40),
    ("supabase-secret", "sb_secret_" + _B62),
    ("netlify", "nfp_" + _B62 + "Ab3d"),
    ("fly-io", "fm2_" + _B62 + _B62),
    ("fly-io-org", "fo1_" + _B62 + "Ab3dEfGh7jK"),
    ("planetscale", "pscale_pw_" + _B62 + "Ab3dEfGh7jK"),
    ("pinecone", "pcsk_2ZxYq_" + _B62 + _B62),
    ("tavily", "tvly-" + _B62),
    ("tavily-dev", "tvly-dev-" + _B62),
    ("firecrawl", "fc-" + _HEX40[:32]),
    ("google-refresh-token", "1//0" + _B62 + "-" + _B62),
    ("aws-session-token", "IQoJb3JpZ2luX2VjE" + (_B62 + "+/") * 5),
    ("alibaba", "LTAI" + "5tQ9pXk2mZ7vT4nR8wL3"),
    ("tencent", "AKID" + _B62),
    ("yandex", "AQVN" + _B62 + "Ab3dEf"),
    ("1password-service-account", "ops_eyJzaWduSW5BZGRyZXNzIjoibXkuMXBhc3N3b3JkLmNvbSIs" + _B62 * 3),
    ("buildkite", "bkua_" + _HEX40),
    ("sonarqube", "squ_" + _HEX40),
    ("jfrog", "AKCp" + _B62 + _B62 + "Ab3dE"),
    ("hubspot", "pat-na1-" + "7332cd38-9ed1-44c5-8a24-91e9e8958efc"),
    ("dynatrace", "dt0c01." + "BR37MRFO1092MMUQCM8KXG1X" + "." + "JSLA8J1GA93UF5JXADX4Q2V80KZ192BO" * 2),
    ("plaid", "access-sandbox-" + "8e279292-c9d3-4bd2-a6b3-ea3fa1e17998"),
    ("twitch", "oauth:" + "9kktyr4vim299mgb5ls8bmrkrzrfwt"),
    ("elevenlabs", "sk_" + _HEX40 + "0a1b2c3d"),
    ("prefect", "pnu_" + _B62 + "Ab3d"),
    ("figma", "figd_" + _B62 + "Ab3dEfGh"),
    ("render", "rnd_" + _B62),
    ("neon", "napi_" + _HEX40 + "0123456789abcdef01234567"),
    ("brevo", "xkeysib-" + _HEX40 + "0123456789abcdef01234567-" + "Ab3dEfGh7jKlMnOp"),
    ("nvidia", "nvapi-" + _B62 + _B62),
    ("cerebras", "csk-" + "2k9x8m4v7q1w3e5r6t8y9u0i2o4p6a8s1d3f5g7h9j0k2l4z"),
    ("doppler-service-token", "dp.st.dev." + _B62 + "Ab3dEfGh"),
    ("harness", "pat." + "Ab3dEfGh7jKlMnOpQr5tUv" + "." + "0123456789abcdef01234567" + "." + "Ab3dEfGh7jKlMnOpQr5t"),
]

# Where no name says what the value is: a positional argument, an innocent key, a line of output.
PLACES = [
    "{}",
    'client = Client("{}")',
    '{{"value": "{}", "ok": true}}',
    "export FOO={}",
    "Created: {} (copy it now)",
]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("vendor", "token"), VENDOR_TOKENS, ids=[v for v, _ in VENDOR_TOKENS])
def test_a_vendor_token_is_masked_by_its_prefix(vendor: str, token: str, place: str) -> None:
    redacted = redact_secrets(place.format(token))
    assert token[-12:] not in redacted and REDACTED in redacted, (vendor, redacted)
    assert redacted == place.format(REDACTED), redacted


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(("vendor", "token"), VENDOR_TOKENS, ids=[v for v, _ in VENDOR_TOKENS])
def test_a_vendor_token_is_masked_in_every_escaping_layer(vendor: str, token: str, layer: str) -> None:
    encode, decode = LAYERS[layer]
    decoded = decode(redact_secrets(encode(f"A=1\nout: {token}\nHOME=/root")))
    assert token[-12:] not in decoded and decoded == f"A=1\nout: {REDACTED}\nHOME=/root", decoded


ORDINARY = [
    "see rfc-7231 and fc-layer-2 for details",
    "pat.matches(); self.pat.sub('', text)",
    "oauth:scope read and oauth: true",
    "sk_learn_compatible_estimator_wrapper",
    "0x4b825dc642cb6eb9a060e54bf8d69288fbee4904e69de29bb2d1d6434b8b29ae",  # a transaction hash
    "the path pat-na1-notes is a folder",
    "access-sandbox-setup.sh",
    "git log: commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "LTAI_TIMEOUT=30 and AKID_HEADER=x-akid",
    "1//0 is a division by zero in JS comments",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_sharing_a_prefix_stays(text: str) -> None:
    assert redact_secrets(text) == text
