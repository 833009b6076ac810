"""Command line: `trajectory-compressor compress | analyze | eval | requests | batches | merge`.

Thin on purpose: it turns flags and the YAML config into a `RunConfig`, calls the Python API
and maps outcomes to exit codes. Logs go to stderr; `--json` puts one summary object on stdout.
The commands with many options list them in named groups (`settings.help_groups`), `compress`
with examples at the end.

Exit codes: see `exit_codes`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import click

from trajectory_compressor.errors import UsageError
from trajectory_compressor.exit_codes import FINISHED, ExitCode
from trajectory_compressor.settings import RunConfig, build_run_config, load_yaml_overrides
from trajectory_compressor.settings.build import empty_overrides
from trajectory_compressor.settings.cli_options import apply_flags, settings_options
from trajectory_compressor.settings.help_groups import GroupedCommand, GroupedOption
from trajectory_compressor.types import one_line


def fail_usage(message: str) -> None:
    """A one-line error and exit code 2: never a traceback for something the user can fix. A
    credential's shape in it is masked: a setting's wrong value is quoted, and a key put in the
    wrong setting of a config file was printed whole."""
    from trajectory_compressor.summarize.redact import redact_secrets

    click.echo(f"error: {redact_secrets(message)}", err=True)
    sys.exit(ExitCode.USAGE)


def _messages(quiet: bool) -> Callable[[str], None]:
    """Where run messages go: stderr; `-q` keeps only warnings and errors (bad records stay visible)."""

    def say(text: str) -> None:
        if not quiet or text.startswith(("warning:", "error:")):
            click.echo(text, err=True)

    return say


def build_config(config_file: str | None, flags: dict[str, Any]) -> RunConfig:
    """Defaults, then the YAML file, then every flag that was given (popped from `flags`)."""
    overrides = load_yaml_overrides(config_file) if config_file else empty_overrides()
    return build_run_config(apply_flags(overrides, flags))


def reports_usage_errors(command: Callable[..., None]) -> Callable[..., None]:
    """Every `UsageError` a command raises becomes one line and exit 2: the one place that maps it.

    Anything else that escapes a command is a bug, not the user's fault: one line and exit 1,
    as `compress` says it, the traceback only with TC_DEBUG=1 (never a traceback on user input).
    """

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except UsageError as exc:
            fail_usage(str(exc))
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            fail_internal(exc)

    return run


def fail_internal(exc: Exception) -> None:
    """A bug's one line and exit 1 (`TC_DEBUG=1` re-raises it, for its traceback).

    The first line of its message: a Ray task's error carries the worker's traceback in its
    text, so it is named by the error it wraps (`cause`).
    """
    if os.environ.get("TC_DEBUG"):
        raise exc
    cause = getattr(exc, "cause", None)
    shown = cause if isinstance(cause, Exception) else exc
    line = f"internal error {type(shown).__name__}: {one_line(shown)} (TC_DEBUG=1 shows the traceback)"
    click.echo(f"error: {line}", err=True)
    sys.exit(ExitCode.FAILED)


def option(*names: str, group: str, common: bool = False, **kwargs: Any) -> Callable[[Any], Any]:
    """A command's own option (not a setting), listed under `group` in its --help (`settings.help_groups`)."""
    return click.option(*names, cls=GroupedOption, help_group=group, common=common, **kwargs)


_config_option = option(
    "--config", "config_file", type=click.Path(dir_okay=False), help="YAML config (reference layout).", group="io",
    common=True,
)  # fmt: skip
_json_option = option(
    "--json", "json_output", is_flag=True, help="Print one JSON summary object on stdout.", group="output"
)
_verbose_option = option(
    "-v", "--verbose", is_flag=True, group="output",
    help="Add the engine's figures to the summary: token counting, endpoint counters, CPU time.",
)  # fmt: skip

# ------------------------------------------------------------------------------ the command's clock
# The end-of-run `time:` counts from when the command started, start-up included (interpreter,
# imports, tokenizer load and probe, endpoint check): a run of a few rows spends most of its time there.
_STARTED: ContextVar[float | None] = ContextVar("tc_command_started", default=None)


