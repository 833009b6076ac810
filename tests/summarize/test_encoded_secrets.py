"""Credentials inside base64 or hex blobs are masked whole; blobs that hold none stay as they are
(`summarize/encoded_secrets.py`; every channel is held by `test_secrets_corpus.py`)."""

from __future__ import annotations

import base64
import hashlib
import random

import pytest

from trajectory_compressor.summarize.encoded_secrets import MAX_DEPTH, decoded_text
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

_BYTES = random.Random(7).randbytes  # the same on every xdist worker: test ids hold the text
KEY = "sk-proj-" + "Tq3Lm9Vx2Rk8Wz5Yp1Hn7Bc4Jd6Fg0Ss" * 2
ENV = f"OPENAI_API_KEY={KEY}\n"


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


@pytest.mark.parametrize(
    ("template", "blob"),
    [
        ("{}", ENV.encode().hex()),
        ("{}", ENV.encode().hex().upper()),
        ("echo {} | base64 -d", _b64(ENV)),
        ("echo {} | base64 -d", _b64(ENV).rstrip("=")),
        ("next={}&a=1", base64.urlsafe_b64encode(ENV.encode()).decode().rstrip("=")),
        ("CONFIG_BLOB={}", _b64(ENV)),  # the `=` of an assignment before it
        ('{{"data": "{}"}}', _b64(ENV)),
        ("{}", _b64(_b64(ENV))),  # twice
        ("{}", _b64(KEY)),  # the key alone
        ("$ base64 .env\n{}", "\n".join(_b64("# app\n" + ENV)[i : i + 76] for i in range(0, 200, 76))),  # wrapped
        ("{}", "\r\n".join(_b64("# app\n" + ENV)[i : i + 64] for i in range(0, 200, 64))),  # at 64, CRLF
        ('{{"output": "{}"}}', "\\n".join(_b64("# app\n" + ENV)[i : i + 76] for i in range(0, 200, 76))),  # in JSON
    ],
)
def test_a_credential_in_a_blob_is_masked_whole(template: str, blob: str) -> None:
    text = f"step 3 output:\n{template.format(blob)}\nexit code 0"
    redacted = redact_secrets(text)
    assert REDACTED in redacted
    assert blob[8:24] not in redacted and blob[-16:] not in redacted and KEY[8:24] not in redacted
    assert redacted.startswith("step 3 output:\n") and redacted.endswith("\nexit code 0")
    assert redact_secrets(redacted) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "commit 9f3c2ab71d0e4f5a6b7c8d9e0f1a2b3c4d5e6f70 (HEAD -> main)",
        "sha256:" + hashlib.sha256(b"layer").hexdigest(),
        "data: " + _b64("hello world, this is plain text and no credential at all"),
        "key material: " + _b64(_BYTES(48)),  # not text: nothing the rules could read
        "tests/test_every_planted_secret_is_masked_in_every_encoding PASSED",
        "/usr/lib/python3/site-packages/some_package_with_a_long_name/module",
        "image: data:image/png;base64," + _b64(b"\x89PNG\r\n\x1a\n" + _BYTES(200)),
    ],
)
def test_a_blob_holding_no_credential_is_left_as_it_is(text: str) -> None:
    assert redact_secrets(text) == text


def test_a_blob_on_the_line_after_another_of_the_same_width_is_read_on_its_own() -> None:
    harmless = _b64("x" * 45)  # 60 characters, no padding
    key_blob = _b64(("OPENAI_API_KEY=" + KEY)[:45])
    assert len(harmless) == len(key_blob) == 60
    redacted = redact_secrets(f"{harmless}\n{key_blob}\nexit 0")
    assert key_blob[8:24] not in redacted and REDACTED in redacted


def test_blobs_are_read_to_a_bounded_depth() -> None:
    """Each level decodes a whole blob again; past `MAX_DEPTH` a blob is not opened (a blob
    nested deeper is unusual enough, and unbounded depth would read a crafted line again and
    again)."""
    blob = ENV
    for _ in range(MAX_DEPTH):
        blob = _b64(blob)
    assert redact_secrets(blob) == REDACTED
    assert redact_secrets(_b64(blob)) == _b64(blob)


def test_only_printable_text_is_taken_for_decoded_text() -> None:
    assert decoded_text(ENV.encode().hex()) == ENV
    assert decoded_text(_b64("tab\tand newline\n")) == "tab\tand newline\n"
    assert decoded_text(_b64("bell \x07 rings")) is None
    assert decoded_text(_b64(b"\xff\xfe not utf-8")) is None
    assert decoded_text("abcde") is None  # one character past a whole group of four: not base64
