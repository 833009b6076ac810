"""Run configuration: defaults, the reference tool's YAML layout, and validation.

One dataclass per concern so each stage receives only what it needs: the planner gets
`PlanConfig` (numbers only), the LLM client gets `LLMConfig`, the pipeline gets `RunConfig`.
YAML files written for the Hermes reference tool (`tokenizer`, `compression`,
`protected_turns`, `summarization`, `output`, `processing`, `metrics` sections) load unchanged;
command-line flags override them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_NOTICE = "\n\nSome of your previous tool responses may be summarized to preserve context."


class ConfigError(ValueError):
    """A configuration value is invalid; the CLI turns this into exit code 2."""


@dataclass(frozen=True)
class PlanConfig:
    """The numbers and switches the pure planner needs."""

    target_max_tokens: int = 15250
    summary_target_tokens: int = 750
    protect_first_system: bool = True
    protect_first_human: bool = True
    protect_first_gpt: bool = True
    protect_first_tool: bool = True
    protect_last_n_turns: int = 4
    add_summary_notice: bool = True
    summary_notice_text: str = DEFAULT_NOTICE

    @property
    def notice(self) -> str:
        """The text appended to the head's system turn of a compressed row ("" when off)."""
        return self.summary_notice_text if self.add_summary_notice else ""

    def validate(self) -> None:
        if self.target_max_tokens <= 0:
            raise ConfigError("target_max_tokens must be positive")
        if self.summary_target_tokens <= 0:
            raise ConfigError("summary_target_tokens must be positive")
        if self.summary_target_tokens >= self.target_max_tokens:
            raise ConfigError("summary_target_tokens must be smaller than target_max_tokens")
        if self.protect_last_n_turns < 0:
            raise ConfigError("protect_last_n_turns must be >= 0")


