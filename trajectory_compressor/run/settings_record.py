"""The run's settings record: what decides the outputs' bytes, for the report and the resume check.

Built from the declarations marked `record=True`, so a new setting that changes outputs is
recorded (and refuses a mismatched resume) without another list to keep in step. The planner's
and the LLM's settings are nested under "plan" and "llm"; the others sit at the top. Credentials
are never in it: a `url` setting is recorded without them, a JSON object masked, and the API key
is not a setting.
It lives in `run/`, not `settings/`, because masking a URL is the redaction's job (`summarize/`),
and settings import no stage.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from trajectory_compressor.settings import RunConfig, walk
from trajectory_compressor.summarize.llm.dialects import key_env
from trajectory_compressor.summarize.masking import redact_json_value
from trajectory_compressor.summarize.redact import redact_secrets, scrub
from trajectory_compressor.summarize.url_credentials import display_url, url_secrets

NESTED_PARTS = ("plan", "llm")


def settings_record(config: RunConfig, tokenizer_name: str) -> dict[str, Any]:
    """The record of `config`; `tokenizer_name` is the loaded tokenizer's name (not the flag's text).

    A JSON object setting (`--extra-body`: a gateway may take a key or a header in the body) is
    recorded masked as a call's arguments are (`masking.redact_json_value`: a value under a
    credential's name, a credential's shape), and with the run's known secrets scrubbed: the
    record is written to the report and `--json`."""
    record: dict[str, Any] = {"tokenizer": tokenizer_name, **{part: {} for part in NESTED_PARTS}}
    secrets: tuple[str, ...] | None = None
    for part, name, spec in walk():
        if not spec.record:
            continue
        value = getattr(config if part == "run" else getattr(config, part), name)
        if spec.kind == "url" and value:
            value = display_url(value)
        if spec.kind == "dict" and value:
            secrets = known_secrets(config) if secrets is None else secrets
            value = redact_json_value(value, partial(_masked_text, secrets=secrets))
        (record[part] if part in NESTED_PARTS else record)[name] = value
    return record


def flat_settings(record: dict[str, Any]) -> dict[str, Any]:
    """`record` by setting name, the planner's and the LLM's settings lifted out of their parts
    (setting names are unique across the parts): how a refused resume names what differs."""
    flat = {name: value for name, value in record.items() if not (name in NESTED_PARTS and isinstance(value, dict))}
    for part in NESTED_PARTS:
        if isinstance(record.get(part), dict):
            flat.update(record[part])
    return flat


def _masked_text(text: str, secrets: tuple[str, ...]) -> str:
    return scrub(redact_secrets(text), secrets)


def known_secrets(config: RunConfig) -> tuple[str, ...]:
    """The credentials a run knows of, kept out of what it writes down beside the record (the
    fingerprint's parts: `write/run_fingerprint.py`): the API key in its environment variable,
    and the base URL's, in every form they travel in."""
    key = (os.environ.get(key_env(config.llm)) or "").strip()
    return tuple(secret for secret in (key, *url_secrets(config.llm.base_url)) if secret)
