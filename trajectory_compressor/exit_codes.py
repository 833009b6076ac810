"""The process exit codes, in one place: the CLI, the pipeline and the Python API agree on them.

0 done; 1 stopped (`--strict` on a bad record, `--on-summary-failure fail`, an internal error);
2 usage or configuration error, or the endpoint refused the API key; 3 rows still over the
limit with `--fail-on-over-limit`; 130 interrupted (re-run the same command to resume).
"""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_OVER_LIMIT = 3
EXIT_INTERRUPTED = 130

# Outcomes after which the next job of a multi-output run still goes ahead.
EXIT_FINISHED = frozenset({EXIT_OK, EXIT_OVER_LIMIT})