def process_started() -> float:
    """When this process started, on the `time.monotonic()` clock (Linux's /proc); now where unknown."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - min(max(age, 0.0), now)


def command_started() -> float:
    """When the command being run started (see `Main.main`); now when run outside of `main`."""
    started = _STARTED.get()
    return time.monotonic() if started is None else started


class Main(click.Group):
    """The command group; it notes when each command started, for the end-of-run `time:`."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # Run as the program (the console script, `python -m`: no arguments given, sys.argv read) a
        # command started when its process did; called with its arguments (in-process: tests, a
        # notebook), when the call was made.
        given = args[0] if args else kwargs.get("args")
        token = _STARTED.set(process_started() if given is None else time.monotonic())
        try:
            return super().main(*args, **kwargs)
        finally:
            _STARTED.reset(token)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="trajectory-compressor")
def main() -> None:
    """Fit agent trajectories into a training context window by summarizing just enough of the middle."""


# Command lines of at most 76 characters (`\` breaks): an 80-column terminal shows them whole.
COMPRESS_EXAMPLES = (
    (
        "Fit every row into the default budget (15,250 tokens) with extractive summaries, no LLM:",
        "trajectory-compressor compress runs.jsonl -o out/runs.jsonl",
    ),
    (
        "See first what a budget would do: count and plan only, no summary, no dataset:",
        "trajectory-compressor compress runs/ -o out/runs.jsonl \\\n  --target-max-tokens 16000 --dry-run",
    ),
    (
        "Summaries by an OpenAI-compatible server (vLLM, SGLang, llama.cpp):",
        "trajectory-compressor compress runs.jsonl -o out/runs.jsonl \\\n"
        "  --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B",
    ),
    (
        "Anthropic's batch API at half price; run it again until it exits 0 (75: still pending):",
        "trajectory-compressor compress runs.jsonl -o out/runs.jsonl \\\n"
        "  --api anthropic --model claude-haiku-4-5 --batch --no-wait",
    ),
    (
        "Count as the trainer does (its chat template) and write what trainers load:",
        "trajectory-compressor compress runs/ -o out/runs.parquet \\\n"
        "  --count-mode chat-template --tokenizer Qwen/Qwen2.5-7B-Instruct \\\n"
        "  --write-format hf-chat --target-max-tokens 8192",
    ),
    (
        "Settings from a YAML file (the reference tool's layout), a flag overriding one of them:",
        "trajectory-compressor compress runs.jsonl -o out/runs.jsonl \\\n  --config compress.yaml --limit 100",
    ),
)


@main.command(cls=GroupedCommand, options_metavar="-o OUTPUT [OPTIONS]", examples=COMPRESS_EXAMPLES)
@click.argument("inputs", nargs=-1, required=True)
@option(
    "-o", "--output", required=True, help="Output file (.jsonl, .jsonl.gz, .parquet) or directory.", group="io",
    common=True,
)  # fmt: skip
@_config_option
@_json_option
@_verbose_option
@settings_options("compress")
@reports_usage_errors
def compress(inputs: tuple[str, ...], output: str, config_file: str | None, json_output: bool, **flags: Any) -> None:
    """Compress INPUT... (JSONL, JSONL.gz, JSONL.zst, JSON, Parquet, HF datasets, directories, hf:NAME) into OUTPUT."""
    from trajectory_compressor.api import compress_async
    from trajectory_compressor.run.signals import install_sigterm_as_interrupt
    from trajectory_compressor.write.run_summary import SummaryView, render_text_summary

    started = command_started()
    verbose = flags.pop("verbose")  # the command's own option: not a setting
    config = build_config(config_file, flags)
    install_sigterm_as_interrupt()
    say = _messages(config.quiet)
    try:
        if config.engine == "ray":
            from trajectory_compressor.ray import require_ray

            require_ray()
            from trajectory_compressor.ray.run import run_on_ray

            results: list[Any] = [run_on_ray(list(inputs), output, config, on_message=say)]
        else:
            results = asyncio.run(compress_async(list(inputs), output, config, on_message=say))
    except UsageError:
        raise
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except Exception as exc:  # a bug, not the user's fault: one line, the traceback on request
        fail_internal(exc)
    exit_code = 0
    since_start = time.monotonic() - started
    single = len(results) == 1  # several outputs: each its rows' time, then the command's
    view = SummaryView(verbose, since_start if single else None, config.llm.currency)
    for result in results:
        if not config.quiet:
            click.echo(render_text_summary(result.report, view), err=True)
        for warning in result.report.get("warnings", ()):  # said once, at the end, with -q too
            click.echo(warning, err=True)
        if result.message:
            failed = result.exit_code not in FINISHED and result.exit_code != ExitCode.PENDING
            click.echo(("error: " if failed else "") + result.message, err=True)
        exit_code = exit_code or result.exit_code
    if not single and not config.quiet:
        click.echo(f"time: {since_start:.1f}s since start, {len(results)} outputs", err=True)
    if json_output:
        payload: dict[str, Any] = results[0].report if single else {"runs": [r.report for r in results]}
        timings = {**payload.get("timings_seconds", {}), "since_start": round(since_start, 3)}
        click.echo(json.dumps({"exit_code": exit_code, **payload, "timings_seconds": timings}, ensure_ascii=False))
    sys.exit(exit_code)


