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
import math
import re
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
        check_fields(self)
        if self.summary_target_tokens >= self.target_max_tokens:
            raise ConfigError("summary_target_tokens must be smaller than target_max_tokens")


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
        check_fields(self)


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
    window: int | None = None  # rows read ahead of the oldest unfinished one; None: 4 x max_concurrency, min 256
    quiet: bool = False

    def validate(self) -> None:
        self.plan.validate()
        self.llm.validate()
        check_fields(self)

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


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML itself keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _value in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges may be overridden by explicit keys
            if key_node.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key_node.value}' is given twice", key_node.start_mark
                )
            seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


def load_yaml_overrides(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read a YAML config into {"run"|"plan"|"llm": {attribute: value}}.

    Unknown sections or keys are an error naming them, so a typo never silently falls back
    to a default.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=_UniqueKeyLoader) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {path} is not valid UTF-8 (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {path} is not valid YAML: {' '.join(str(exc).split())}") from None
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
            try:
                overrides[part][attribute] = coerce_setting(attribute, value)
            except ValueError as exc:
                raise ConfigError(f"config {path}: {section}.{key}: {exc}") from None
    return overrides


def parse_extra_body(text: str) -> dict[str, Any]:
    """Parse `--extra-body` JSON: an object merged into every chat-completions request."""
    try:
        return _as_dict(text)
    except ValueError as exc:
        raise ConfigError(f"--extra-body {exc}") from None


def build_run_config(overrides: dict[str, dict[str, Any]]) -> RunConfig:
    """Build and validate a `RunConfig` from {"run"|"plan"|"llm": {attribute: value}}."""
    try:
        plan = PlanConfig(**overrides.get("plan", {}))
        llm = LLMConfig(**overrides.get("llm", {}))
        config = RunConfig(plan=plan, llm=llm, **overrides.get("run", {}))
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    config.validate()
    return config


# ------------------------------------------------------------------------------- type checks
# Settings are checked where they enter (YAML file, command line, Python API), each against one
# small declaration of its kind and bounds, so that a YAML `skip_under_target: "no"` or a
# `--window -1` is a one-line error instead of a wrong run or a traceback later on.


@dataclass(frozen=True)
class _Kind:
    """What one setting accepts: its kind and, for numbers, its bounds."""

    kind: str  # int | number | duration | bool | str | dict | choice
    minimum: float | None = None  # inclusive
    above: float | None = None  # exclusive lower bound
    maximum: float | None = None  # inclusive
    optional: bool = False  # None allowed
    choices: tuple[str, ...] = ()


_SETTINGS: dict[str, _Kind] = {
    # plan
    "target_max_tokens": _Kind("int", minimum=1),
    "summary_target_tokens": _Kind("int", minimum=1),
    "protect_first_system": _Kind("bool"),
    "protect_first_human": _Kind("bool"),
    "protect_first_gpt": _Kind("bool"),
    "protect_first_tool": _Kind("bool"),
    "protect_last_n_turns": _Kind("int", minimum=0),
    "add_summary_notice": _Kind("bool"),
    "summary_notice_text": _Kind("str"),
    # llm
    "base_url": _Kind("str", optional=True),
    "model": _Kind("str", optional=True),
    "api_key_env": _Kind("str"),
    "temperature": _Kind("number", minimum=0),
    "max_concurrency": _Kind("int", minimum=1),
    "rpm": _Kind("number", above=0, optional=True),
    "tpm": _Kind("number", above=0, optional=True),
    "request_timeout": _Kind("duration", above=0),
    "max_retries": _Kind("int", minimum=0),
    "retry_delay": _Kind("duration", minimum=0),
    "retry_max_delay": _Kind("duration", minimum=0),
    "max_prompt_chars": _Kind("int", minimum=1000),
    "extra_body": _Kind("dict"),
    "redact_secrets": _Kind("bool"),
    "cache_path": _Kind("str", optional=True),
    "use_cache": _Kind("bool"),
    "price_in": _Kind("number", minimum=0, optional=True),
    "price_out": _Kind("number", minimum=0, optional=True),
    # run
    "tokenizer": _Kind("str", optional=True),
    "trust_remote_code": _Kind("bool"),
    "count_mode": _Kind("choice", choices=("values", "chat-template")),
    "chat_template": _Kind("str", optional=True),
    "summarizer": _Kind("choice", choices=("auto", "llm", "extractive")),
    "on_summary_failure": _Kind("choice", choices=("extractive", "keep", "fail")),
    "row_timeout": _Kind("duration", above=0),
    "skip_under_target": _Kind("bool"),
    "dry_run": _Kind("bool"),
    "strict": _Kind("bool"),
    "sample_percent": _Kind("number", above=0, maximum=100, optional=True),
    "seed": _Kind("int"),
    "limit": _Kind("int", minimum=0, optional=True),
    "window": _Kind("int", minimum=1, optional=True),
    "quiet": _Kind("bool"),
}

_TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
_FALSE_WORDS = frozenset({"false", "no", "off", "0"})
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?")
_DURATION_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def coerce_setting(name: str, value: Any) -> Any:
    """`value` checked (and, for words and durations, converted) for setting `name`.

    Raises `ValueError` with the reason only (no name): callers add where the value came from
    (a YAML key and file, a flag). Accepted beyond the plain type: the boolean words
    true/false, yes/no, on/off, 1/0 (any case, also quoted in YAML); durations as seconds
    or as text with a unit ("30s", "10m", "1.5h", "500ms"); numbers written as text ("1e3",
    which YAML reads as a string); `extra_body` as a JSON object text.
    """
    kind = _SETTINGS.get(name)
    if kind is None or (value is None and kind.optional):
        return value
    if value is None:
        raise ValueError("must be set (null is not allowed)")
    if kind.kind == "bool":
        return _as_bool(value)
    if kind.kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"must be a string, got {_show(value)}")
        return value
    if kind.kind == "choice":
        if value not in kind.choices:
            raise ValueError(f"must be one of {', '.join(kind.choices)}, got {_show(value)}")
        return value
    if kind.kind == "dict":
        return _as_dict(value)
    if kind.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, got {_show(value)}")
        number: float = value
    else:
        number = _as_number(value, duration=kind.kind == "duration")
    _check_bounds(number, kind)
    return number


