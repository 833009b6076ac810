"""Attacks on the promises of issue 10 that the other suites did not try.

Each test names the promise it holds the tool to (README sections "Long runs" and "Bad input").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, write_jsonl


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    command = [sys.executable, "-m", "trajectory_compressor", "compress", *args, "--summarizer", "extractive", "-q"]
    return subprocess.run(command, capture_output=True, text=True, env=full_env, cwd=cwd, check=False)


def test_output_directory_inside_the_input_directory_is_finished_after_a_kill_while_moving(tmp_path: Path) -> None:
    """`compress d -o d/out/`, killed between moving the dataset and its metrics into place: the
    same command must finish the run (README: "a run killed while moving files is finished by the
    next run of the same command"). The moved dataset used to be read back as an input, so the
    re-run refused with "would overwrite the input" (exit 2) forever; a plain re-run of a
    completed run did the same."""
    data = tmp_path / "d"
    data.mkdir()
    source = write_jsonl(data / "in.jsonl", [make_trajectory(i, steps=2) for i in range(5)])
    args = (str(data), "-o", str(data / "out") + "/")
    killed = _cli(*args, env={"TC_CRASH_AT": "finalize-move:2"})
    assert killed.returncode == -9, killed.stderr
    assert (data / "out" / "in.jsonl").exists()
    again = _cli(*args)
    assert again.returncode == 0, again.stderr
    assert (data / "out" / "in.jsonl").read_bytes() == source.read_bytes()
    assert len((data / "out" / "in.metrics.jsonl").read_text(encoding="utf-8").splitlines()) == 5
    assert not (data / "out" / "out").exists()
    rerun = _cli(*args)
    assert rerun.returncode == 0, rerun.stderr


def test_output_file_inside_the_input_directory_is_not_read_back_on_a_re_run(tmp_path: Path) -> None:
    """`compress d -o d/x.jsonl` twice: the second run must not take `d/x.jsonl` as an input."""
    data = tmp_path / "d"
    data.mkdir()
    write_jsonl(data / "in.jsonl", [make_trajectory(i, steps=2) for i in range(3)])
    args = (str(data), "-o", str(data / "x.jsonl"))
    assert _cli(*args).returncode == 0
    second = _cli(*args)
    assert second.returncode == 0, second.stderr
    assert len((data / "x.jsonl").read_text(encoding="utf-8").splitlines()) == 3


def test_a_second_run_sharing_only_side_files_is_refused(tmp_path: Path) -> None:
    """`-o out/x.jsonl` running while `-o out/x.parquet` starts: both write `out/x.metrics.jsonl`
    and `out/x.report.json` (side files are named from the stem). The second used to run to the
    end (exit 0) and overwrite the first's metrics and report; it must exit 2 with one line
    (README: "One run per output")."""
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=2) for i in range(5)])
    out = tmp_path / "out"
    pause = tmp_path / "pause"
    env = {"TC_PAUSE_AT": "checkpoint-write:1", "TC_PAUSE_FILE": str(pause)}
    command = [sys.executable, "-m", "trajectory_compressor", "compress", str(source), "-o", str(out / "x.jsonl")]
    first = subprocess.Popen(
        [*command, "--summarizer", "extractive", "-q"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not pause.exists():  # held at its first checkpoint, lock taken
            if first.poll() is not None:
                raise AssertionError(first.communicate())
            time.sleep(0.01)
        second = _cli(str(source), "-o", str(out / "x.parquet"), "--target-max-tokens", "900")
        custom = _cli(str(source), "-o", str(out / "y.jsonl"), "--metrics", str(out / "x.metrics.jsonl"))
    finally:
        pause.with_name(pause.name + ".release").touch()
        first.communicate()
    assert first.returncode == 0
    for other in (second, custom):
        assert other.returncode == 2, other.stderr
        lines = other.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: another run is writing"), other.stderr
    assert not (out / "x.parquet").exists()
    assert not list(out.glob(".*.lock"))


def test_resume_after_a_same_size_edit_of_the_input_is_refused(tmp_path: Path) -> None:
    """README: "changed settings or inputs are refused with a clear message"."""
    source, out = _killed_after_two_checkpoints(tmp_path)
    stat = source.stat()
    text = source.read_text(encoding="utf-8")
    edited = text.replace('"row-0000"', '"row-X000"', 1)
    assert edited != text and len(edited) == len(text)
    source.write_text(edited, encoding="utf-8")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = _cli(str(source), "-o", str(out), "--window", "1", env={"TC_CHECKPOINT_ROWS": "5"})
    assert again.returncode == 2 or out.read_bytes() == source.read_bytes(), again.stderr


def test_resume_after_the_input_is_touched_with_the_same_bytes(tmp_path: Path) -> None:
    """A file copied or checked out again (a new modification time, the same bytes) resumes: the
    content hash, not the time, says whether the input changed."""
    source, out = _killed_after_two_checkpoints(tmp_path)
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    again = _cli(str(source), "-o", str(out), "--window", "1", env={"TC_CHECKPOINT_ROWS": "5"})
    assert again.returncode == 0, again.stderr  # was exit 2: "holds an unfinished run with other inputs"
    assert out.read_bytes() == source.read_bytes()


def _killed_after_two_checkpoints(tmp_path: Path) -> tuple[Path, Path]:
    """An input of 30 rows and the output of a run of it killed after its second checkpoint."""
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=2) for i in range(30)])
    out = tmp_path / "x.jsonl"
    env = {"TC_CRASH_AT": "checkpoint-renamed:2", "TC_CHECKPOINT_ROWS": "5"}
    assert _cli(str(source), "-o", str(out), "--window", "1", env=env).returncode == -9
    return source, out


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_a_yaml_key_given_twice_is_one_line_naming_it(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=1)])
    config = tmp_path / "c.yaml"
    config.write_text("compression:\n  target_max_tokens: 100\n  target_max_tokens: 9000\n", encoding="utf-8")
    line = _one_error_line(_cli(str(source), "-o", str(tmp_path / "x.jsonl"), "--config", str(config)))
    assert "target_max_tokens' is given twice" in line and "line 3" in line


def test_yaml_merge_keys_may_be_overridden(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=1)])
    config = tmp_path / "c.yaml"
    config.write_text(
        "protected_turns: &base {first_system: true, last_n_turns: 2}\ncompression:\n  target_max_tokens: 9000\n",
        encoding="utf-8",
    )
    assert _cli(str(source), "-o", str(tmp_path / "x.jsonl"), "--config", str(config)).returncode == 0


def test_zero_shards_names_num_shards(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=1)])
    line = _one_error_line(_cli(str(source), "-o", str(tmp_path / "x.jsonl"), "--num-shards", "0"))
    assert "--num-shards" in line and "must be >= 1" in line


def test_two_inputs_mirrored_onto_one_output_name_are_both_named(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    write_jsonl(folder / "a.jsonl", [make_trajectory(0, steps=1)])
    (folder / "a.json").write_text("[" + __import__("json").dumps(make_trajectory(1, steps=1)) + "]", encoding="utf-8")
    line = _one_error_line(_cli(str(folder), "-o", str(tmp_path / "out") + "/"))
    assert "a.json and" in line and "a.jsonl " in line and "rename one" in line, line


def test_same_named_files_from_two_folders_into_a_folder_output_are_told_what_works(tmp_path: Path) -> None:
    """`a/x.jsonl b/x.jsonl -o out/`: one line naming both, and the two ways that work (their
    common folder named, whose files keep their paths; or one file), each of which then runs."""
    for i, folder in enumerate(("a", "b")):
        write_jsonl(tmp_path / "in" / folder / "x.jsonl", [make_trajectory(i, steps=1)])
    first, second = tmp_path / "in" / "a" / "x.jsonl", tmp_path / "in" / "b" / "x.jsonl"
    line = _one_error_line(_cli(str(first), str(second), "-o", f"{tmp_path / 'out'}/"))
    assert f"{first} and {second} would both be written to {tmp_path / 'out' / 'x.jsonl'}" in line, line
    assert "name a folder holding both" in line and f"-o {tmp_path / 'out' / 'all.jsonl'}" in line, line
    assert not (tmp_path / "out").exists()
    assert _cli(str(tmp_path / "in"), "-o", f"{tmp_path / 'out'}/").returncode == 0
    assert (tmp_path / "out" / "a" / "x.jsonl").exists() and (tmp_path / "out" / "b" / "x.jsonl").exists()
    assert _cli(str(first), str(second), "-o", str(tmp_path / "all.jsonl")).returncode == 0


def test_a_compressed_row_keeps_nan_infinity_and_huge_integers_in_its_other_keys(tmp_path: Path) -> None:
    import json

    row = make_trajectory(0, steps=30, output_lines=80)
    line = json.dumps(row)[:-1] + ', "score": NaN, "worst": -Infinity, "seed": 123456789012345678901234567890}'
    source = write_jsonl(tmp_path / "in.jsonl", [line])
    out = tmp_path / "x.jsonl"
    args = ("--target-max-tokens", "3000", "--summary-target-tokens", "200", "--summarizer", "extractive")
    assert _cli(str(source), "-o", str(out), *args).returncode == 0
    [written] = out.read_text(encoding="utf-8").splitlines()
    record = json.loads(written)
    assert record["conversations"] != row["conversations"], "the row must have been rewritten"
    assert written.endswith(',"score":NaN,"worst":-Infinity,"seed":123456789012345678901234567890}')


@pytest.mark.parametrize(
    "number",
    [
        "-9223372036854775809",  # 19 digits, one below int64: orjson reads it as a float, silently
        "18446744073709551616",  # 2**64
        pytest.param("-18446744073709551616", marks=pytest.mark.variants),
        # nested: the record's only float, once orjson read it
        pytest.param('[1,{"n":18446744073709551616}]', marks=pytest.mark.variants),
    ],
)
def test_a_compressed_row_keeps_an_integer_beyond_64_bits_alone(tmp_path: Path, number: str) -> None:
    import json

    row = make_trajectory(0, steps=30, output_lines=80)
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(row)[:-1] + f', "seed": {number}}}'])
    out = tmp_path / "x.jsonl"
    args = ("--target-max-tokens", "3000", "--summary-target-tokens", "200", "--summarizer", "extractive")
    assert _cli(str(source), "-o", str(out), *args).returncode == 0
    [written] = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(written)["conversations"] != row["conversations"], "the row must have been rewritten"
    assert written.endswith(f',"seed":{number}}}')


def test_an_empty_json_file_is_zero_rows_not_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text(" \n", encoding="utf-8")
    other = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=1)])
    result = _cli(str(empty), str(other), "-o", str(tmp_path / "x.jsonl"))
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    assert len((tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()) == 1
