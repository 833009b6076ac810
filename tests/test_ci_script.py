"""`.ci/run` fails when a README command fails, whichever step of it fails.

Each README command is a list `a && b && c`; under `set -e` bash stops such a list at a failing
step but goes on with the script (errexit spares every command of a list but the last), so a
failed install once left CI green with no test run. Here the script runs against stand-ins for
`python3`, `pip` and `pytest` (on PATH, in a scratch copy of the project) that fail on demand.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# `python3 -m venv .venv` makes an activate script that puts the stand-ins first on PATH again.
_PYTHON3 = """#!/usr/bin/env bash
mkdir -p .venv/bin && echo 'export PATH="$CI_FAKES:$PATH"' > .venv/bin/activate
"""
_TOOL = """#!/usr/bin/env bash
echo "{name} $*" >> "$CI_FAKES/calls"
[ "${{FAIL_{upper}:-}}" = "$(grep -c '^{name} ' "$CI_FAKES/calls")" ] && exit 7
exit 0
"""


def _run_ci(tmp_path: Path, **failures: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    project = tmp_path / "project"
    (project / ".ci").mkdir(parents=True)
    shutil.copy(REPO / ".ci" / "run", project / ".ci" / "run")
    fakes = tmp_path / "fakes"
    fakes.mkdir()
    scripts = {"python3": _PYTHON3, "chromium": "#!/usr/bin/env bash\n"}
    scripts |= {name: _TOOL.format(name=name, upper=name.upper()) for name in ("pip", "pytest")}
    for name, text in scripts.items():
        (fakes / name).write_text(text)
        (fakes / name).chmod(stat.S_IRWXU)
    env = {**os.environ, "PATH": f"{fakes}:{os.environ['PATH']}", "CI_FAKES": str(fakes), **failures}
    result = subprocess.run(
        ["bash", str(project / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    calls = (fakes / "calls").read_text().splitlines() if (fakes / "calls").exists() else []
    return result, calls


def test_both_commands_run_and_pass(tmp_path: Path) -> None:
    result, calls = _run_ci(tmp_path)
    assert result.returncode == 0, result.stderr
    assert [call.split()[0] for call in calls] == ["pip", "pytest", "pip", "pytest"]
    assert calls[3] == "pytest -m slow"
    assert "the slow-suite command took" in result.stderr


@pytest.mark.parametrize(
    ("failure", "what"),
    [
        ({"FAIL_PIP": "1"}, "the test command"),  # the install of the test command
        ({"FAIL_PYTEST": "1"}, "the test command"),
        ({"FAIL_PIP": "2"}, "the slow-suite command"),  # the install of the slow suite
        ({"FAIL_PYTEST": "2"}, "the slow-suite command"),
    ],
)
def test_a_failing_step_fails_the_run_and_stops_it(tmp_path: Path, failure: dict[str, str], what: str) -> None:
    result, calls = _run_ci(tmp_path, **failure)
    assert result.returncode == 7, (result.returncode, result.stderr)
    assert f"ci: {what} failed (exit 7)" in result.stderr
    if what == "the test command":
        assert "slow" not in " ".join(calls)  # the slow suite never ran
