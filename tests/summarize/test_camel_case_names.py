"""A credential's name in camelCase or kebab-case (`webhookSecret`, `dbPassword`, `clientSecret`,
`client-secret`) is as much one as `webhook_secret`: the structural masking (a JSON list or object
given to the name, in the raw text and in decoded arguments) took a name only after a separator or
at the key's start, so `webhookSecret`'s values were masked only when the raw text had been
masked first, and `{"dbPassword": ["..."]}` not at all."""

from __future__ import annotations

import json

import pytest

from trajectory_compressor.summarize.masking import masked_arguments, redact_json_value, unchanged
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

SECRET = "hunter2Xk9"
NAMES = [
    *("webhookSecret", "WebhookSecret", "dbPassword", "userPassword", "signingSecret", "jwtSecret"),
    *("clientSecret", "apiKey", "accessToken", "privateKey", "client-secret", "x-api-key", "refreshToken"),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", ["plain", "list", "object"])
def test_a_value_under_a_camel_or_kebab_credential_name_is_masked_by_structure(name: str, shape: str) -> None:
    value = {"plain": SECRET, "list": [SECRET], "object": {"value": SECRET}}[shape]
    # No pattern redaction at all (`unchanged`): only the key says what the value is.
    masked = json.dumps(redact_json_value({name: value, "host": "db1"}, unchanged))
    assert SECRET not in masked and REDACTED in masked and "db1" in masked, masked


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", ["list", "object"])
def test_a_list_or_object_given_to_a_camel_or_kebab_name_is_masked_in_raw_text(name: str, shape: str) -> None:
    value = {"list": f'["{SECRET}"]', "object": f'{{"value": "{SECRET}"}}'}[shape]
    text = f'{{"{name}": {value}, "host": "db1"}}'
    redacted = redact_secrets(text)
    assert SECRET not in redacted and "db1" in redacted, redacted


def test_words_that_only_end_like_a_name_keep_their_values() -> None:
    plain = {"bypass": ["x1234567"], "Bypass": {"a": "y1234567"}, "compass": ["n1234567"], "showPassword": True}
    assert redact_json_value(plain, unchanged) == plain
    assert masked_arguments(plain, unchanged) is plain
    text = json.dumps(plain)
    assert redact_secrets(text) == text
