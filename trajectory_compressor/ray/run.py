"""`compress --engine ray`: the driver that reads with Ray Data, compresses in the actor pool, writes, reports.

The same settings as the local engine (one `RunConfig`); what only a local run can do is
refused up front with one line (exit 2) rather than ignored. Resuming is by the summary
cache: a re-run after the driver died rewrites every part, and every summary already received
by any worker comes from the shared cache folder instead of the endpoint.
"""

from __future__ import annotations

import os
import posixpath
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from trajectory_compressor.count.exactness import GuardResult
from trajectory_compressor.errors import RunAborted, UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.ray.inputs import list_inputs
from trajectory_compressor.ray.layout import RayOutputLayout, check_output_folders, filesystem_of
from trajectory_compressor.ray.read import stream_rows_read
from trajectory_compressor.ray.session import quiet_console, start_ray
from trajectory_compressor.ray.write import CompressedOutput
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.commit import MORE_REJECTS, REJECTS_SHOWN, reject_warning
from trajectory_compressor.run.settings_record import settings_record
from trajectory_compressor.settings import ConfigError, RunConfig, with_values
from trajectory_compressor.summarize.choose import resolve_endpoint
from trajectory_compressor.types import LLM_SUMMARIZER
from trajectory_compressor.write.collisions import input_files, refuse_overwrites, run_outputs
from trajectory_compressor.write.output_format import output_format_for
from trajectory_compressor.write.report import build_report, render_text_summary

RAY_FORMATS = ("jsonl", "parquet")
DATASET_SUFFIXES = (".jsonl", ".ndjson", ".parquet", ".jsonl.gz", ".ndjson.gz")  # gzip: refused by its name
INTERRUPTED = "interrupted; re-run the same command to resume"  # the local engine's words
Outcome = tuple[str, ExitCode, str | None]  # status, exit code, message


@dataclass
class RayRunResult:
    """What a Ray run reports back: the same shape as the local engine's `RunResult`."""

    report: dict[str, Any]
    exit_code: int
    message: str | None = None

    @property
    def summary_text(self) -> str:
        return render_text_summary(self.report)


def check_supported(config: RunConfig, output_format: str) -> None:
    """Refuse, in one line, the settings only the local engine has."""
    refused = {
        "--num-shards (Ray spreads the rows itself)": config.select.num_shards > 1,
        "--strict": config.strict,
        "--html-report": config.output.html_report is not None,
        "--responses": config.llm.responses is not None,
        "--batch (the batch rounds run on the local engine)": config.batch.enabled,
        "--metrics (the Ray layout names it)": config.output.metrics is not None,
    }
    for name, given in refused.items():
        if given:
            raise ConfigError(f"{name} is not supported with --engine ray")
    if output_format not in RAY_FORMATS:
        raise ConfigError(f"--engine ray writes jsonl or parquet part files, not {output_format}")


def default_cache_folder(output: str) -> str | None:
    """`<parent>/.<stem>.ray-cache/` beside a local output; None for a URI (pass --cache)."""
    if is_uri(output):
        return None
    layout = RayOutputLayout.beside(output)
    parent, name = posixpath.split(layout.report)
    return os.path.join(parent or ".", "." + name.removesuffix(".report.json") + ".ray-cache")


def ray_output_format(output: str, explicit: str | None) -> str:
    """`jsonl` or `parquet`: `--output-format`, else the suffix of the folder `-o` names.

    A Ray run writes one folder of part files, named by `-o`. The local engine's readings of a
    name without a dataset suffix (a directory to mirror each input into, or a datasets folder)
    have no Ray counterpart, so such an `-o` is refused with the name to give instead.
    """
    name = output.rstrip("/")
    if explicit is None and not name.lower().endswith(DATASET_SUFFIXES):
        what = "is a directory" if not is_uri(name) and os.path.isdir(name) else "has no .jsonl or .parquet suffix"
        example = posixpath.join(name or "/", "compressed.jsonl")
        raise ConfigError(
            f"--engine ray writes one folder of part files, named by -o with its format's suffix: {output} {what};"
            f" give e.g. -o {example} (or .parquet), or --output-format jsonl|parquet"
        )
    return output_format_for(name, explicit)


def run_on_ray(
    inputs: list[str], output: str, config: RunConfig, *, on_message: Callable[[str], None] | None = None
) -> RayRunResult:
    """One compress run on Ray (a local Ray unless `config.ray_address`); returns its report.

    What a user can get wrong is refused before Ray starts and before a byte is written: the
    settings only the local engine has, an `-o` naming no dataset, output folders holding files
    this tool did not write.
    """
    from trajectory_compressor.count import counter_for
    from trajectory_compressor.summarize.choose import choose_summarizers

    say = on_message or (lambda text: print(text, file=sys.stderr))
    started = time.monotonic()
    config = resolve_endpoint(config)
    config.validate()
    output_format = ray_output_format(output, config.output.output_format)
    check_supported(config, output_format)
    layout = RayOutputLayout.beside(output)
    check_output_folders(layout)
    own = [] if is_uri(output) else list(layout.folders().values())  # in an input folder: not inputs
    sources = list_inputs(inputs, config, exclude=own)
    if not is_uri(output):
        refuse_overwrites(run_outputs(layout.as_dict()), input_files(sources))
    counter = counter_for(config)
    uses_llm = False
    if not config.dry_run:  # the same checks and note as a local run, without opening a cache
        choice = choose_summarizers(with_values(config, "llm", use_cache=False), counter)
        uses_llm = choice.primary is not None and choice.primary.name == LLM_SUMMARIZER
        say(choice.note)
    cache_folder = None
    if config.llm.use_cache and uses_llm:
        # `--cache folder/summaries.sqlite3`: the workers' files go beside it, in its folder.
        given = config.llm.cache_path
        cache_folder = os.path.dirname(os.path.abspath(given)) if given else default_cache_folder(output)
        if cache_folder is None:
            say("warning: no --cache folder for a remote output: summaries will not be cached")
    start_ray(config)
    with quiet_console(config.quiet):
        output_files = CompressedOutput(layout, output_format)
        run = _RayRun(config, layout, output_files, cache_folder, say, counter.guard)
        return run.execute(sources, settings_record(config, counter.name), started)


