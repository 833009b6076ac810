"""The one root of every error a user can fix: the CLI maps it to exit 2 with one line, no traceback.

Bad settings, a missing input, an unloadable tokenizer, an output another run holds, a resume
that does not match: each is a subclass raised where it is found. Everything that happens to a
single row is recorded in the outputs instead of raised.
"""

from __future__ import annotations

from trajectory_compressor.exit_codes import ExitCode


class UsageError(Exception):
    """Something the user can fix; its message is one line that says what and where."""


class RunAborted(RuntimeError):
    """Stop the whole run (`--on-summary-failure fail`, `--strict`, or a refused API key), with its exit code."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def __reduce__(self) -> tuple[type[RunAborted], tuple[str, ExitCode]]:
        # Raised in a worker process (`--num-workers`), it crosses back pickled, exit code and all.
        return type(self), (str(self), self.exit_code)
