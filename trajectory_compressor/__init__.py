"""trajectory_compressor: fit agent trajectories into a training context window.

The package reads like the data's path: `read` (inputs → records), `count` (tokens), `plan`
(pure: which turns to summarize), `summarize` (extractive and LLM summarizers), `write`
(work files, checkpoints, reports), orchestrated by `run`; `settings` declares every option
once; `api` and `cli` are the two ways in. See ARCHITECTURE.md.

The public names are exported here, so user code never imports from deep paths.
"""

from trajectory_compressor.api import compress, compress_async
from trajectory_compressor.errors import UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.run.pipeline import RunResult
from trajectory_compressor.settings import (
    BatchConfig,
    ConfigError,
    LLMConfig,
    OutputConfig,
    PlanConfig,
    ReadConfig,
    RunConfig,
    SelectConfig,
)

__all__ = [
    "BatchConfig",
    "ConfigError",
    "ExitCode",
    "LLMConfig",
    "OutputConfig",
    "PlanConfig",
    "ReadConfig",
    "RunConfig",
    "RunResult",
    "SelectConfig",
    "UsageError",
    "compress",
    "compress_async",
]
__version__ = "0.1.0"
