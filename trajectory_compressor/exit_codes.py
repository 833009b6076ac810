"""The process exit codes, as a type: the CLI, the pipeline and the Python API agree on them.

OK: done. FAILED: stopped (`--strict` on a bad record, `--on-summary-failure fail`, an internal
error). USAGE: a usage or configuration error (every `errors.UsageError`), or the endpoint
refused the API key. OVER_LIMIT: rows still over the limit with `--fail-on-over-limit`.
ALL_REJECTED: the run finished but rejected every row it read (almost always a wrong `--format`
or `--conversation-key`): its outputs hold nothing compressed, so a script must not go on as if
they did; a multi-output run stops there (the next input is most likely read the same way).
INTERRUPTED: re-run the same command to resume. PENDING (75, sysexits' EX_TEMPFAIL): `--batch
--no-wait` left batches with the provider; run the same command again later. LOST (69,
sysexits' EX_UNAVAILABLE): `--engine ray` lost a node, a worker or the run's own actor and could
not go on, or was left without the CPUs for its workers for `--ray-stall-timeout` (`stalled`);
the parts it wrote are kept, and the same command resumes.
"""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    OVER_LIMIT = 3
    ALL_REJECTED = 4
    LOST = 69
    PENDING = 75
    INTERRUPTED = 130


# Outcomes after which the next job of a multi-output run still goes ahead.
FINISHED = frozenset({ExitCode.OK, ExitCode.OVER_LIMIT})
