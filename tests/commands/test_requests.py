"""`requests`: the batch input file is a plain new file (its mode from the umask, issue 20 F17).

What its lines hold is tested end to end with the batch round trip (`tests/cli/test_batch_files.py`).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import make_trajectory, run_cli, write_jsonl


def test_the_request_file_gets_the_mode_the_umask_gives(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=8) for i in range(3)])
    out = tmp_path / "requests.jsonl"
    previous = os.umask(0o027)
    try:
        result = run_cli("requests", str(source), "-o", str(out), "--model", "m", "--target-max-tokens", "1500")
    finally:
        os.umask(previous)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 0 and out.stat().st_mode & 0o777 == 0o640
