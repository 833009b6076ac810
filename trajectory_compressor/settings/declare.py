"""How one setting is declared: a dataclass field that carries its kind, bounds, help, YAML key and flag.

Every setting is written once, as a field of a part of the settings tree (`settings.tree`):

    temperature: float = setting(0.3, "number", minimum=0, yaml="summarization.temperature",
                                 help="Sampling temperature of summaries.", record=True, group="endpoint")

and everything else is derived from that one line: the CLI option (`settings.cli_options`), the
YAML key (`settings.yaml_file`), the type check of a value given through any of the three
(`check_value`), whether it belongs to the run's settings record (report and resume
fingerprint, `run/settings_record.py`), and where `--help` lists it (`group`, one of `HELP_GROUPS`;
`common=True` lists it first in its group; `settings.help_groups`). Adding a setting therefore
touches the tree and the code that uses it, nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.errors import UsageError


class ConfigError(UsageError, ValueError):
    """A configuration value is invalid: a one-line message naming where it came from (exit 2)."""


# url: a string whose credentials (user:password@) are dropped wherever it is shown or recorded.
# The command groups a setting is offered to (`setting(commands=...)`).
BOTH = ("compress", "analyze", "requests")  # every command that counts and plans
READERS = ("compress", "analyze", "eval", "requests")  # every command that reads inputs
ASKS = ("compress", "requests")  # every command that builds summary requests
PROBES = ("compress", "eval")  # every command that calls the endpoint (`eval --probes` asks questions)

# The groups of a command's --help, in the order a user needs them: the key a setting names
# (`setting(group=...)`) and the heading shown. A setting naming none is listed under DEFAULT_GROUP.
HELP_GROUPS = {
    "io": "Input and output",
    "budget": "Budget and planning",
    "counting": "Tokenizer and counting",
    "summarizer": "Summarizer",
    "endpoint": "LLM endpoint",
    "batch": "Batch API",
    "output": "Output files and messages",
    "run": "Run control",
    "other": "Other options",
}
DEFAULT_GROUP = "other"

KINDS = ("int", "number", "duration", "bool", "str", "url", "path", "dict", "choice", "list")
# How a setting appears on the command line.
#   value:  --name VALUE          switch: --name/--no-name
#   flag:   --name (sets True)    off:    --name (sets False; e.g. --no-cache, --no-resume)
FLAG_STYLES = ("value", "switch", "flag", "off")


@dataclass(frozen=True)
class Setting:
    """What one setting accepts and where it can be given."""

    kind: str
    help: str = ""
    minimum: float | None = None  # inclusive
    above: float | None = None  # exclusive lower bound
    maximum: float | None = None  # inclusive
    optional: bool = False  # None allowed (and means "not set")
    choices: tuple[str, ...] = ()
    yaml: tuple[str, ...] = ()  # "section.key"; the first is the documented one, the others aliases
    flag: str | None = ""  # "" derives --field-name; None: no flag (Python API and YAML only)
    flag_style: str = "value"
    commands: tuple[str, ...] = ("compress",)
    record: bool = False  # part of the run's settings record (report, resume fingerprint)
    metavar: str | None = None
    group: str = ""  # its heading in --help (a key of HELP_GROUPS); "" falls into DEFAULT_GROUP
    common: bool = False  # listed first in its group

    def __post_init__(self) -> None:
        if (
            self.kind not in KINDS
            or self.flag_style not in FLAG_STYLES
            or (self.group and self.group not in HELP_GROUPS)
        ):
            raise ValueError(f"bad setting declaration: {self}")


def setting(
    default: Any,
    kind: str,
    *,
    help: str = "",
    yaml: str | tuple[str, ...] = (),
    **declaration: Any,
) -> Any:
    """A dataclass field declaring one setting (see `Setting`); mutable defaults are copied per use."""
    spec = Setting(kind, help=help, yaml=(yaml,) if isinstance(yaml, str) else tuple(yaml), **declaration)
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata={"setting": spec})
    return dataclasses.field(default=default, metadata={"setting": spec})


def declared(part: Any) -> list[tuple[dataclasses.Field[Any], Setting]]:
    """The settings declared on a part (a dataclass or an instance), in declaration order."""
    return [(f, f.metadata["setting"]) for f in dataclasses.fields(part) if "setting" in f.metadata]


# ------------------------------------------------------------------------------- type checks
# A value is checked where it enters (YAML file, command line, Python API), against the one
# declaration of its setting, so that a YAML `skip_under_target: "no"` or a `--window -1` is a
# one-line error instead of a wrong run or a traceback later on.

_TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
_FALSE_WORDS = frozenset({"false", "no", "off", "0"})
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?")
_DURATION_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def coerce_value(spec: Setting, value: Any) -> Any:
    """`value` checked (and, for words and durations, converted) against `spec`.

    Raises `ValueError` with the reason only (no name): callers add where the value came from
    (a YAML key and file, a flag). Accepted beyond the plain type: the boolean words
    true/false, yes/no, on/off, 1/0 (any case, also quoted in YAML); durations as seconds
    or as text with a unit ("30s", "10m", "1.5h", "500ms"); numbers written as text ("1e3",
    which YAML reads as a string); a dict as a JSON object text.
    """
    if value is None:
        if spec.optional:
            return None
        raise ValueError("must be set (null is not allowed)")
    kind = spec.kind
    if kind == "bool":
        return _as_bool(value)
    if kind in ("str", "url", "path"):
        if not isinstance(value, str):
            raise ValueError(f"must be a string, got {_show(value)}")
        return value
    if kind == "choice":
        if value not in spec.choices:
            raise ValueError(f"must be one of {', '.join(spec.choices)}, got {_show(value)}")
        return value
    if kind == "dict":
        return _as_dict(value)
    if kind == "list":
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ValueError(f"must be a list, got {_show(value)}")
        if not all(isinstance(item, str) for item in value):
            raise ValueError("must be a list of strings")
        return list(value)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, got {_show(value)}")
        number: float = value
    else:
        number = _as_number(value, duration=kind == "duration")
    _check_bounds(number, spec)
    return number


def check_part(part: Any) -> None:
    """Check every declared field of a settings part (values given through the Python API)."""
    for spec_field, spec in declared(part):
        value = getattr(part, spec_field.name)
        if spec.kind == "path" and isinstance(value, os.PathLike):
            value = os.fspath(value)  # a pathlib.Path is as good as its text
        try:
            checked = coerce_value(spec, value)
        except ValueError as exc:
            raise ConfigError(f"{spec_field.name}: {exc}") from None
        if spec.kind == "list" and isinstance(value, tuple):
            value = list(value)
        if checked != value or type(checked) is not type(value):
            raise ConfigError(f"{spec_field.name}: must be {describe(spec)}, got {_show(value)}")


def describe(spec: Setting) -> str:
    """What a setting takes, in words, for error messages."""
    words = {"int": "an integer", "number": "a number", "duration": "a number of seconds", "bool": "true or false"}
    if spec.kind == "choice":
        return "one of " + ", ".join(spec.choices)
    return words.get(spec.kind, f"a {spec.kind}")


def parse_json_object(value: Any) -> dict[str, Any]:
    """A JSON object given as a mapping or as its text (`--extra-body`, YAML `extra_body`)."""
    return _as_dict(value)


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


def _check_bounds(number: float, spec: Setting) -> None:
    if spec.minimum is not None and number < spec.minimum:
        raise ValueError(f"must be >= {spec.minimum:g}, got {number:g}")
    if spec.above is not None and number <= spec.above:
        raise ValueError(f"must be > {spec.above:g}, got {number:g}")
    if spec.maximum is not None and number > spec.maximum:
        raise ValueError(f"must be <= {spec.maximum:g}, got {number:g}")


def _show(value: Any) -> str:
    """A wrong value as its error quotes it, short (the CLI masks a credential's shape in it: a key
    put in the wrong setting of a config file)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
