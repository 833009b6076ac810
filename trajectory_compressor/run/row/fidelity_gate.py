"""`--min-fidelity` and `--reject-unsupported`: whether an LLM summary is good enough to write.

A summary that falls short is asked for once more, with the prompt saying what was missing;
if the second one falls short too, the row takes the `--on-summary-failure` policy like any
failed summary. The extractive summarizer is not gated: it is what a failure falls back to.
"""

from __future__ import annotations

from dataclasses import dataclass

from trajectory_compressor.summarize.fidelity import Fidelity
from trajectory_compressor.types import SummaryError


class LowFidelityError(SummaryError):
    """The summary fell short of the gate even after the retry."""


@dataclass(frozen=True)
class FidelityGate:
    """The run's fidelity requirements; `active` is False when none is set."""

    min_fidelity: float | None = None
    reject_unsupported: bool = False

    @property
    def active(self) -> bool:
        return self.min_fidelity is not None or self.reject_unsupported

    def shortfall(self, fidelity: Fidelity) -> str | None:
        """Why a summary with `fidelity` must not be written, or None when it may."""
        reasons = []
        score = fidelity.score
        if self.min_fidelity is not None and score is not None and score < self.min_fidelity:
            reasons.append(f"fidelity {score:.2f} below {self.min_fidelity:g}")
        if self.reject_unsupported and fidelity.unsupported:
            reasons.append(f"{len(fidelity.unsupported)} unsupported item(s)")
        if not reasons:
            return None
        detail = fidelity.shortfall(per_kind=4)
        return " and ".join(reasons) + (f" ({detail})" if detail else "")
