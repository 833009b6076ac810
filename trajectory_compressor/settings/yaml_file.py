"""Reading a YAML config file into settings overrides, by the YAML keys the declarations name.

Files written for the Hermes reference tool load unchanged: its sections and keys map onto our
settings, and the few keys we have no use for are accepted and ignored. Any other unknown
section or key is an error naming it, so a typo never silently falls back to a default; a key
given twice is refused too (YAML itself would keep the last).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trajectory_compressor.messages import quoted
from trajectory_compressor.settings.build import Overrides, empty_overrides, walk
from trajectory_compressor.settings.declare import ConfigError, coerce_value

# The reference tool's keys that have no meaning here (we always write metrics and over-limit lists).
IGNORED_KEYS = frozenset(
    {
        "output.output_suffix",
        "processing.num_workers",
        "processing.save_over_limit",
        "metrics.enabled",
        "metrics.per_trajectory",
        "metrics.output_file",
    }
)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping."""

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


def yaml_keys() -> dict[str, tuple[str, str, Any]]:
    """ "section.key" -> (part, field, declaration), from every declaration's YAML keys."""
    return {key: (part, name, spec) for part, name, spec in walk() for key in spec.yaml}


def load_yaml_overrides(path: str | Path) -> Overrides:
    """Read a YAML config into {part: {field: checked value}}."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=_UniqueKeyLoader) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read config {quoted(path)}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {quoted(path)} is not valid UTF-8 (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {quoted(path)} is not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config {quoted(path)}: expected a mapping of sections")
    keys = yaml_keys()
    sections = {key.split(".", 1)[0] for key in (*keys, *IGNORED_KEYS)}
    overrides = empty_overrides()
    for section, values in data.items():
        if section not in sections:
            raise ConfigError(f"config {quoted(path)}: unknown section '{section}'")
        if values is None:
            continue
        if not isinstance(values, dict):
            raise ConfigError(f"config {quoted(path)}: section '{section}' must be a mapping")
        for key, value in values.items():
            dotted = f"{section}.{key}"
            if dotted in IGNORED_KEYS:
                continue
            if dotted not in keys:
                raise ConfigError(f"config {quoted(path)}: unknown key '{dotted}'")
            part, name, spec = keys[dotted]
            if value is None:
                continue
            try:
                overrides[part][name] = coerce_value(spec, value)
            except ValueError as exc:
                raise ConfigError(f"config {quoted(path)}: {dotted}: {exc}") from None
    return overrides