@dataclass
class _RayRun:
    """The part of a run that happens on Ray: the dataset executed into the sink, then the report."""

    config: RunConfig
    layout: RayOutputLayout
    sink: CompressedOutput
    cache_folder: str | None
    say: Callable[[str], None]
    counting: GuardResult  # the driver's backend and probe check; each worker's guard joins it at the end

    def execute(self, sources: list[InputSource], settings: dict[str, Any], started: float) -> RayRunResult:
        import ray
        import ray.data

        from trajectory_compressor.ray.engine import default_workers
        from trajectory_compressor.ray.limits import start_limits

        config = self.config
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = not config.quiet and sys.stderr.isatty()
        workers = config.num_workers or default_workers()
        self.say(f"engine: ray ({workers} workers, {ray.cluster_resources().get('CPU', 0):g} CPUs)")
        limits = start_limits(config.llm.max_concurrency, config.llm.rpm, config.llm.tpm)
        try:
            (status, exit_code, message), stream_rows = self._write(sources, workers, limits)
            usage = ray.get(limits.usage.remote())
            counting = self.counting.with_workers(
                [GuardResult.from_dict(part) for part in ray.get(limits.counting.remote())]
            )
        finally:
            ray.kill(limits)
        totals = self.sink.totals
        if status != "interrupted":
            totals.rows_read = stream_rows_read(stream_rows, config.select)
        if status == "completed":
            self._name_bad_records()
        report = build_report(
            totals,
            status=status,
            settings=settings,
            outputs=self.layout.as_dict() if status == "completed" else {},
            timings={"total": time.monotonic() - started},
            summarizer_stats=usage if usage.get("workers") else None,
            counting=counting.to_dict(),
            warnings=[counting.warning or ""],
        )
        report["engine"] = {"name": "ray", "workers": workers, "cache": self.cache_folder}
        if message:
            report["message"] = message
        write_report(self.layout.report, report)
        if status == "completed" and config.output.fail_on_over_limit and totals.rows_still_over_limit:
            exit_code = ExitCode.OVER_LIMIT
            message = f"{totals.rows_still_over_limit} rows are still over the limit"
        return RayRunResult(report, exit_code, message)

    def _write(self, sources: list[InputSource], workers: int, limits: Any) -> tuple[Outcome, int]:
        """Read, compress and write every part; the outcome, and the rows the input stream holds.

        Ctrl-C and SIGTERM (as Ctrl-C: see `session`) stop it as they stop the local engine: exit
        130 and an `interrupted` report. The re-run rewrites every part, its summaries from the cache.
        """
        import ray

        from trajectory_compressor.ray.engine import compress_dataset
        from trajectory_compressor.ray.read import count_inputs, read_inputs

        config = self.config
        counts: list[int] = []
        try:
            counts = count_inputs(sources, config.read.split)
            dataset = compress_dataset(
                read_inputs(sources, config, counts),
                config,
                num_workers=workers,
                cache_folder=self.cache_folder,
                keep_rejects_in_data=self.sink.output_format == "jsonl",
                limits=limits,
            )
            dataset.write_datasink(self.sink)
        except KeyboardInterrupt:
            return ("interrupted", ExitCode.INTERRUPTED, INTERRUPTED), sum(counts)
        except Exception as exc:
            cause = _user_cause(exc)
            if isinstance(cause, UsageError):
                raise cause from None
            aborted = ray.get(limits.aborted.remote())
            if isinstance(cause, RunAborted):
                aborted = (str(cause), cause.exit_code)
            if aborted is None:
                raise
            return ("aborted", ExitCode(aborted[1]), aborted[0]), sum(counts)
        return ("completed", ExitCode.OK, None), sum(counts)

    def _name_bad_records(self) -> None:
        """The local engine's stderr lines for the first bad records, in input order, then one for the rest."""
        for reject in self.sink.first_rejects[:REJECTS_SHOWN]:
            self.say(reject_warning(reject))
        if self.sink.totals.rows_rejected > REJECTS_SHOWN:
            self.say(MORE_REJECTS)


def _user_cause(exc: BaseException) -> BaseException:
    """The exception a worker raised, out of Ray's wrappers (`RayTaskError.cause`, `__cause__`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (UsageError, RunAborted)):
            return current
        current = getattr(current, "cause", None) or current.__cause__
    return exc


def write_report(path: str, report: dict[str, Any]) -> None:
    """The report, written whole (a temporary name, then moved), on any filesystem."""
    filesystem, target = filesystem_of(path)
    parent = posixpath.dirname(target)
    filesystem.create_dir(parent, recursive=True)
    temporary = posixpath.join(parent, "." + posixpath.basename(target) + ".tmp")
    with filesystem.open_output_stream(temporary) as stream:
        stream.write(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    filesystem.move(temporary, target)
