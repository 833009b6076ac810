"""The process exit codes, as a type: the CLI, the pipeline and the Python API agree on them.

OK: done. FAILED: stopped (`--strict` on a bad record, `--on-summary-failure fail`, an internal
error). USAGE: a usage or configuration error (every `errors.UsageError`), or the endpoint
refused the API key. OVER_LIMIT: rows still over the limit with `--fail-on-over-limit`.
INTERRUPTED: re-run the same command to resume. PENDING (75, sysexits' EX_TEMPFAIL): `--batch
--no-wait` left batches with the provider; run the same command again later.
"""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    OVER_LIMIT = 3
    PENDING = 75
    INTERRUPTED = 130


# Outcomes after which the next job of a multi-output run still goes ahead.
FINISHED = frozenset({ExitCode.OK, ExitCode.OVER_LIMIT})
