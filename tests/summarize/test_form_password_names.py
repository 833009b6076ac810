"""A password under a form field's name (found by the round-12 adversarial pass: the `password`
of a sign-up body was masked and its confirmation, the same value, was not): Django's
`password1` / `password2` and `new_password1`, Rails' `password_confirmation` and
`user[password]`, `confirmPassword`-style names, and a camelCase `adminPass`. Code and labels
under the same names stay."""

from __future__ import annotations

import json

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

PASSWORD = "Secret123!"
NAMES = [
    "password_confirmation", "passwordConfirmation", "password1", "password2", "new_password1", "new_password2",
    "password_repeat", "passwordRepeat", "password_confirm", "pass1", "pass2", "adminPass", "rootPass", "passcode",
    "user[password]", "user[password_confirmation]",
]  # fmt: skip


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("name", NAMES)
def test_a_form_fields_password_is_masked(name: str, layer: str) -> None:
    encode, decode = LAYERS[layer]
    for shape in ('{{"email": "a@example.com", "{}": "{}"}}', "curl -d 'email=a@example.com&{}={}' https://x"):
        text = f"A=1\n{shape.format(name, PASSWORD)}\nHOME=/root"
        decoded = decode(redact_secrets(encode(text)))
        assert decoded == text.replace(PASSWORD, REDACTED), decoded


ORDINARY = [
    'password2 = form.cleaned_data.get("password2")',
    "if password1 != password2:",
    'password_confirmation: "Password confirmation"',
    "password_confirmation_required: true",
    "self.fields['password1'].help_text = None",
    "compass = 3",
    "bypass = True",
    "firstPass = 1",
    "onPass = handle_pass",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_code_and_labels_under_those_names_stay(text: str) -> None:
    assert redact_secrets(text) == text
    assert redact_secrets(json.dumps(text)) == json.dumps(text)
