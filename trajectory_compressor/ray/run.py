"""`compress --engine ray`: the driver that reads with Ray Data, compresses in the actor pool, writes, reports.

The same settings as the local engine (one `RunConfig`); what only a local run can do is
refused up front with one line (exit 2) rather than ignored. Every part a worker writes is
recorded and read back on the driver before the report says `completed` (`parts`). Resuming is
by those records: a re-run of a run that did not complete keeps the parts that verify and
computes only the rows they do not hold; and every summary already received by any worker comes
from the shared cache folder instead of the endpoint.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from trajectory_compressor.count.exactness import GuardResult
from trajectory_compressor.errors import RunAborted, UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.ray.claim import OutputClaim, hold_output
from trajectory_compressor.ray.claim_file import lease_seconds
from trajectory_compressor.ray.completion import completion_problem
from trajectory_compressor.ray.environment import RayEnvironment, ray_environment
from trajectory_compressor.ray.inputs import list_inputs
from trajectory_compressor.ray.layout import (
    RayOutputLayout,
    check_output_folders,
    claim_output_folders,
    holds_parts,
)
from trajectory_compressor.ray.losses import describe_loss, user_cause
from trajectory_compressor.ray.parts import (
    KeptParts,
    PartRecord,
    kept_parts,
    merged_totals,
    read_records,
    write_run_record,
)
from trajectory_compressor.ray.preflight import (
    absolute_sources,
    cache_folder_of,
    check_supported,
    ray_output_format,
    refuse_local_collisions,
    refuse_ray_client,
)
from trajectory_compressor.ray.read import count_inputs, stream_rows_read
from trajectory_compressor.ray.report import (
    fingerprinted_entry,
    forget_report,
    input_entry,
    report_status,
    write_report,
)
from trajectory_compressor.ray.session import ray_console, start_ray, stop_ray
from trajectory_compressor.ray.storage import check_shared_storage
from trajectory_compressor.ray.write import CompressedOutput
from trajectory_compressor.read.convert_format import WriteShape
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.commit import MORE_REJECTS, REJECTS_SHOWN, completed_exit, reject_warning
from trajectory_compressor.run.jobs import refuse_empty_output
from trajectory_compressor.run.settings_record import flat_settings, known_secrets, settings_record
from trajectory_compressor.settings import RunConfig, with_values
from trajectory_compressor.summarize.choose import resolve_endpoint
from trajectory_compressor.summarize.llm.preflight import check_before_loading
from trajectory_compressor.types import LLM_SUMMARIZER
from trajectory_compressor.write.collisions import refuse_dry_run_over_dataset
from trajectory_compressor.write.report import RunTotals
from trajectory_compressor.write.run_fingerprint import RunFingerprint
from trajectory_compressor.write.run_report import (
    ABORTED,
    COMPLETED,
    INTERRUPTED,
    STALLED,
    RunReport,
    RunStatus,
    build_report,
)
from trajectory_compressor.write.run_summary import render_text_summary

RESUME = "re-run the same command to resume"
INTERRUPTED_MESSAGE = f"interrupted; {RESUME}"  # the local engine's words
ASK_SECONDS = 60  # the longest the driver waits on one call to the limits actor
Outcome = tuple[RunStatus, ExitCode, str | None]  # status, exit code, message


@dataclass(frozen=True)
class RayRunResult:
    """What a Ray run reports back: the same shape as the local engine's `RunResult`."""

    record: RunReport
    exit_code: int
    message: str | None = None

    @cached_property
    def report(self) -> dict[str, Any]:
        """The report as its file and `--json` say it (`RunReport.to_dict`)."""
        return self.record.to_dict()

    @property
    def summary_text(self) -> str:
        return render_text_summary(self.report)


