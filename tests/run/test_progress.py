"""The progress bar appears only on a terminal, and never with -q (README, "Exit codes").

The CLI runs with its stderr on a pseudo-terminal (Python's `pty`), as in an interactive shell,
and with its stderr on a pipe, as in a job log: the bar (tqdm's ``compress: N rows [...]``)
must be drawn in the first case only.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl

BAR = re.compile(r"compress: +\d+rows \[")
ARGS = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "--summarizer", "extractive"]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = [make_trajectory(i, steps=2 + i) for i in range(6)]
    return write_jsonl(tmp_path_factory.mktemp("progress") / "in.jsonl", rows)


def run_on_a_terminal(*args: str) -> tuple[int, str]:
    """Run the CLI with stderr on a pty; returns the exit code and everything the terminal got."""
    master, slave = pty.openpty()
    # A real terminal has a size; a fresh pty has 0 columns, where tqdm draws nothing.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO once the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "trajectory_compressor", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=slave,
        )
        os.close(slave)
        code = process.wait(timeout=300)
        reader.join(timeout=30)
    finally:
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_the_bar_is_drawn_on_a_terminal(source: Path, tmp_path: Path) -> None:
    code, terminal = run_on_a_terminal("compress", str(source), "-o", str(tmp_path / "x.jsonl"), *ARGS)
    assert code == 0, terminal
    assert BAR.search(terminal), terminal
    assert re.search(r"compress: +6rows \[", terminal), "the bar ends at the number of rows processed"


def test_no_bar_on_a_terminal_with_quiet(source: Path, tmp_path: Path) -> None:
    code, terminal = run_on_a_terminal("compress", str(source), "-o", str(tmp_path / "x.jsonl"), *ARGS, "-q")
    assert code == 0, terminal
    assert not BAR.search(terminal) and "rows [" not in terminal and "\r" not in terminal, terminal


def test_no_bar_when_stderr_is_a_pipe(source: Path, tmp_path: Path) -> None:
    result = run_cli("compress", str(source), "-o", str(tmp_path / "x.jsonl"), *ARGS)
    assert result.returncode == 0, result.stderr
    assert not BAR.search(result.stderr) and "rows [" not in result.stderr and "\r" not in result.stderr
    assert "status: completed" in result.stderr, "the end-of-run summary still goes to stderr"
