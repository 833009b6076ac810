"""Command line: `trajectory-compressor compress | analyze | merge`.

Thin on purpose: it turns flags and the YAML config into a `RunConfig`, calls the Python API
and maps outcomes to exit codes. Logs go to stderr; `--json` puts one summary object on stdout.

Exit codes: see `exit_codes`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from trajectory_compressor.config import (
    ConfigError,
    build_run_config,
    coerce_setting,
    load_yaml_overrides,
    parse_extra_body,
)
from trajectory_compressor.exit_codes import EXIT_FAILED, EXIT_FINISHED, EXIT_INTERRUPTED, EXIT_USAGE

# flag name -> (config part, attribute): flags given on the command line override the YAML file.
_FLAG_TARGETS: dict[str, tuple[str, str]] = {
    "tokenizer": ("run", "tokenizer"),
    "count_mode": ("run", "count_mode"),
    "chat_template": ("run", "chat_template"),
    "target_max_tokens": ("plan", "target_max_tokens"),
    "summary_target_tokens": ("plan", "summary_target_tokens"),
    "protect_last_n_turns": ("plan", "protect_last_n_turns"),
    "protect_first_system": ("plan", "protect_first_system"),
    "protect_first_human": ("plan", "protect_first_human"),
    "protect_first_gpt": ("plan", "protect_first_gpt"),
    "protect_first_tool": ("plan", "protect_first_tool"),
    "summarizer": ("run", "summarizer"),
    "dry_run": ("run", "dry_run"),
    "sample_percent": ("run", "sample_percent"),
    "seed": ("run", "seed"),
    "limit": ("run", "limit"),
    "strict": ("run", "strict"),
    "quiet": ("run", "quiet"),
    "window": ("run", "window"),
    "row_timeout": ("run", "row_timeout"),
    "on_summary_failure": ("run", "on_summary_failure"),
    "base_url": ("llm", "base_url"),
    "model": ("llm", "model"),
    "api_key_env": ("llm", "api_key_env"),
    "temperature": ("llm", "temperature"),
    "max_concurrency": ("llm", "max_concurrency"),
    "rpm": ("llm", "rpm"),
    "tpm": ("llm", "tpm"),
    "request_timeout": ("llm", "request_timeout"),
    "max_retries": ("llm", "max_retries"),
    "retry_delay": ("llm", "retry_delay"),
    "max_prompt_chars": ("llm", "max_prompt_chars"),
    "redact_secrets": ("llm", "redact_secrets"),
    "cache": ("llm", "cache_path"),
    "price_in": ("llm", "price_in"),
    "price_out": ("llm", "price_out"),
}


def fail_usage(message: str) -> None:
    """A one-line error and exit code 2: never a traceback for something the user can fix."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _messages(quiet: bool) -> Callable[[str], None]:
    """Where run messages go: stderr; `-q` keeps only warnings and errors (bad records stay visible)."""

    def say(text: str) -> None:
        if not quiet or text.startswith(("warning:", "error:")):
            click.echo(text, err=True)

    return say


def build_config(config_file: str | None, flags: dict[str, Any]) -> Any:
    """YAML file first, then every flag that was given."""
    overrides: dict[str, dict[str, Any]] = {"run": {}, "plan": {}, "llm": {}}
    if config_file:
        overrides = load_yaml_overrides(config_file)
    for name, (part, attribute) in _FLAG_TARGETS.items():
        value = flags.get(name)
        if value is not None:
            try:
                overrides[part][attribute] = coerce_setting(attribute, value)
            except ValueError as exc:
                raise ConfigError(f"--{name.replace('_', '-')}: {exc}") from None
    if flags.get("extra_body") is not None:
        overrides["llm"]["extra_body"] = parse_extra_body(flags["extra_body"])
    if flags.get("no_cache"):
        overrides["llm"]["use_cache"] = False
    return build_run_config(overrides)