def run_on_ray(
    inputs: list[str], output: str, config: RunConfig, *, on_message: Callable[[str], None] | None = None
) -> RayRunResult:
    """One compress run on Ray (a local Ray unless `config.ray_address`); returns its report.

    What a user can get wrong is refused before Ray starts and before a byte is written: the
    settings only the local engine has, an `-o` naming no dataset, output folders holding files
    this tool did not write, Ray Client; and once Ray is up, before any work: local outputs or
    inputs some node does not share (`storage`). Local paths are made absolute here, on the
    driver: a node resolves a relative one against its own working directory.
    """
    from trajectory_compressor.count import counter_for
    from trajectory_compressor.summarize.choose import choose_summarizers

    say = on_message or (lambda text: print(text, file=sys.stderr))
    started = time.monotonic()
    config = resolve_endpoint(config)
    config.validate()
    lease = lease_seconds()  # TC_RAY_CLAIM_SECONDS: refused before anything is written, as a bad setting
    environment = ray_environment()  # TC_RAY_LEASE_SECONDS, TC_RAY_PROBE_SECONDS, TC_RAY_ROWS_PER_PART: the same
    refuse_ray_client(config)
    refuse_empty_output(output)
    output_format = ray_output_format(output, config.output.output_format)
    check_supported(config, output_format)
    if not is_uri(output):
        output = os.path.abspath(output)
    layout = RayOutputLayout.beside(output)
    check_output_folders(layout)
    if config.dry_run and not config.output.overwrite:  # a dry run deletes no dataset, nor replaces its report
        refuse_dry_run_over_dataset(output, held=holds_parts(layout.data))
    own = list(layout.folders().values())  # in an input folder (a local one or a URI): not inputs
    sources = absolute_sources(list_inputs(inputs, config, exclude=own))
    refuse_local_collisions(output, sources, config.output.overwrite)
    # As the local engine: the endpoint and the provider's capabilities before the tokenizer loads.
    asyncio.run(check_before_loading(config))
    counter = counter_for(config)
    uses_llm = False
    if not config.dry_run:  # the same checks and note as a local run, without opening a cache
        choice = choose_summarizers(with_values(config, "llm", use_cache=False), counter)
        uses_llm = choice.primary is not None and choice.primary.name == LLM_SUMMARIZER
        say(choice.note)
    # `--cache folder/summaries.sqlite3`: the workers' files go beside it, in its folder.
    cache_folder = cache_folder_of(config, output, say) if config.llm.use_cache and uses_llm else None
    settings = settings_record(config, counter.name)
    # The claim: on object storage, the only thing that keeps a second run out (`claim`).
    with hold_output(layout, lease) as claim, ray_console(config.quiet):
        joined = start_ray(config)
        try:
            run = _RayRun(config, layout, output_format, cache_folder, say, counter.guard, claim, environment)
            return run.execute(sources, settings, started)
        finally:
            if joined:
                stop_ray()


