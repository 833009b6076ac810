"""Command-line options built from the settings declarations, and flags turned back into settings.

Each declared setting with a flag becomes one click option on the commands it names; its help
ends with the default, taken from the declaration, and it is listed under the `--help` group the
declaration names (`settings.help_groups`). Flags parse to plain values here and are
checked by the same `coerce_value` as YAML and the Python API, so a flag, a YAML key and a
keyword argument accept exactly the same values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from trajectory_compressor.settings.build import Overrides, walk
from trajectory_compressor.settings.declare import ConfigError, Setting, coerce_value
from trajectory_compressor.settings.help_groups import GroupedOption
from trajectory_compressor.settings.tree import PARTS

_CLICK_TYPES: dict[str, Any] = {"int": int, "number": float, "path": click.Path(dir_okay=False)}
_METAVARS = {"duration": "SECONDS", "url": "URL"}


def flag_names(name: str, spec: Setting) -> list[str]:
    """The option strings of a setting: declared, or `--field-name` from its field name."""
    return spec.flag.split() if spec.flag else [f"--{name.replace('_', '-')}"]


def _param(part: str, name: str) -> str:
    return f"{part}__{name}"


def _default_text(part: str, name: str, spec: Setting) -> str:
    default = next(f for f in dataclasses.fields(PARTS[part]) if f.name == name).default
    # A help ending in `[...]` names its default itself; a bracket inside it (`...[ray]").`) does not.
    names_its_own = spec.help.rstrip(".").endswith("]")
    if spec.flag_style in ("flag", "off") or default is None or default is dataclasses.MISSING or names_its_own:
        return ""
    if isinstance(default, bool):
        return " [on]" if default else " [off]"
    return f" [{default:g}]" if isinstance(default, float) else f" [{default}]"


def _option(part: str, name: str, spec: Setting) -> Callable[[Any], Any]:
    names = flag_names(name, spec)
    help_text = (spec.help + _default_text(part, name, spec)).strip() or None
    param = _param(part, name)
    grouped: dict[str, Any] = {"cls": GroupedOption, "help_group": spec.group, "common": spec.common}
    if spec.flag_style == "switch":
        long = names[-1][2:]
        return click.option(f"--{long}/--no-{long}", param, default=None, help=help_text, **grouped)
    if spec.flag_style in ("flag", "off"):
        return click.option(*names, param, is_flag=True, default=None, help=help_text, **grouped)
    if spec.kind == "choice":
        kind: Any = click.Choice(list(spec.choices))
    else:
        kind = _CLICK_TYPES.get(spec.kind, str)
    return click.option(
        *names,
        param,
        type=kind,
        multiple=spec.kind == "list",
        default=None,
        help=help_text,
        metavar=spec.metavar or _METAVARS.get(spec.kind),
        **grouped,
    )


def settings_options(command: str) -> Callable[[Any], Any]:
    """A decorator adding the option of every setting `command` takes, in declaration order."""
    options = [
        _option(part, name, spec) for part, name, spec in walk() if spec.flag is not None and command in spec.commands
    ]

    def decorate(function: Any) -> Any:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def apply_flags(overrides: Overrides, flags: dict[str, Any]) -> Overrides:
    """Add every flag given on the command line to `overrides` (flags win over the YAML file).

    The setting's values are popped from `flags`, leaving the command's own arguments.
    """
    for part, name, spec in walk():
        value = flags.pop(_param(part, name), None)
        if value is None or (spec.kind == "list" and not value):
            continue
        if spec.flag_style == "off":
            value = not value
        try:
            overrides[part][name] = coerce_value(spec, value)
        except ValueError as exc:
            raise ConfigError(f"{flag_names(name, spec)[-1]}: {exc}") from None
    return overrides
