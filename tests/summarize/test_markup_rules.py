"""A list given to a credential's name outside JSON (a YAML block or flow sequence, a code list)
and an HTML password field's value: found by the round-6 trust pass quoted whole in the extractive
summary's exact values (`password:` then `  - VALUE`), or in pieces (`<input type="password"
value="Vp4#mQ9!zR2w">` gave `mQ9 zR2w`)."""

from __future__ import annotations

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

SECRET = "Vp4#mQ9!zR2w"
LEAKED = [
    "config.yml:\npassword:\n  - {}\n  - Second9Pw\nhost: db",
    "webhookSecret:\n    - {}\n",
    "password: [{}]",
    'DB_PASSWORD: ["{}", "Second9Pw"]',
    'password = ["{}"]',
    '<form><input type="password" name="pw" value="{}"></form>',
    "<INPUT value='{}' TYPE=password class=x>",
]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("template", LEAKED)
def test_a_listed_or_field_password_is_masked(template: str, layer: str) -> None:
    encode, decode = LAYERS[layer]
    redacted = redact_secrets(encode(template.format(SECRET)))
    decoded = decode(redacted)
    assert REDACTED in decoded and "mQ9" not in decoded and "zR2w" not in decoded and "Second9" not in decoded, decoded
    assert redact_secrets(redacted) == redacted


KEPT = [
    '<input type="text" name="user" value="bob_77">',
    '<input type="password" name="pw" value="">',
    "passwords = [a, b]",
    "password: []",
    "bypass:\n  - x1234567\n",
    "password:\n  - $DB_PASS\n",
    "secrets:\n  - db-password\n  - api-token\n",
    "password = [get_password()]",
    "passwordRules: [minLength]",
    # A validator's rules for the field (Laravel's `min:8`, `max:64`, `regex:...`): no value.
    "password: [required, min:8]",
    "password = ['required', 'string', 'min:8', 'max:64']",
    "rules:\n  password:\n    - required\n    - min:8\n    - max:64\n",
]


@pytest.mark.parametrize("text", KEPT)
def test_other_fields_placeholders_and_code_stay(text: str) -> None:
    assert redact_secrets(text) == text
