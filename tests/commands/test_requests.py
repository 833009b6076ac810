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


def test_the_request_file_never_replaces_a_file_this_tool_did_not_write(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=8) for i in range(3)])
    out = tmp_path / "requests.jsonl"
    theirs = write_jsonl(out, [{"id": f"theirs-{i}", "score": i} for i in range(250)]).read_bytes()
    args = ["requests", str(source), "-o", str(out), "--model", "m", "--target-max-tokens", "1500"]

    refused = run_cli(*args)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "requests.jsonl" in lines[0] and "not written by this tool" in lines[0], lines
    assert "--overwrite" in lines[0] and "Traceback" not in refused.stderr
    assert out.read_bytes() == theirs

    allowed = run_cli(*args, "--overwrite")
    assert allowed.returncode == 0, allowed.stderr
    assert out.read_bytes() != theirs
    again = run_cli(*args, "--target-max-tokens", "2000")  # a batch file of ours is replaced as before
    assert again.returncode == 0, again.stderr