def _common_options(function: Any) -> Any:
    """Options shared by `compress` and `analyze` (tokens, plan, reading)."""
    options = [
        click.option(
            "--config", "config_file", type=click.Path(dir_okay=False), help="YAML config (reference layout)."
        ),
        click.option("--tokenizer", help="Hub id, tokenizer directory or tokenizer.json [default: bundled DeepSeek]."),
        click.option(
            "--count-mode",
            type=click.Choice(["values", "chat-template"]),
            help="Count turn values (reference measure) or turns rendered by the chat template [values].",
        ),
        click.option("--chat-template", type=click.Path(dir_okay=False), help="Jinja chat template file to use."),
        click.option("--target-max-tokens", type=int, help="Token budget per trajectory [15250]."),
        click.option("--summary-target-tokens", type=int, help="Token budget of the summary turn [750]."),
        click.option("--protect-last-n-turns", type=int, help="Turns at the end kept verbatim [4]."),
        click.option("--protect-first-system/--no-protect-first-system", default=None),
        click.option("--protect-first-human/--no-protect-first-human", default=None),
        click.option("--protect-first-gpt/--no-protect-first-gpt", default=None),
        click.option("--protect-first-tool/--no-protect-first-tool", default=None),
        click.option("--sample-percent", type=float, help="Process a deterministic sample of the rows."),
        click.option("--seed", type=int, help="Seed of --sample-percent [42]."),
        click.option("--limit", type=int, help="Process at most N rows."),
        click.option("--split", default="train", show_default=True, help="Split of a dataset input."),
        click.option("--data-files", multiple=True, help="data_files for an hf:BUILDER input (repeatable)."),
        click.option("--conversation-key", help="Key of the turn list [auto: conversations / messages]."),
        click.option("--format", "conversation_format", type=click.Choice(["sharegpt", "openai"]), help="[auto]"),
        click.option("-q", "--quiet", is_flag=True, default=None, help="No progress bar, fewer messages."),
        click.option("--json", "json_output", is_flag=True, help="Print one JSON summary object on stdout."),
        click.option("--html-report", type=click.Path(dir_okay=False), help="Write a self-contained HTML report."),
        click.option("--price-in", type=float, help="Price per million prompt tokens (for cost figures)."),
        click.option("--price-out", type=float, help="Price per million completion tokens."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="trajectory-compressor")
def main() -> None:
    """Fit agent trajectories into a training context window by summarizing just enough of the middle."""


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="Output file (.jsonl, .jsonl.gz, .parquet) or directory.")
@_common_options
@click.option("--metrics", type=click.Path(dir_okay=False), help="Per-row metrics [<output stem>.metrics.jsonl].")
@click.option("--output-format", type=click.Choice(["jsonl", "jsonl.gz", "parquet", "hf"]), help="[by suffix]")
@click.option("--summarizer", type=click.Choice(["auto", "llm", "extractive"]), help="[auto]")
@click.option("--dry-run", is_flag=True, default=None, help="Count and plan only: metrics and report, no summaries.")
@click.option("--strict", is_flag=True, default=None, help="Stop at the first bad record (exit 1).")
@click.option("--fail-on-over-limit", is_flag=True, help="Exit 3 when any row is still over the limit.")
@click.option("--over-limit", type=click.Choice(["keep", "drop", "truncate"]), default="keep", show_default=True)
@click.option("--no-resume", is_flag=True, help="Start over instead of resuming an interrupted run.")
@click.option("--num-shards", type=int, default=1, show_default=True)
@click.option("--shard-index", type=int, default=0, show_default=True)
@click.option("--window", type=int, help="Rows read ahead of the oldest unfinished one [4 x concurrency, >= 256].")
@click.option("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 [env OPENAI_BASE_URL].")
@click.option("--model", help="Model name sent to the endpoint.")
@click.option("--api-key-env", help="Environment variable holding the API key [OPENAI_API_KEY].")
@click.option("--temperature", type=float, help="[0.3]")
@click.option("--max-concurrency", type=int, help="Requests in flight across the run [32].")
@click.option("--rpm", type=float, help="Requests per minute limit.")
@click.option("--tpm", type=float, help="Tokens per minute limit.")
@click.option("--request-timeout", type=float, help="Seconds per request [120].")
@click.option("--max-retries", type=int, help="[5]")
@click.option("--retry-delay", type=float, help="Base of the exponential backoff, seconds [1].")
@click.option("--max-prompt-chars", type=int, help="Transcript characters sent per summary [96000].")
@click.option("--row-timeout", type=float, help="Seconds a row may spend on summaries [600].")
@click.option("--on-summary-failure", type=click.Choice(["extractive", "keep", "fail"]), help="[extractive]")
@click.option("--redact-secrets/--no-redact-secrets", default=None, help="Mask credentials sent and summarized [on].")
@click.option("--cache", type=click.Path(dir_okay=False), help="SQLite summary cache [user cache dir].")
@click.option("--no-cache", is_flag=True, help="Do not read or write the summary cache.")
@click.option("--extra-body", help='JSON merged into every request, e.g. \'{"stop": ["\\n\\n\\n"]}\'.')
def compress(inputs: tuple[str, ...], output: str, **flags: Any) -> None:
    """Compress INPUT... (JSONL, JSONL.gz, JSON, Parquet, HF datasets, directories, hf:NAME) into OUTPUT."""
    from trajectory_compressor.api import InputOptions, OutputOptions, UsageError, compress_async
    from trajectory_compressor.run.signals import install_sigterm_as_interrupt

    json_output = flags.pop("json_output")
    try:
        config = build_config(flags.pop("config_file"), flags)
        outputs = OutputOptions(
            metrics=Path(flags["metrics"]) if flags["metrics"] else None,
            output_format=flags["output_format"],
            resume=not flags["no_resume"],
            over_limit=flags["over_limit"],
            num_shards=flags["num_shards"],
            shard_index=flags["shard_index"],
            html_report=Path(flags["html_report"]) if flags["html_report"] else None,
            fail_on_over_limit=flags["fail_on_over_limit"],
        )
        reading = InputOptions(
            split=flags["split"],
            data_files=list(flags["data_files"]) or None,
            conversation_key=flags["conversation_key"],
            format=flags["conversation_format"],
        )
    except ConfigError as exc:
        fail_usage(str(exc))
    install_sigterm_as_interrupt()
    say = _messages(config.quiet)
    import asyncio

    try:
        results = asyncio.run(
            compress_async(list(inputs), output, config, outputs=outputs, reading=reading, on_message=say)
        )
    except UsageError as exc:
        fail_usage(str(exc))
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # a bug, not the user's fault: one line, the traceback on request
        if os.environ.get("TC_DEBUG"):
            raise
        click.echo(f"error: internal error {type(exc).__name__}: {exc} (TC_DEBUG=1 shows the traceback)", err=True)
        sys.exit(EXIT_FAILED)
    exit_code = 0
    for result in results:
        if not config.quiet:
            click.echo(result.summary_text, err=True)
        if result.message:
            click.echo(("error: " if result.exit_code not in EXIT_FINISHED else "") + result.message, err=True)
        exit_code = exit_code or result.exit_code
    if json_output:
        payload = results[0].report if len(results) == 1 else {"runs": [r.report for r in results]}
        click.echo(json.dumps({"exit_code": exit_code, **payload}, ensure_ascii=False))
    sys.exit(exit_code)


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@_common_options
def analyze(inputs: tuple[str, ...], **flags: Any) -> None:
    """Token-length distribution and what compressing INPUT... would cost, with no LLM call."""
    from trajectory_compressor.api import UsageError, counter_for
    from trajectory_compressor.commands.analyze import analyze_sources, render_analysis, write_analysis_html
    from trajectory_compressor.read.sources import expand_inputs
    from trajectory_compressor.run.prepare import ConversationOptions

    json_output = flags.pop("json_output")
    try:
        config = build_config(flags.pop("config_file"), flags)
        sources = expand_inputs(list(inputs), data_files=list(flags["data_files"]) or None)
        counter = counter_for(config)
        analysis = analyze_sources(
            sources,
            config,
            counter,
            split=flags["split"],
            conversation=ConversationOptions(flags["conversation_key"], flags["conversation_format"]),
        )
        price_in, price_out = config.llm.price_in, config.llm.price_out
        if flags["html_report"]:
            write_analysis_html(Path(flags["html_report"]), analysis, price_in, price_out)
    except UsageError as exc:
        fail_usage(str(exc))
    if json_output:
        click.echo(json.dumps(analysis.to_dict(price_in, price_out)))
    else:
        click.echo(render_analysis(analysis, price_in, price_out))


@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, help="Merged dataset path; side files are written beside it.")
@click.option("--json", "json_output", is_flag=True, help="Print the merged report on stdout.")
def merge(reports: tuple[str, ...], output: str, json_output: bool) -> None:
    """Merge the outputs of `--num-shards` runs, given by their REPORTS (*.report.json), in input order."""
    from trajectory_compressor.commands.merge import MergeError, merge_shards
    from trajectory_compressor.write.report import render_text_summary

    try:
        merged = merge_shards([Path(r) for r in reports], Path(output))
    except MergeError as exc:
        fail_usage(str(exc))
    click.echo(json.dumps(merged) if json_output else render_text_summary(merged), err=not json_output)


if __name__ == "__main__":  # pragma: no cover - after every command is declared
    main()