@main.command(cls=GroupedCommand)
@click.argument("inputs", nargs=-1, required=True)
@_config_option
@_json_option
@settings_options("analyze")
@reports_usage_errors
def analyze(inputs: tuple[str, ...], config_file: str | None, json_output: bool, **flags: Any) -> None:
    """Token-length distribution and what compressing INPUT... would cost, with no LLM call."""
    from trajectory_compressor.commands.analyze import analyze_sources, render_analysis, write_analysis_html
    from trajectory_compressor.count import counter_for
    from trajectory_compressor.read.expand import expand_inputs

    config = build_config(config_file, flags)
    sources = expand_inputs(list(inputs), data_files=config.read.data_files)
    counter = counter_for(config)
    analysis = analyze_sources(sources, config, counter)
    if counter.guard.warning:
        click.echo(counter.guard.warning, err=True)
    price_in, price_out = config.llm.price_in, config.llm.price_out
    if config.output.html_report:
        write_analysis_html(Path(config.output.html_report), analysis, price_in, price_out)
    if json_output:
        click.echo(json.dumps(analysis.to_dict(price_in, price_out)))
    else:
        click.echo(render_analysis(analysis, price_in, price_out))


@main.command("eval", cls=GroupedCommand)
@click.argument("outputs", nargs=-1, required=True)
@option(
    "-i", "--input", "inputs", multiple=True, required=True, help="The input the outputs were made from (repeatable).",
    group="io", common=True,
)  # fmt: skip
@option(
    "--metrics",
    "metrics",
    multiple=True,
    help="Metrics file of each OUTPUT, in order [beside each output].",
    group="io",
)
@_json_option
@settings_options("eval")
@reports_usage_errors
def evaluate(
    outputs: tuple[str, ...], inputs: tuple[str, ...], metrics: tuple[str, ...], json_output: bool, **flags: Any
) -> None:
    """Summary fidelity, tokens kept, trainable turns and cost of each OUTPUT of the same --input, side by side."""
    from trajectory_compressor.commands.evaluate import evaluate as evaluate_outputs
    from trajectory_compressor.commands.evaluate_view import render_evaluation
    from trajectory_compressor.read.expand import expand_inputs
    from trajectory_compressor.write.html_evaluation import write_evaluation_html

    if len(metrics) > len(outputs):
        raise UsageError("--metrics is given once per OUTPUT at most")
    config = build_config(None, flags)
    sources = expand_inputs(list(inputs), data_files=config.read.data_files)
    result = evaluate_outputs([Path(o) for o in outputs], sources, config, [Path(m) for m in metrics])
    if config.output.html_report:
        write_evaluation_html(Path(config.output.html_report), result.figures, result.examples)
    click.echo(json.dumps(result.figures) if json_output else render_evaluation(result.figures))


