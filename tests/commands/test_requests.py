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


def test_a_file_is_ours_only_when_empty_or_its_first_line_is_one_of_our_request_lines(tmp_path: Path) -> None:
    from trajectory_compressor.commands.requests import is_requests_file

    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=8) for i in range(2)])
    ours = tmp_path / "ours.jsonl"
    made = run_cli("requests", str(source), "-o", str(ours), "--model", "m", "--target-max-tokens", "1500")
    assert made.returncode == 0, made.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"{not json\n")
    foreign = write_jsonl(tmp_path / "foreign.jsonl", [{"custom_id": "request-1", "body": {}}])
    assert is_requests_file(ours) and is_requests_file(empty)
    assert not is_requests_file(broken) and not is_requests_file(foreign)  # a custom_id not of our shape
    assert not is_requests_file(tmp_path / "missing.jsonl") and not is_requests_file(tmp_path)


def test_bad_records_and_rows_under_the_target_ask_nothing_and_are_said(tmp_path: Path) -> None:
    rows = [make_trajectory(0, steps=8), "{not json", make_trajectory(1, steps=1), make_trajectory(2, steps=8)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "requests.jsonl"
    result = run_cli("requests", str(source), "-o", str(out), "--model", "m", "--target-max-tokens", "1500")
    assert result.returncode == 0, result.stderr
    assert "in.jsonl:2" in result.stderr and "Traceback" not in result.stderr
    assert len(out.read_bytes().splitlines()) == 2  # the two long rows; the bad one and the short one ask nothing


def test_past_twenty_bad_records_the_rest_are_counted_not_named(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", ["{not json"] * 23 + [make_trajectory(0, steps=8)])
    out = tmp_path / "r.jsonl"
    result = run_cli("requests", str(source), "-o", str(out), "--model", "m", "--target-max-tokens", "1500")
    lines = result.stderr.splitlines()
    assert result.returncode == 0 and len(lines) == 22, result.stderr
    assert all(f"in.jsonl:{n}:" in lines[n - 1] for n in range(1, 21))
    assert lines[20] == "warning: 3 more bad records not named" and "(23 rejected" in lines[21]
