"""One row's path from plan to outputs: summary step, over-limit policy, outcome (see `finisher`)."""

from trajectory_compressor.run.row.finisher import RowFinisher
from trajectory_compressor.run.row.outcome import FinishedRow

__all__ = ["FinishedRow", "RowFinisher"]
