"""Every setting of a run, declared once (`tree`), and the CLI, YAML and Python API built from it."""

from trajectory_compressor.settings.build import build_run_config, walk, with_values
from trajectory_compressor.settings.declare import ConfigError, Setting, setting
from trajectory_compressor.settings.tree import (
    DEFAULT_NOTICE,
    BatchConfig,
    LLMConfig,
    OutputConfig,
    PlanConfig,
    ReadConfig,
    RunConfig,
    SelectConfig,
)
from trajectory_compressor.settings.yaml_file import load_yaml_overrides

__all__ = [
    "DEFAULT_NOTICE",
    "BatchConfig",
    "ConfigError",
    "LLMConfig",
    "OutputConfig",
    "PlanConfig",
    "ReadConfig",
    "RunConfig",
    "SelectConfig",
    "Setting",
    "build_run_config",
    "load_yaml_overrides",
    "setting",
    "walk",
    "with_values",
]