def check_fields(part: Any) -> None:
    """Check every declared field of a config dataclass (values given through the Python API)."""
    for spec in dataclasses.fields(part):
        if spec.name in _SETTINGS:
            value = getattr(part, spec.name)
            try:
                checked = coerce_setting(spec.name, value)
            except ValueError as exc:
                raise ConfigError(f"{spec.name}: {exc}") from None
            if checked != value or type(checked) is not type(value):
                raise ConfigError(f"{spec.name}: must be {_describe(_SETTINGS[spec.name])}, got {_show(value)}")


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS | _FALSE_WORDS:
        return value.strip().lower() in _TRUE_WORDS
    raise ValueError(f"must be true or false, got {_show(value)}")


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"must be a mapping (a JSON object), got {_show(value)}")
    try:
        json.dumps(value, allow_nan=False)
        if not all(isinstance(key, str) for key in value):
            raise TypeError
    except (TypeError, ValueError):
        raise ValueError("must hold only JSON values with string keys") from None
    return value


def _as_number(value: Any, *, duration: bool) -> float:
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {_show(value)}")
    if isinstance(value, str):
        text = value.strip().lower()
        match = _DURATION.fullmatch(text) if duration else None
        if match is not None:
            value = float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        else:
            try:
                value = float(text)
            except ValueError:
                unit = " (seconds, or text like 30s, 10m, 1h)" if duration else ""
                raise ValueError(f"must be a number{unit}, got {_show(value)}") from None
    if not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, got {_show(value)}")
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {_show(value)}")
    return value


def _check_bounds(number: float, kind: _Kind) -> None:
    if kind.minimum is not None and number < kind.minimum:
        raise ValueError(f"must be >= {kind.minimum:g}, got {number:g}")
    if kind.above is not None and number <= kind.above:
        raise ValueError(f"must be > {kind.above:g}, got {number:g}")
    if kind.maximum is not None and number > kind.maximum:
        raise ValueError(f"must be <= {kind.maximum:g}, got {number:g}")


def _describe(kind: _Kind) -> str:
    return {"int": "an integer", "number": "a number", "duration": "a number of seconds", "bool": "true or false"}.get(
        kind.kind, f"a {kind.kind}"
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
