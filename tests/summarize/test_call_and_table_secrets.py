"""A password given to a login call by position, to PowerShell's `ConvertTo-SecureString`, to
Windows' `net user` and `psexec -p`, or shown in a table's row beside its name (psql's output, a
Markdown table): found by the round-12 adversarial pass, each passed. And the ordinary code,
commands and schema tables beside them, which stay."""

from __future__ import annotations

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

PASSWORD = "Wq7xLm2pRt9v"

GIVEN = [
    "server = smtplib.SMTP('smtp.example.com'); server.login('me@example.com', '{}')",
    "server.login(user, '{}')",
    'imap.login("me@example.com", "{}")',
    "ftp.login('deploy', '{}')",
    "$pw = ConvertTo-SecureString '{}' -AsPlainText -Force",
    'New-Object PSCredential("u", (ConvertTo-SecureString -String "{}" -AsPlainText -Force))',
    "net user admin {} /add",
    "psexec \\\\host -u admin -p {} cmd",
    "| DB_PASSWORD | {} |",
    " db_password | {}",
    "| smtp_password | {} | set by ops |",
]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("template", GIVEN)
def test_the_password_is_masked(template: str, layer: str) -> None:
    encode, decode = LAYERS[layer]
    decoded = decode(redact_secrets(encode(f"A=1\n{template.format(PASSWORD)}\nHOME=/root")))
    assert decoded == f"A=1\n{template.format(REDACTED)}\nHOME=/root", decoded


ORDINARY = [
    "server.login(user, password)",
    "client.login(username=u, password=p)",
    "page.login('Sign in')",
    "$pw = ConvertTo-SecureString $env:PW -AsPlainText -Force",
    "net user admin /add",
    "net user admin *",
    "net user",
    "psexec \\\\host -u admin cmd",
    "| password | string | The user's password |",
    "| DB_PASSWORD | (set in vault) |",
    "| api_key | varchar(255) | NO |",
    " password_hash | text",
    "| Name | Type |\n|------|------|\n| password | SecretStr |",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_and_tables_stay(text: str) -> None:
    assert redact_secrets(text) == text