@main.command(cls=GroupedCommand)
@click.argument("inputs", nargs=-1, required=True)
@option("-o", "--output", required=True, help="The batch input file to write (JSONL).", group="io", common=True)
@_config_option
@settings_options("requests")
@reports_usage_errors
def requests(inputs: tuple[str, ...], output: str, config_file: str | None, **flags: Any) -> None:
    """Write the summary requests compressing INPUT... would send, as an OpenAI batch input file."""
    from trajectory_compressor.commands.requests import write_requests
    from trajectory_compressor.count import counter_for
    from trajectory_compressor.read.expand import expand_inputs

    config = build_config(config_file, flags)
    sources = expand_inputs(list(inputs), data_files=config.read.data_files)
    say = functools.partial(click.echo, err=True)
    written = write_requests(sources, Path(output), config, counter_for(config), say=say)
    click.echo(written.summary(), err=True)


@main.group()
def batches() -> None:
    """Show or cancel the provider batches of a `compress --batch` run."""


_batch_url_option = click.option(
    "--base-url",
    help="The endpoint the batches went to [env OPENAI_BASE_URL or ANTHROPIC_BASE_URL, by the API the record "
    "names; status: the record only; cancelling Anthropic's batches: https://api.anthropic.com].",
)
_batch_key_option = click.option(
    "--api-key-env",
    help="Environment variable holding the API key [OPENAI_API_KEY; ANTHROPIC_API_KEY for Anthropic's batches].",
)


@batches.command("status")
@click.argument("output")
@_batch_url_option
@_batch_key_option
@_json_option
@reports_usage_errors
def batches_status(output: str, base_url: str | None, api_key_env: str | None, json_output: bool) -> None:
    """The batches of the run writing OUTPUT: ids, status, request counts."""
    from trajectory_compressor.commands.batches import BatchEndpoint, render_status
    from trajectory_compressor.commands.batches import batches_status as status_of

    runs = asyncio.run(status_of(Path(output), BatchEndpoint(base_url, api_key_env)))
    click.echo(json.dumps(runs, ensure_ascii=True) if json_output else render_status(runs))


@batches.command("cancel")
@click.argument("output")
@_batch_url_option
@_batch_key_option
@reports_usage_errors
def batches_cancel(output: str, base_url: str | None, api_key_env: str | None) -> None:
    """Cancel the open batches of the run writing OUTPUT (what they answered is still used)."""
    from trajectory_compressor.commands.batches import BatchEndpoint, cancel_batches

    cancelled = asyncio.run(cancel_batches(Path(output), BatchEndpoint(base_url, api_key_env)))
    click.echo(f"asked to cancel {len(cancelled)} batch(es): {', '.join(cancelled) or '-'}", err=True)
    if cancelled:
        click.echo(
            "the run keeps what they answered; the rest take --on-summary-failure, unless it is run with "
            "--batch-resubmit-cancelled",
            err=True,
        )


@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    required=True,
    help="Merged dataset path, its format by its suffix (.jsonl, .jsonl.gz, .parquet; a folder: datasets "
    "save_to_disk); Parquet shards merge into .parquet only. Side files are written beside it.",
)
@click.option("--json", "json_output", is_flag=True, help="Print the merged report on stdout.")
@click.option("-v", "--verbose", is_flag=True, help="End the summary with the endpoint's counters.")
@click.option("--overwrite", is_flag=True, help="Replace existing output files this tool did not write.")
@reports_usage_errors
def merge(reports: tuple[str, ...], output: str, json_output: bool, verbose: bool, overwrite: bool) -> None:
    """Merge the outputs of `--num-shards` runs, given by their REPORTS (*.report.json), in input order."""
    from trajectory_compressor.commands.merge import merge_shards
    from trajectory_compressor.write.run_summary import SummaryView, render_text_summary

    merged = merge_shards([Path(r) for r in reports], Path(output), overwrite=overwrite)
    summary = render_text_summary(merged, SummaryView(verbose=verbose))
    click.echo(json.dumps(merged) if json_output else summary, err=not json_output)


if __name__ == "__main__":  # pragma: no cover - after every command is declared
    main()
