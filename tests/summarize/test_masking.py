"""Masking by structure: a credential's name or an argv says what a value is, whatever its shape."""

from __future__ import annotations

import json

import pytest

from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.llm.prompt import render_transcript
from trajectory_compressor.summarize.masking import redact_json_value
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets
from trajectory_compressor.types import Turn

STRUCTURED = [
    {"user": "bob_77", "password": ["Pw1listAAA0001"]},
    {"auth": {"password": {"value": "Pw1nestAAA0002"}}, "host": "db_main_01"},
    {"argv": ["mysqldump", "--password", "Pw1argvAAA0003", "db_main_01"]},
    {"db_password": 90210773, "client_secret": {"id": "app_1", "key": "Pw1keyAAA0004"}},
]
SECRETS = ("Pw1listAAA0001", "Pw1nestAAA0002", "Pw1argvAAA0003", "90210773", "Pw1keyAAA0004")


def test_every_value_under_a_credentials_name_or_an_argv_password_is_masked() -> None:
    masked = [redact_json_value(arguments) for arguments in STRUCTURED]
    assert masked[0] == {"user": "bob_77", "password": [REDACTED]}
    assert masked[1] == {"auth": {"password": {"value": REDACTED}}, "host": "db_main_01"}
    assert masked[2] == {"argv": ["mysqldump", "--password", REDACTED, "db_main_01"]}
    assert masked[3] == {"db_password": REDACTED, "client_secret": {"id": REDACTED, "key": REDACTED}}
    # Names that only end like one, and argv with no credential, are left as they are.
    plain = {"bypass": ["x1234567"], "password_hint": "ok", "argv": ["ls", "-la", "src/a.py"], "passes": [3]}
    assert redact_json_value(plain) == plain


@pytest.mark.parametrize("arguments", STRUCTURED, ids=["list", "nested", "argv", "number-and-object"])
def test_no_summary_or_prompt_shows_a_structured_credential(arguments: dict[str, object], counter) -> None:
    call = Turn(
        "gpt", "Logging in.\n<tool_call>\n" + json.dumps({"name": "login", "arguments": arguments}) + "\n</tool_call>"
    )
    result = Turn("tool", "<tool_response>\n" + json.dumps({"name": "login", "content": "ok"}) + "\n</tool_response>")
    region = [call, result]
    shown = {
        "extractive summary": ExtractiveSummarizer(counter).summarize_text(region, 600),
        "prompt": render_transcript(region),
        "raw turn, masked": redact_secrets(call.value),
    }
    for where, text in shown.items():
        assert not any(secret in text for secret in SECRETS), where
    bare = ExtractiveSummarizer(counter, redact=False).summarize_text(region, 600)
    assert any(secret in bare for secret in SECRETS)  # without redaction the same summary shows it