@dataclass(frozen=True)
class LLMConfig:
    """How to reach an OpenAI-compatible chat-completions endpoint, and how hard to push it."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.3
    max_concurrency: int = 32
    rpm: float | None = None
    tpm: float | None = None
    request_timeout: float = 120.0
    max_retries: int = 5
    retry_delay: float = 1.0  # base of the exponential backoff (seconds); full jitter below it
    retry_max_delay: float = 60.0  # cap of one backoff sleep
    max_prompt_chars: int = 96_000  # transcript size sent per summary; lower it for small-context servers
    extra_body: dict[str, Any] = field(default_factory=dict)
    redact_secrets: bool = True
    cache_path: str | None = None  # None: default under the user cache dir
    use_cache: bool = True
    price_in: float | None = None  # per million prompt tokens
    price_out: float | None = None  # per million completion tokens

    def validate(self) -> None:
        if self.max_concurrency < 1:
            raise ConfigError("max_concurrency must be >= 1")
        if self.max_retries < 0:
            raise ConfigError("max_retries must be >= 0")
        if self.retry_delay < 0 or self.retry_max_delay < 0:
            raise ConfigError("retry delays must be >= 0")
        if self.max_prompt_chars < 1000:
            raise ConfigError("max_prompt_chars must be >= 1000")
        if self.request_timeout <= 0:
            raise ConfigError("request_timeout must be positive")
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"{name} must be positive")


@dataclass(frozen=True)
class RunConfig:
    """Everything one compress run needs besides its inputs and outputs."""

    plan: PlanConfig = field(default_factory=PlanConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    tokenizer: str | None = None  # None: the bundled DeepSeek tokenizer
    trust_remote_code: bool = False
    count_mode: str = "values"  # values | chat-template
    chat_template: str | None = None  # a Jinja chat template file, for tokenizers without one
    summarizer: str = "auto"  # auto | llm | extractive
    on_summary_failure: str = "extractive"  # extractive | keep | fail
    row_timeout: float = 600.0  # seconds a row may spend on summaries before the failure policy
    skip_under_target: bool = True
    dry_run: bool = False
    strict: bool = False
    sample_percent: float | None = None
    seed: int = 42
    limit: int | None = None
    window: int = 0  # rows read ahead of the oldest unfinished one; 0: 4 x max_concurrency, min 256
    quiet: bool = False

    def validate(self) -> None:
        self.plan.validate()
        self.llm.validate()
        if self.count_mode not in {"values", "chat-template"}:
            raise ConfigError("count_mode must be values or chat-template")
        if self.summarizer not in {"auto", "llm", "extractive"}:
            raise ConfigError("summarizer must be auto, llm or extractive")
        if self.on_summary_failure not in {"extractive", "keep", "fail"}:
            raise ConfigError("on_summary_failure must be extractive, keep or fail")
        if self.sample_percent is not None and not 0 < self.sample_percent <= 100:
            raise ConfigError("sample_percent must be in (0, 100]")
        if self.limit is not None and self.limit < 0:
            raise ConfigError("limit must be >= 0")

    @property
    def effective_window(self) -> int:
        return self.window or max(256, 4 * self.llm.max_concurrency)


# YAML section -> ((yaml key, (config part, attribute)), ...), the reference tool's layout plus ours.
_YAML_KEYS: dict[str, dict[str, tuple[str, str]]] = {
    "tokenizer": {
        "name": ("run", "tokenizer"),
        "trust_remote_code": ("run", "trust_remote_code"),
        "count_mode": ("run", "count_mode"),
        "chat_template": ("run", "chat_template"),
    },
    "compression": {
        "target_max_tokens": ("plan", "target_max_tokens"),
        "summary_target_tokens": ("plan", "summary_target_tokens"),
    },
    "protected_turns": {
        "first_system": ("plan", "protect_first_system"),
        "first_human": ("plan", "protect_first_human"),
        "first_gpt": ("plan", "protect_first_gpt"),
        "first_tool": ("plan", "protect_first_tool"),
        "last_n_turns": ("plan", "protect_last_n_turns"),
    },
    "summarization": {
        "model": ("llm", "model"),
        "base_url": ("llm", "base_url"),
        "api_key_env": ("llm", "api_key_env"),
        "temperature": ("llm", "temperature"),
        "max_retries": ("llm", "max_retries"),
        "max_concurrency": ("llm", "max_concurrency"),
        "rpm": ("llm", "rpm"),
        "tpm": ("llm", "tpm"),
        "request_timeout": ("llm", "request_timeout"),
        "extra_body": ("llm", "extra_body"),
        "redact_secrets": ("llm", "redact_secrets"),
        "cache": ("llm", "cache_path"),
        "price_in": ("llm", "price_in"),
        "price_out": ("llm", "price_out"),
        "summarizer": ("run", "summarizer"),
        "on_summary_failure": ("run", "on_summary_failure"),
        "retry_delay": ("llm", "retry_delay"),
        "retry_max_delay": ("llm", "retry_max_delay"),
        "max_prompt_chars": ("llm", "max_prompt_chars"),
    },
    "output": {
        "add_summary_notice": ("plan", "add_summary_notice"),
        "summary_notice_text": ("plan", "summary_notice_text"),
        "output_suffix": ("ignored", ""),
    },
    "processing": {
        "max_concurrent_requests": ("llm", "max_concurrency"),
        "skip_under_target": ("run", "skip_under_target"),
        "per_trajectory_timeout": ("run", "row_timeout"),
        "num_workers": ("ignored", ""),
        "save_over_limit": ("ignored", ""),
    },
    "metrics": {"enabled": ("ignored", ""), "per_trajectory": ("ignored", ""), "output_file": ("ignored", "")},
}


def load_yaml_overrides(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read a YAML config into {"run"|"plan"|"llm": {attribute: value}}.

    Unknown sections or keys are an error naming them, so a typo never silently falls back
    to a default.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: expected a mapping of sections")
    overrides: dict[str, dict[str, Any]] = {"run": {}, "plan": {}, "llm": {}}
    for section, values in data.items():
        keys = _YAML_KEYS.get(section)
        if keys is None:
            raise ConfigError(f"config {path}: unknown section '{section}'")
        if values is None:
            continue
        if not isinstance(values, dict):
            raise ConfigError(f"config {path}: section '{section}' must be a mapping")
        for key, value in values.items():
            target = keys.get(key)
            if target is None:
                raise ConfigError(f"config {path}: unknown key '{section}.{key}'")
            part, attribute = target
            if part == "ignored" or value is None:
                continue
            if attribute == "extra_body" and isinstance(value, str):
                value = parse_extra_body(value)
            overrides[part][attribute] = value
    return overrides


def parse_extra_body(text: str) -> dict[str, Any]:
    """Parse `--extra-body` JSON: an object merged into every chat-completions request."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--extra-body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError("--extra-body must be a JSON object")
    return value


def build_run_config(overrides: dict[str, dict[str, Any]]) -> RunConfig:
    """Build and validate a `RunConfig` from {"run"|"plan"|"llm": {attribute: value}}."""
    try:
        plan = PlanConfig(**overrides.get("plan", {}))
        llm = LLMConfig(**overrides.get("llm", {}))
        config = RunConfig(plan=plan, llm=llm, **overrides.get("run", {}))
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    _check_types(config.plan)
    _check_types(config.llm)
    config.validate()
    return config


def _check_types(part: Any) -> None:
    """Reject values of the wrong type (a YAML `target_max_tokens: "16k"`) with a clear message."""
    for spec in dataclasses.fields(part):
        value = getattr(part, spec.name)
        expected = spec.type if isinstance(spec.type, str) else str(spec.type)
        if value is None:
            continue
        if expected.startswith("int") and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{spec.name} must be an integer, got {value!r}")
        if expected.startswith("float") and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ConfigError(f"{spec.name} must be a number, got {value!r}")
        if expected == "bool" and not isinstance(value, bool):
            raise ConfigError(f"{spec.name} must be true or false, got {value!r}")
