"""The run report: one frozen record, built once where a run ends, turned into its JSON in one place.

Both engines and `merge` build a `RunReport` with everything it says (`build_report`), nothing
added after; `to_dict` is the only place its JSON document (`<stem>.report.json`, `--json`) is
laid out, key by key, from `RunTotals` and the figures `write/report.py` derives from them. A
run's status is a `RunStatus`, compared with its named constants (`COMPLETED`, ...), never a
string spelled again: the code that reads a report back from a file (`merge`, a Ray resume, the
overwrite guard) compares with the same constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from trajectory_compressor.write.report import RunTotals, low_fidelity_warning, report_figures

RunStatus = Literal["completed", "aborted", "interrupted", "pending", "stalled"]
COMPLETED: Final = "completed"  # every row committed, the outputs finalized
ABORTED: Final = "aborted"  # stopped on an error (`--strict`, `--on-summary-failure fail`, a lost node)
INTERRUPTED: Final = "interrupted"  # Ctrl-C or SIGTERM: re-run the same command to resume
PENDING: Final = "pending"  # `--batch --no-wait`: batches left with the provider, no row run yet
STALLED: Final = "stalled"  # `--engine ray`: no part finished while the cluster could not hold the workers


@dataclass(frozen=True)
class RunReport:
    """What a run (or a merge) reports: its status, its totals and where everything went.

    `totals` is None for a run that stopped before any row (batches pending, or interrupted in
    the batch phase): its report is its status (and the batches' state) only. `warnings` are
    those the report says, the low-fidelity one included. `engine` and `resume` are a Ray run's;
    `files` and `inputs` a completed run's (what `merge` and `eval` check against).
    """

    status: RunStatus
    totals: RunTotals | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    summarizer_stats: dict[str, Any] | None = None
    counting: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    engine: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    message: str | None = None
    files: dict[str, Any] | None = None
    inputs: list[dict[str, Any]] | None = None
    batches: dict[str, Any] | None = None

    @property
    def completed(self) -> bool:
        return self.status == COMPLETED

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON document: the one place its keys and their order are decided."""
        totals = self.totals
        if totals is None:
            return {"status": self.status, **({"batches": self.batches} if self.batches is not None else {})}
        return {
            "status": self.status,
            **report_figures(totals, self.summarizer_stats),
            "timings_seconds": {k: round(v, 3) for k, v in self.timings.items()},
            "counters": totals.to_dict(),  # raw counters, so shard reports can be merged exactly
            **({"counting": self.counting} if self.counting else {}),
            "settings": self.settings,
            "outputs": self.outputs,
            **({"warnings": list(self.warnings)} if self.warnings else {}),
            **({"engine": self.engine} if self.engine is not None else {}),
            **({"resume": self.resume} if self.resume is not None else {}),
            **({"message": self.message} if self.message else {}),
            **({"files": self.files} if self.files is not None else {}),
            **({"inputs": self.inputs} if self.inputs is not None else {}),
        }


def build_report(
    totals: RunTotals,
    *,
    status: RunStatus,
    settings: dict[str, Any],
    outputs: dict[str, str],
    timings: dict[str, float],
    summarizer_stats: dict[str, Any] | None = None,
    counting: dict[str, Any] | None = None,
    warnings: Sequence[str] = (),
    message: str | None = None,
    files: dict[str, Any] | None = None,
    inputs: list[dict[str, Any]] | None = None,
    engine: dict[str, Any] | None = None,
    resume: dict[str, Any] | None = None,
) -> RunReport:
    """The report of a run that read rows: totals, usage and where everything went.

    A dry run writes no dataset, so its path is not among the outputs listed. `counting` is
    who counted the tokens and what the exactness guard saw (`count.exactness.GuardResult`);
    `warnings` are the run's own, said once at its end, with the low-fidelity one after them.
    The totals are copied: the report says them as they were when it was built.
    """
    if settings.get("dry_run"):
        outputs = {name: path for name, path in outputs.items() if name != "data"}
    said = tuple(warning for warning in (*warnings, low_fidelity_warning(totals)) if warning)
    return RunReport(
        status,
        RunTotals.from_dict(totals.to_dict()),
        settings=settings,
        outputs=outputs,
        timings=dict(timings),
        summarizer_stats=summarizer_stats,
        counting=counting,
        warnings=said,
        engine=engine,
        resume=resume,
        message=message,
        files=files,
        inputs=inputs,
    )
