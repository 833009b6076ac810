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

from trajectory_compressor.errors import RunAborted, UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.ray.inputs import is_uri, list_inputs
from trajectory_compressor.ray.write import CompressedOutput, RayOutputLayout, filesystem_of
from trajectory_compressor.settings import ConfigError, RunConfig, settings_record, with_values
from trajectory_compressor.summarize.choose import resolve_endpoint
from trajectory_compressor.write.collisions import input_files, refuse_overwrites, run_outputs
from trajectory_compressor.write.output_format import output_format_for
from trajectory_compressor.write.report import build_report, render_text_summary

RAY_FORMATS = ("jsonl", "parquet")


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


def run_on_ray(
    inputs: list[str], output: str, config: RunConfig, *, on_message: Callable[[str], None] | None = None
) -> RayRunResult:
    """One compress run on Ray (a local Ray unless `config.ray_address`); returns its report."""
    import ray
    import ray.data

    from trajectory_compressor.api import counter_for
    from trajectory_compressor.ray.engine import compress_dataset, default_workers
    from trajectory_compressor.ray.limits import start_limits
    from trajectory_compressor.ray.read import count_inputs, read_inputs, stream_rows_read
    from trajectory_compressor.summarize.choose import choose_summarizers

    say = on_message or (lambda text: print(text, file=sys.stderr))
    started = time.monotonic()
    config = resolve_endpoint(config)
    config.validate()
    output_format = output_format_for(output, config.output.output_format)
    check_supported(config, output_format)
    layout = RayOutputLayout.beside(output)
    sources = list_inputs(inputs, config, exclude=[output] if not is_uri(output) else [])
    if not is_uri(output):
        refuse_overwrites(run_outputs(layout.as_dict()), input_files(sources))
    counter = counter_for(config)
    uses_llm = False
    if not config.dry_run:  # the same checks and note as a local run, without opening a cache
        choice = choose_summarizers(with_values(config, "llm", use_cache=False), counter)
        uses_llm = choice.primary.name == "llm"
        say(choice.note)
    cache_folder = None
    if config.llm.use_cache and uses_llm:
        # `--cache folder/summaries.sqlite3`: the workers' files go beside it, in its folder.
        given = config.llm.cache_path
        cache_folder = os.path.dirname(os.path.abspath(given)) if given else default_cache_folder(output)
        if cache_folder is None:
            say("warning: no --cache folder for a remote output: summaries will not be cached")
    _init_ray(config)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = not config.quiet and sys.stderr.isatty()
    workers = config.num_workers or default_workers()
    say(f"engine: ray ({workers} workers, {ray.cluster_resources().get('CPU', 0):g} CPUs)")
    limits = start_limits(config.llm.max_concurrency, config.llm.rpm, config.llm.tpm)
    sink = CompressedOutput(layout, output_format)
    status, exit_code, message = "completed", ExitCode.OK, None
    counts = count_inputs(sources, config.read.split)
    try:
        dataset = compress_dataset(
            read_inputs(sources, config, counts),
            config,
            num_workers=workers,
            cache_folder=cache_folder,
            keep_rejects_in_data=output_format == "jsonl",
            limits=limits,
        )
        dataset.write_datasink(sink)
    except Exception as exc:
        cause = _user_cause(exc)
        if isinstance(cause, UsageError):
            raise cause from None
        aborted = ray.get(limits.aborted.remote())
        if isinstance(cause, RunAborted):
            aborted = (str(cause), cause.exit_code)
        if aborted is None:
            raise
        status, exit_code, message = "aborted", ExitCode(aborted[1]), aborted[0]
    usage = ray.get(limits.usage.remote())
    totals = sink.totals
    totals.rows_read = stream_rows_read(sum(counts), config.select)
    report = build_report(
        totals,
        status=status,
        settings=settings_record(config, counter.name),
        outputs=layout.as_dict() if status == "completed" else {},
        timings={"total": time.monotonic() - started},
        summarizer_stats=usage if usage.get("workers") else None,
    )
    report["engine"] = {"name": "ray", "workers": workers, "cache": cache_folder}
    if message:
        report["message"] = message
    write_report(layout.report, report)
    ray.kill(limits)
    if status == "completed" and config.output.fail_on_over_limit and totals.rows_still_over_limit:
        exit_code = ExitCode.OVER_LIMIT
        message = f"{totals.rows_still_over_limit} rows are still over the limit"
    return RayRunResult(report, exit_code, message)


def _init_ray(config: RunConfig) -> None:
    """Join `--ray-address`, or start a local Ray, unless this process already did."""
    import logging

    import ray

    level = logging.WARNING if config.quiet else logging.INFO
    logging.getLogger("ray.data").setLevel(level)  # -q: no lines about each Dataset's execution
    if ray.is_initialized():
        return
    if config.ray_address:
        ray.init(address=config.ray_address, logging_level=level)
    elif os.environ.get("RAY_ADDRESS"):  # inside `ray job submit`: the job's cluster
        ray.init(logging_level=level)
    else:  # a local Ray for this run only
        ray.init(include_dashboard=False, logging_level=level)


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
