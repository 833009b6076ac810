"""The Python API: `compress()` does what `trajectory-compressor compress` does, without the CLI.

    from trajectory_compressor import RunConfig, PlanConfig, compress
    [result] = compress(["runs.jsonl"], "out/runs.jsonl", RunConfig(plan=PlanConfig(target_max_tokens=16000)))
    print(result.report["tokens"])

Errors a user can fix (missing input, bad configuration, unloadable tokenizer) raise
`trajectory_compressor.UsageError` subclasses with a one-line message; everything that happens
to single rows is recorded in the outputs instead of raised.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trajectory_compressor.count import TokenCounter, counter_for
from trajectory_compressor.exit_codes import FINISHED, ExitCode
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.run.jobs import CompressJob, check_output_paths, plan_jobs
from trajectory_compressor.run.pipeline import CompressionRun, RunResult
from trajectory_compressor.run.settings_record import settings_record
from trajectory_compressor.run.worker_pool import WorkerPool, main_script_reloadable, refuse_in_a_starting_worker
from trajectory_compressor.settings import ConfigError, RunConfig
from trajectory_compressor.settings.choices import NO_SUMMARIES
from trajectory_compressor.summarize.choose import SummarizerChoice, choose_summarizers, resolve_endpoint, wants_llm
from trajectory_compressor.summarize.llm.preflight import check_before_loading
from trajectory_compressor.write.paths import written_by_a_run

if TYPE_CHECKING:  # the batch phase loads aiohttp: only runs with --batch import it
    from trajectory_compressor.run.batch.driver import BatchPhase


def compress(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | Path,
    config: RunConfig | None = None,
    *,
    counter: TokenCounter | None = None,
    on_message: Callable[[str], None] | None = None,
) -> list[RunResult]:
    """Compress `inputs` (one path or Hub id, or a list of them) into `output`; returns one
    result per output written.

    With an output file, all inputs go into it in the order given (one result). With an output
    directory (an existing directory or a path ending in "/"), each input file is written to
    the same relative name under it (one result each).
    """
    return asyncio.run(compress_async(inputs, output, config, counter=counter, on_message=on_message))


async def compress_async(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | Path,
    config: RunConfig | None = None,
    *,
    counter: TokenCounter | None = None,
    on_message: Callable[[str], None] | None = None,
) -> list[RunResult]:
    """`compress`, for callers that already run an event loop."""
    refuse_in_a_starting_worker()
    # One input given as itself: a string is not read as a list of one-letter paths.
    paths = [os.fspath(inputs)] if isinstance(inputs, (str, os.PathLike)) else [os.fspath(i) for i in inputs]
    config = resolve_endpoint(config or RunConfig())
    config.validate()
    say = on_message or (lambda text: None)
    sources = expand_inputs(
        paths,
        data_files=config.read.data_files,
        streaming=config.read.streaming,
        exclude=[str(output)],
        written_by_us=written_by_a_run,
    )
    jobs = plan_jobs(paths, sources, str(output), config.output, config.select)
    check_output_paths(jobs, sources, config)
    await check_before_loading(config)
    # Started first: the workers load their tokenizers while this process loads its own.
    pool = worker_pool(config, say, own_counter=counter is not None)
    stopped = True
    results: list[RunResult] = []
    choice = None
    try:
        if counter is None:
            counter = counter_for(config)
        choice = None if config.dry_run else choose_summarizers(config, counter)
        if choice is not None:
            say(choice.note)
        settings = settings_record(config, counter.name)
        if choice is not None and config.llm.responses:
            from trajectory_compressor.summarize.llm.batch_file import answer_line_limit

            limit = answer_line_limit(config.plan.summary_target_tokens)
            await load_responses(choice, Path(config.llm.responses), say, line_limit=limit)
        # The outputs share the summarizer: each report counts what its run used. The first counts
        # all so far, the answers `--responses` loaded above included.
        counters_since = None
        for job in jobs:
            primary, fallback = (choice.primary, choice.fallback) if choice else (None, None)
            run = CompressionRun(
                job,
                config,
                counter,
                primary,
                fallback,
                settings=settings,
                on_message=on_message,
                batches=batch_phase(job, config, counter, choice, say) if config.batch.enabled else None,
                pool=pool,
                counters_since=counters_since,
            )
            result = await run.run()
            counters_since = run.counters_at_end
            results.append(result)
            if result.exit_code not in FINISHED and result.exit_code != ExitCode.PENDING:
                break  # pending: the next output's batches are submitted too
        stopped = bool(results) and results[-1].exit_code not in FINISHED
    finally:
        if pool is not None:  # a stopped run's rows in flight are not waited for: never committed
            pool.close(kill=stopped)
        if choice is not None and choice.primary is not None:
            await choice.primary.aclose()
        if choice is not None and choice.fallback is not None and choice.fallback is not choice.primary:
            await choice.fallback.aclose()
    return results


def worker_pool(config: RunConfig, say: Callable[[str], None], *, own_counter: bool = False) -> WorkerPool | None:
    """`--num-workers N` (N > 1): the pool of processes the extractive summaries run in, or None.

    Only a summarizer that computes gains from processes; the LLM's waits on its endpoint
    (`--max-concurrency` is its knob), so its rows stay in this process, with a note. A caller's
    own `counter` cannot be sent to a process (a Rust tokenizer does not pickle): refused."""
    workers = config.num_workers or 1
    if workers == 1 or config.dry_run or config.summarizer == NO_SUMMARIES:
        return None
    if wants_llm(config):
        say("--num-workers: the LLM summarizer waits on its endpoint, not on a core; rows stay in this process")
        return None
    if own_counter:
        raise ConfigError("num_workers: each worker process loads its tokenizer from the settings; leave `counter` out")
    if not main_script_reloadable():
        raise ConfigError(
            "num_workers: each worker process imports the calling script again (multiprocessing's spawn), "
            "and a script read from stdin cannot be; run it from a file"
        )
    return WorkerPool(config, workers)


async def load_responses(choice: SummarizerChoice, path: Path, say: Callable[[str], None], *, line_limit: int) -> None:
    """`--responses`: put a batch output file's answers into the cache before the run asks."""
    if choice.llm is None:
        raise ConfigError("--responses needs the llm summarizer: pass --base-url and --model")
    loaded = await choice.llm.load_responses(path, line_limit=line_limit)
    say(loaded.summary())
    for problem in loaded.problems:
        say(f"warning: {problem}")


def batch_phase(
    job: CompressJob,
    config: RunConfig,
    counter: TokenCounter,
    choice: SummarizerChoice | None,
    say: Callable[[str], None],
) -> BatchPhase:
    """`--batch`: the batch rounds of one output, in its own batch folder."""
    from trajectory_compressor.run.batch.driver import BatchPhase
    from trajectory_compressor.write.paths import OutputPaths

    if config.dry_run:
        raise ConfigError("--batch and --dry-run exclude each other: a dry run asks for no summary")
    if choice is None or choice.llm is None or choice.fallback is None:
        raise ConfigError("--batch needs the llm summarizer: pass --base-url and --model")
    if not choice.llm.has_cache:
        raise ConfigError("--batch needs the summary cache (drop --no-cache): answers reach the run through it")
    folder = OutputPaths.beside(job.output, job.metrics).batch_dir
    return BatchPhase(folder, job.sources, config, counter, choice.fallback, usage=choice.llm.usage, say=say)
