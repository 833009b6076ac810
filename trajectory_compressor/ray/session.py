"""The driver's Ray session as the user sees it: the local engine's signals and `-q`, not Ray's.

`ray.init` changes two things a command-line run relies on:

* **SIGTERM.** It installs a handler that calls `sys.exit(15)`, and its C++ core installs a
  failure handler that prints a native stack dump first. Slurm and Kubernetes stop jobs with
  SIGTERM, and the local engine's contract is exit 130 and a resumable stop: so whatever
  handler the caller had (the CLI's: SIGTERM as Ctrl-C) is put back after `ray.init`, at the
  operating-system level too (Python's `signal.signal` replaces the C++ handler).
* **The console.** Ray logs on the driver through its Python loggers (`ray`, `ray.data`), its
  workers' output forwarded to the driver, and its C++ core, which writes every ERROR line to
  file descriptor 2 as well as to its log file in the session folder, with no setting to stop it
  (ray-project/ray#18577; a Ray Data actor pool always logs one); Ray Data also issues Python
  warnings about its plan. With `-q`: loggers at ERROR, no forwarding, Ray's warnings ignored,
  and, while the run executes, descriptor 2 points at /dev/null, with Python's `sys.stderr`
  (this tool's lines, tracebacks) and faulthandler kept on the real stderr. The native lines
  hidden are still in Ray's own log (`/tmp/ray/session_latest/logs/python-core-driver-*`).
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator

from trajectory_compressor.settings import RunConfig


def start_ray(config: RunConfig) -> None:
    """Join `--ray-address`, or start a local Ray, unless this process already did; keep the caller's SIGTERM."""
    import ray

    level = logging.ERROR if config.quiet else logging.INFO
    logging.getLogger("ray.data").setLevel(level)  # -q: no lines about each Dataset's execution
    if ray.is_initialized():
        return
    log_to_driver = not config.quiet
    with _keeping_sigterm():
        if config.ray_address:
            ray.init(address=config.ray_address, logging_level=level, log_to_driver=log_to_driver)
        elif os.environ.get("RAY_ADDRESS"):  # inside `ray job submit`: the job's cluster
            ray.init(logging_level=level, log_to_driver=log_to_driver)
        else:  # a local Ray for this run only
            ray.init(include_dashboard=False, logging_level=level, log_to_driver=log_to_driver)


@contextlib.contextmanager
def _keeping_sigterm() -> Iterator[None]:
    """Put the SIGTERM handler back as it was before the block (Ray's Python and C++ handlers out)."""
    if threading.current_thread() is not threading.main_thread():  # signals belong to the main thread
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def quiet_console(quiet: bool) -> Iterator[None]:
    """With `quiet`, nothing of Ray's own on the console during the block: its Python warnings
    (`warnings.warn` in Ray Data's planner) are ignored, and its native writes silenced."""
    if not quiet:
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"ray(\.|$)")
        with _native_stderr_silenced():
            yield


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """Native writes to descriptor 2 (Ray's C++ log lines) go to /dev/null during the block.

    Only when `sys.stderr` is descriptor 2 itself; a captured stderr (a test runner, a notebook)
    never sees native writes anyway.
    """
    if not _is_descriptor_2(sys.stderr):
        yield
        return
    shown = sys.stderr
    shown.flush()
    real = os.dup(2)
    kept = io.TextIOWrapper(
        io.FileIO(real, "w", closefd=False), encoding=shown.encoding, errors=shown.errors, line_buffering=True
    )
    dumps_faults = faulthandler.is_enabled()
    silent = os.open(os.devnull, os.O_WRONLY)
    os.dup2(silent, 2)
    os.close(silent)
    sys.stderr = kept
    if dumps_faults:
        faulthandler.enable(file=kept)
    try:
        yield
    finally:
        kept.flush()
        os.dup2(real, 2)
        sys.stderr = shown
        if dumps_faults:
            faulthandler.enable(file=shown)
        kept.close()
        os.close(real)


def _is_descriptor_2(stream: object) -> bool:
    try:
        return stream.fileno() == 2  # type: ignore[attr-defined]  # any object: one without fileno is caught
    except (AttributeError, OSError, ValueError):
        return False
