"""trajectory_compressor: fit agent trajectories into a training context window.

The package reads like the pipeline: `read` (inputs → records), `count` (tokens), `plan`
(pure: which turns to summarize), `summarize` (extractive and LLM summarizers), `write`
(work files, checkpoints, reports), tied together by `pipeline` and exposed by `api` and `cli`.
"""

from trajectory_compressor.api import InputOptions, OutputOptions, compress, compress_async
from trajectory_compressor.config import LLMConfig, PlanConfig, RunConfig

__all__ = [
    "InputOptions",
    "LLMConfig",
    "OutputOptions",
    "PlanConfig",
    "RunConfig",
    "compress",
    "compress_async",
]
__version__ = "0.1.0"
