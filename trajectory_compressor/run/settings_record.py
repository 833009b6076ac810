"""The run's settings record: what decides the outputs' bytes, for the report and the resume check.

Built from the declarations marked `record=True`, so a new setting that changes outputs is
recorded (and refuses a mismatched resume) without another list to keep in step. The planner's
and the LLM's settings are nested under "plan" and "llm"; the others sit at the top. Credentials
are never in it: a `url` setting is recorded without them, and the API key is not a setting.
It lives in `run/`, not `settings/`, because masking a URL is the redaction's job (`summarize/`),
and settings import no stage.
"""

from __future__ import annotations

from typing import Any

from trajectory_compressor.settings import RunConfig, walk
from trajectory_compressor.summarize.redact import display_url

NESTED_PARTS = ("plan", "llm")


def settings_record(config: RunConfig, tokenizer_name: str) -> dict[str, Any]:
    """The record of `config`; `tokenizer_name` is the loaded tokenizer's name (not the flag's text)."""
    record: dict[str, Any] = {"tokenizer": tokenizer_name, **{part: {} for part in NESTED_PARTS}}
    for part, name, spec in walk():
        if not spec.record:
            continue
        value = getattr(config if part == "run" else getattr(config, part), name)
        if spec.kind == "url" and value:
            value = display_url(value)
        (record[part] if part in NESTED_PARTS else record)[name] = value
    return record
