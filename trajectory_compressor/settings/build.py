"""Walking the settings tree, and building a checked `RunConfig` from {part: {field: value}}."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from trajectory_compressor.settings.declare import ConfigError, Setting, declared
from trajectory_compressor.settings.tree import PARTS, RunConfig

Overrides = dict[str, dict[str, Any]]


def walk() -> Iterator[tuple[str, str, Setting]]:
    """Every declared setting as (part, field name, declaration), parts in tree order."""
    for part, cls in PARTS.items():
        for spec_field, spec in declared(cls):
            yield part, spec_field.name, spec


def empty_overrides() -> Overrides:
    return {part: {} for part in PARTS}


def build_run_config(overrides: Overrides) -> RunConfig:
    """A validated `RunConfig` from {"run"|"plan"|"llm"|"read"|"select"|"output": {field: value}}."""
    try:
        parts = {part: PARTS[part](**overrides.get(part, {})) for part in PARTS if part != "run"}
        config = RunConfig(**parts, **overrides.get("run", {}))
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    config.validate()
    return config


def with_values(config: RunConfig, part: str, **values: Any) -> RunConfig:
    """`config` with some fields of one part replaced (the parts are frozen)."""
    if part == "run":
        return dataclasses.replace(config, **values)
    return dataclasses.replace(config, **{part: dataclasses.replace(getattr(config, part), **values)})
