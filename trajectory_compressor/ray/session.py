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
  warnings about its plan; and a thread of the driver prints the cluster's error messages
  (`The node with node id ... has been marked dead`, `(raylet) ...`) to **stdout**, whatever
  `log_to_driver` says. So from before `ray.init` until Ray is shut down (`ray_console`),
  descriptor 1 points at descriptor 2: stdout is left to `--json`'s one object, printed after.
  With `-q`: loggers at ERROR, no forwarding, Ray's warnings ignored, and descriptors 1 and 2
  point at /dev/null, with Python's `sys.stderr` (this tool's lines, tracebacks) and
  faulthandler kept on the real stderr. The native lines hidden are still in Ray's own log
  (`<temp dir>/session_latest/logs/python-core-driver-*`).
* **Shutting down.** A Ray this run started is shut down at its end, inside that console, and
  the wait is bounded (`SHUTDOWN_SECONDS`): after a lost node, Ray's shutdown can wait on the
  dead node's processes.
"""

from __future__ import annotations

import atexit
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

SHUTDOWN_SECONDS = 30


def start_ray(config: RunConfig) -> bool:
    """Join `--ray-address`, or start a local Ray, unless this process already did; keep the caller's SIGTERM.

    True when this call connected: the run then shuts Ray down at its end (`stop_ray`).
    """
    import ray

    level = logging.ERROR if config.quiet else logging.INFO
    logging.getLogger("ray.data").setLevel(level)  # -q: no lines about each Dataset's execution
    if config.quiet:
        logging.getLogger("ray").setLevel(logging.ERROR)
    if ray.is_initialized():
        return False
    log_to_driver = not config.quiet
    with _keeping_sigterm():
        if config.ray_address:
            ray.init(address=config.ray_address, logging_level=level, log_to_driver=log_to_driver)
        elif os.environ.get("RAY_ADDRESS"):  # inside `ray job submit`: the job's cluster
            ray.init(logging_level=level, log_to_driver=log_to_driver)
        else:  # a local Ray for this run only
            ray.init(include_dashboard=False, logging_level=level, log_to_driver=log_to_driver)
    return True


def stop_ray(seconds: float = SHUTDOWN_SECONDS) -> bool:
    """`ray.shutdown()`, waited on for `seconds` at most; False when it did not finish (it goes on
    on a daemon thread, and the process can still exit)."""
    import ray

    done = threading.Event()

    def shutdown() -> None:
        with contextlib.suppress(Exception):
            ray.shutdown()
        done.set()

    threading.Thread(target=shutdown, name="tc-ray-shutdown", daemon=True).start()
    if done.wait(seconds):
        return True
    atexit.unregister(ray.shutdown)  # Ray's own shutdown at exit would wait on the same thing: the process exits
    return False


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
def ray_console(quiet: bool) -> Iterator[None]:
    """While Ray runs in this process: nothing of Ray's own on stdout (it goes to stderr), and
    with `quiet` nothing of it on the console at all (see the module docstring)."""
    import ray  # noqa: F401  # imported before stderr is swapped: its loggers' handlers hold the real one

    with _stdout_to(os.devnull if quiet else None):
        if not quiet:
            yield
            return
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"ray(\.|$)")
            with _native_stderr_silenced():
                yield


@contextlib.contextmanager
def _stdout_to(path: str | None) -> Iterator[None]:
    """Descriptor 1 points at `path` (None: descriptor 2) during the block, when it is the process's
    stdout (a captured `sys.stdout`, in a test runner, never sees Ray's writes anyway)."""
    if not _is_descriptor(sys.stdout, 1):
        yield
        return
    sys.stdout.flush()
    real = os.dup(1)
    if path is None:
        os.dup2(2, 1)
    else:
        target = os.open(path, os.O_WRONLY)
        os.dup2(target, 1)
        os.close(target)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(real, 1)
        os.close(real)


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """Native writes to descriptor 2 (Ray's C++ log lines) go to /dev/null during the block.

    Only when `sys.stderr` is descriptor 2 itself; a captured stderr (a test runner, a notebook)
    never sees native writes anyway.
    """
    if not _is_descriptor(sys.stderr, 2):
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


def _is_descriptor(stream: object, descriptor: int) -> bool:
    try:
        return stream.fileno() == descriptor  # type: ignore[attr-defined]  # any object: one without fileno is caught
    except (AttributeError, OSError, ValueError):
        return False
