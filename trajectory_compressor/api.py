"""The Python API: `compress()` does what `trajectory-compressor compress` does, without the CLI.

    from trajectory_compressor import RunConfig, PlanConfig, compress
    result = compress(["runs.jsonl"], "out/runs.jsonl", RunConfig(plan=PlanConfig(target_max_tokens=16000)))
    print(result.report["tokens"])

Errors a user can fix (missing input, bad configuration, unloadable tokenizer) raise
`UsageError` subclasses with a one-line message; everything that happens to single rows is
recorded in the outputs instead of raised.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from trajectory_compressor.config import ConfigError, RunConfig
from trajectory_compressor.count import TokenCounter, TokenizerLoadError, build_counter
from trajectory_compressor.exit_codes import EXIT_FINISHED
from trajectory_compressor.read.sources import InputError, InputSource, expand_inputs
from trajectory_compressor.run.pipeline import CompressionRun, CompressJob, RunResult
from trajectory_compressor.run.prepare import ConversationOptions
from trajectory_compressor.summarize.choose import choose_summarizers, resolve_endpoint
from trajectory_compressor.write.output_format import ConversionError
from trajectory_compressor.write.paths import OutputPaths, mirrored_name, shard_path
from trajectory_compressor.write.run_files import OutputError, ResumeMismatchError

# OutputError: an output cannot be written (no permission, disk full, another run holds it).
UsageError = (ConfigError, InputError, TokenizerLoadError, ResumeMismatchError, OutputError)


@dataclass
class OutputOptions:
    """Where and how to write, beyond the output path itself."""

    metrics: Path | None = None
    output_format: str | None = None  # by suffix when None
    resume: bool = True
    over_limit: str = "keep"
    num_shards: int = 1
    shard_index: int = 0
    html_report: Path | None = None
    fail_on_over_limit: bool = False


@dataclass
class InputOptions:
    """How to read inputs: dataset split, `hf:` data files, where the conversation is."""

    split: str = "train"
    data_files: Sequence[str] | None = None
    streaming: bool = True
    conversation_key: str | None = None
    format: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def compress(
    inputs: Sequence[str],
    output: str | Path,
    config: RunConfig | None = None,
    *,
    outputs: OutputOptions | None = None,
    reading: InputOptions | None = None,
    counter: TokenCounter | None = None,
    on_message: Callable[[str], None] | None = None,
) -> list[RunResult]:
    """Compress `inputs` into `output`; returns one result per output written.

    With an output file, all inputs go into it in the order given (one result). With an output
    directory (an existing directory or a path ending in "/"), each input file is written to
    the same relative name under it (one result each).
    """
    return asyncio.run(
        compress_async(inputs, output, config, outputs=outputs, reading=reading, counter=counter, on_message=on_message)
    )


async def compress_async(
    inputs: Sequence[str],
    output: str | Path,
    config: RunConfig | None = None,
    *,
    outputs: OutputOptions | None = None,
    reading: InputOptions | None = None,
    counter: TokenCounter | None = None,
    on_message: Callable[[str], None] | None = None,
) -> list[RunResult]:
    """`compress`, for callers that already run an event loop."""
    config = resolve_endpoint(config or RunConfig())
    config.validate()
    outputs = outputs or OutputOptions()
    reading = reading or InputOptions()
    _validate_output_options(outputs)
    say = on_message or (lambda text: None)
    sources = expand_inputs(
        list(inputs), data_files=reading.data_files, streaming=reading.streaming, exclude=[str(output)]
    )
    jobs = _plan_jobs(inputs, sources, str(output), outputs, reading)
    check_output_paths(jobs, sources)
    if counter is None:
        counter = counter_for(config)
    choice = None if config.dry_run else choose_summarizers(config, counter)
    if choice is not None:
        say(choice.note)
    settings = run_settings(config, outputs, reading, counter)
    results: list[RunResult] = []
    try:
        for job in jobs:
            run = CompressionRun(
                job,
                config,
                counter,
                choice.primary if choice else None,
                choice.fallback if choice else None,
                settings=settings,
                on_message=on_message,
            )
            result = await run.run()
            results.append(result)
            if result.exit_code not in EXIT_FINISHED:
                break
    finally:
        if choice is not None:
            await choice.primary.aclose()
            if choice.fallback is not choice.primary:
                await choice.fallback.aclose()
    return results


def counter_for(config: RunConfig) -> TokenCounter:
    """The token counter `config` asks for (tokenizer, count mode, chat template)."""
    return build_counter(
        config.tokenizer,
        trust_remote_code=config.trust_remote_code,
        count_mode=config.count_mode,
        chat_template=config.chat_template,
    )


def _validate_output_options(outputs: OutputOptions) -> None:
    if outputs.over_limit not in {"keep", "drop", "truncate"}:
        raise ConfigError("over_limit must be keep, drop or truncate")
    if outputs.num_shards < 1:
        raise ConfigError(f"--num-shards must be >= 1, got {outputs.num_shards}")
    if not 0 <= outputs.shard_index < outputs.num_shards:
        raise ConfigError(
            f"--shard-index must be in [0, --num-shards) = [0, {outputs.num_shards}), got {outputs.shard_index}"
        )
    if outputs.output_format not in {None, "jsonl", "jsonl.gz", "parquet", "hf"}:
        raise ConfigError("output format must be jsonl, jsonl.gz, parquet or hf")


def _plan_jobs(
    inputs: Sequence[str], sources: list[InputSource], output_arg: str, outputs: OutputOptions, reading: InputOptions
) -> list[CompressJob]:
    """One job for an output file; one per input file for an output directory (names mirrored).

    An output is a directory to mirror into when it ends with "/" or already is a directory,
    unless `--output-format hf` asks for a Hugging Face dataset directory there.
    """
    from trajectory_compressor.write.output_format import output_format_for

    output = Path(output_arg)
    conversation = ConversationOptions(reading.conversation_key, reading.format)
    mirror = outputs.output_format != "hf" and (output_arg.endswith(("/", os.sep)) or output.is_dir())

    def job(sources_: list[InputSource], path: Path) -> CompressJob:
        try:
            fmt = output_format_for(str(path), outputs.output_format)
        except ConversionError as exc:
            raise ConfigError(str(exc)) from None
        if outputs.num_shards > 1:
            path = shard_path(path, fmt, outputs.shard_index, outputs.num_shards)
        return CompressJob(
            sources=sources_,
            output=path,
            metrics=outputs.metrics if not mirror else None,
            output_format=fmt,
            resume=outputs.resume,
            split=reading.split,
            conversation=conversation,
            over_limit=outputs.over_limit,
            num_shards=outputs.num_shards,
            shard_index=outputs.shard_index,
            html_report=outputs.html_report if not mirror else None,
            fail_on_over_limit=outputs.fail_on_over_limit,
        )

    if not mirror:
        if output.exists() and output.is_dir() and outputs.output_format != "hf":
            raise ConfigError(f"output {output} is a directory")
        return [job(sources, output)]
    roots = [Path(arg) for arg in inputs if not arg.startswith("hf:") and Path(arg).is_dir()]
    jobs = []
    for source in sources:
        if source.path is None:
            raise ConfigError(f"{source.name}: a dataset source needs an output file, not a directory")
        jobs.append(job([source], output / mirrored_name(Path(source.path), roots)))
    return jobs


def check_output_paths(jobs: Sequence[CompressJob], sources: Sequence[InputSource]) -> None:
    """Refuse outputs that would overwrite an input or one another.

    Paths are compared resolved (symlinks followed), and every file a run writes counts: the
    dataset, the metrics, the report, the over-limit list, the rejects and the HTML report.
    """
    inputs = {_real(source.path): source.name for source in sources if source.path is not None}
    taken: dict[Path, str] = {}
    for job in jobs:
        paths = OutputPaths.beside(job.output, job.metrics)
        origin = f" (from {job.sources[0].name})" if len(job.sources) == 1 else ""
        named = [
            ("the output", paths.data),
            ("the metrics file", paths.metrics),
            ("the report", paths.report),
            ("the over-limit list", paths.over_limit),
            ("the rejects file", paths.rejects),
        ]
        if job.html_report is not None:
            named.append(("the HTML report", job.html_report))
        for role, path in named:
            real = _real(path)
            if real in inputs:
                raise ConfigError(f"{role} {path} would overwrite the input {inputs[real]}; choose another path")
            if real in taken:
                raise ConfigError(f"{role} {path}{origin} would overwrite {taken[real]}; choose distinct output paths")
            taken[real] = f"{role} {path}{origin}"
        if job.output_format == "hf":  # the dataset directory is replaced as a whole
            data = _real(paths.data)
            for real, name in inputs.items():
                if data in real.parents:
                    raise ConfigError(f"the output {paths.data} would overwrite the input {name}; choose another path")


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def run_settings(
    config: RunConfig, outputs: OutputOptions, reading: InputOptions, counter: TokenCounter
) -> dict[str, Any]:
    """Everything that decides the outputs' bytes: the resume fingerprint and the report's record.

    Credentials are never in it: the base URL is shown without them and the key is not a setting.
    """
    from trajectory_compressor.summarize.redact import display_url

    llm = replace(config.llm, base_url=display_url(config.llm.base_url) if config.llm.base_url else None)
    llm_settings = {
        key: value
        for key, value in asdict(llm).items()
        if key in {"base_url", "model", "temperature", "extra_body", "redact_secrets", "max_prompt_chars"}
    }
    return {
        "tokenizer": counter.name,
        "count_mode": config.count_mode,
        "chat_template": config.chat_template,
        "plan": asdict(config.plan),
        "summarizer": config.summarizer,
        "llm": llm_settings,
        "on_summary_failure": config.on_summary_failure,
        "skip_under_target": config.skip_under_target,
        "dry_run": config.dry_run,
        "sample_percent": config.sample_percent,
        "seed": config.seed,
        "limit": config.limit,
        "over_limit": outputs.over_limit,
        "num_shards": outputs.num_shards,
        "shard_index": outputs.shard_index,
        "output_format": outputs.output_format,
        "split": reading.split,
        "conversation_key": reading.conversation_key,
        "format": reading.format,
    }