@dataclass
class _RayRun:
    """The part of a run that happens on Ray: the parts checked, the dataset executed into the sink,
    every part checked again, then the report."""

    config: RunConfig
    layout: RayOutputLayout
    output_format: str
    cache_folder: str | None
    say: Callable[[str], None]
    counting: GuardResult  # the driver's backend and probe check; each worker's guard joins it at the end
    claim: OutputClaim  # held for the whole run: checked before anything is deleted and before the report
    environment: RayEnvironment  # the settings from the driver's environment, checked at the start

    def execute(self, sources: list[InputSource], settings: dict[str, Any], started: float) -> RayRunResult:
        import ray
        import ray.data

        from trajectory_compressor.ray.engine import default_workers

        config = self.config
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = not config.quiet and sys.stderr.isatty()
        workers = config.num_workers or default_workers()
        self.say(f"engine: ray ({workers} workers, {ray.cluster_resources().get('CPU', 0):g} CPUs)")
        layout = self.layout
        inputs: list[dict[str, Any]] = []
        kept = KeptParts()
        run_fingerprint: RunFingerprint | None = None
        stream_rows = 0
        counts: list[Any] = []
        usage: dict[str, Any] = {}
        counting = self.counting
        try:
            check_shared_storage(
                list(layout.folders().values()), self.cache_folder, sources, self.say, self.environment.probe_seconds
            )
            counts = count_inputs(sources, config.read)
            stream_rows = sum(count.records for count in counts)
            inputs = [input_entry(source, count) for source, count in zip(sources, counts, strict=True)]
            hashed = [fingerprinted_entry(source, count) for source, count in zip(sources, counts, strict=True)]
            run_fingerprint = self._fingerprint(settings, hashed, [count.records for count in counts])
            kept = self._kept(run_fingerprint)
            self.claim.check()  # a driver whose claim was taken over deletes nothing
            forget_report(layout.report)  # before any part is deleted: from here until the end, an unfinished run
            claim_output_folders(layout, kept.names(), dataset=not config.dry_run)
            write_run_record(layout, run_fingerprint)  # before any part: what a refused re-run compares
            sink = CompressedOutput(
                layout,
                self.output_format,
                fingerprint=run_fingerprint.digest,
                kept_starts=kept.starts,
                json_lists=WriteShape(self.config.output.write_format).json_lists,
                run_id=self.claim.run_id,
                rows_per_part=self.environment.rows_per_part,
            )
            (status, exit_code, message), usage, counting = self._write(sources, counts, workers, kept, sink)
        except RunAborted as exc:  # a node lost before the work started
            status, exit_code, message = ABORTED, exc.exit_code, str(exc)
            sink = None
        records = list(kept.records) + (sink.records if sink is not None and status == COMPLETED else [])
        files: dict[str, Any] = {}
        if status == COMPLETED:
            files, problem = completion_problem(
                layout, records, sources, [count.records for count in counts], config.select, dataset=not config.dry_run
            )
            if config.dry_run:
                files.pop("data", None)
            if problem is not None:
                status, exit_code, message = ABORTED, ExitCode.FAILED, problem
        else:
            records = self._written_so_far(run_fingerprint)
        if lost := self.claim.lost():  # the output is another run's now: not its report to write
            status, exit_code, message = ABORTED, ExitCode.FAILED, lost
        totals = merged_totals(records)
        completed = status == COMPLETED
        first_reject = None
        if completed:
            totals.rows_read = stream_rows_read(stream_rows, config.select)
            first_reject = self._name_bad_records(records, totals)
        report = build_report(
            totals,
            status=status,
            settings=settings,
            outputs=layout.as_dict() if completed else {},
            timings={"total": time.monotonic() - started},
            summarizer_stats=usage if usage.get("workers") else None,
            counting=counting.to_dict(),
            warnings=[counting.warning or ""],
            engine={"name": "ray", "workers": workers, "cache": self.cache_folder, "run_id": self.claim.run_id},
            resume={
                "parts_kept": len(kept.records),
                "rows_kept": kept.row_count,
                "parts_written": len(records) - len(kept.records),
            },
            message=message,
            files=files if completed else None,
            inputs=inputs if completed else None,
        )
        if lost is None:
            write_report(layout.report, report.to_dict())
        if completed:  # every row rejected (4), over the limit with --fail-on-over-limit (3): as locally
            exit_code, message = completed_exit(totals, config, first_reject)
        return RayRunResult(report, exit_code, message)

    def _fingerprint(
        self, settings: dict[str, Any], inputs: list[dict[str, Any]], records: list[int]
    ) -> RunFingerprint:
        """What the parts are of: settings, the format written, the inputs and their records (each part
        record carries the digest; a resume keeps only the parts of the same one)."""
        hashed = {"settings": settings, "format": self.output_format, "sources": inputs, "records": records}
        return RunFingerprint.of(
            hashed,
            {**flat_settings(settings), "written_format": self.output_format},
            [{**entry, "records": count} for entry, count in zip(inputs, records, strict=True)],
            known_secrets(self.config),
        )

    def _kept(self, run_fingerprint: RunFingerprint) -> KeptParts:
        """The verified parts of this command's unfinished run; none after a completed run or with --no-resume."""
        if not self.config.output.resume or report_status(self.layout.report) == COMPLETED:
            return KeptParts()
        return kept_parts(self.layout, run_fingerprint, self.say)

    def _written_so_far(self, run_fingerprint: RunFingerprint | None) -> list[PartRecord]:
        """A run that stopped: the parts it recorded so far (what a re-run keeps once verified), for its totals."""
        if run_fingerprint is None:
            return []
        try:
            records, _ = read_records(self.layout)
        except OSError:
            return []
        return [record for record in records if record.fingerprint == run_fingerprint.digest]

    def _write(
        self, sources: list[InputSource], counts: list[Any], workers: int, kept: KeptParts, sink: CompressedOutput
    ) -> tuple[Outcome, dict[str, Any], GuardResult]:
        """Read, compress and write every part the run does not keep; the outcome, usage and counting.

        Ctrl-C and SIGTERM (as Ctrl-C: see `session`) stop it as they stop the local engine: exit
        130 and an `interrupted` report; the re-run keeps the parts written. A lost node, worker
        or actor Ray could not recover from, or a cluster left unable to run the workers (`stall`):
        exit `LOST`, one line; the re-run keeps the parts written. The limits actor's waits are bounded.
        """
        import ray

        from trajectory_compressor.ray.engine import BATCH_ROWS, compress_dataset
        from trajectory_compressor.ray.limits import start_limits
        from trajectory_compressor.ray.read import read_inputs
        from trajectory_compressor.ray.stall import stall_watch

        config = self.config
        limits = start_limits(
            config.llm.max_concurrency, config.llm.rpm, config.llm.tpm, self.environment.lease_seconds
        )
        watch = stall_watch(self.layout.records, config.ray_stall_timeout, workers)
        outcome: Outcome = (COMPLETED, ExitCode.OK, None)
        try:
            dataset = compress_dataset(
                read_inputs(
                    sources, config, [c.records for c in counts], skip=kept.runs, stats=[c.stat for c in counts]
                ),
                config,
                num_workers=workers,
                cache_folder=self.cache_folder,
                batch_size=min(BATCH_ROWS, self.environment.rows_per_part),  # a batch is never more than a part
                keep_rejects_in_data=self.output_format == "jsonl",
                limits=limits,
            )
            with watch.watching(dataset):  # a cluster left unable to run the workers: a bounded wait
                dataset.write_datasink(sink)
        except KeyboardInterrupt:
            outcome = (INTERRUPTED, ExitCode.INTERRUPTED, INTERRUPTED_MESSAGE)
        except Exception as exc:
            stalled = watch.message(exc)
            outcome = (STALLED, ExitCode.LOST, stalled) if stalled is not None else _aborted(exc, limits)
        usage = _ask(limits.usage.remote()) or {}
        workers_counting = _ask(limits.counting.remote()) or []
        counting = self.counting.with_workers([GuardResult.from_dict(part) for part in workers_counting])
        ray.kill(limits)
        return outcome, usage, counting

    def _name_bad_records(self, records: list[PartRecord], totals: RunTotals) -> dict[str, Any] | None:
        """The local engine's stderr lines for the first bad records, in input order, then one for
        the rest; returns the first (named again when every row was rejected)."""
        rejects = [reject for record in sorted(records, key=lambda r: r.first_row) for reject in record.rejects]
        for reject in rejects[:REJECTS_SHOWN]:
            self.say(reject_warning(reject))
        if totals.rows_rejected > REJECTS_SHOWN:
            self.say(MORE_REJECTS)
        return rejects[0] if rejects else None


def _aborted(exc: Exception, limits: Any) -> Outcome:
    """The outcome of a run a worker's error or a loss Ray could not recover from ended; any other error is raised."""
    cause = user_cause(exc)
    if isinstance(cause, UsageError):
        raise cause from None
    aborted = _ask(limits.aborted.remote()) if not isinstance(cause, RunAborted) else None
    if isinstance(cause, RunAborted):  # its one line (Ray Data may add its retry advice to the text)
        aborted = (str(cause).split("\n", 1)[0], cause.exit_code)
    lost = describe_loss(exc)
    if aborted is None and lost is not None:
        aborted = (f"{lost}; the parts written are kept: {RESUME}", ExitCode.LOST)
    if aborted is None:
        raise exc
    return (ABORTED, ExitCode(aborted[1]), aborted[0])


def _ask(ref: Any) -> Any:
    """The answer of a call to the limits actor, or None when it is lost or silent: never a hang."""
    import ray

    try:
        return ray.get(ref, timeout=ASK_SECONDS)
    except (ray.exceptions.RayError, TimeoutError):
        return None
