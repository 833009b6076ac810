"""Output paths: collisions refused, unwritable places and full disks as one line, side-file names.

Every case runs the real command and expects exit 2 with one `error:` line (never a traceback
or an "internal error"), and the input left untouched.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl
from trajectory_compressor.write.paths import OutputPaths

SMALL = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "--summarizer", "extractive", "-q"]
SIDE_FILES = ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl")


def _input(folder: Path, name: str = "in.jsonl", rows: int = 12) -> Path:
    return write_jsonl(folder / name, [make_trajectory(i, steps=2 + i % 5, output_lines=30) for i in range(rows)])


def _assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "internal error" not in lines[0] and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "case",
    [
        "-o is the input",
        "-o is a symlink to the input",
        "--metrics is the input",
        "--metrics is -o",
        "--html-report is the input",
        "--html-report is -o",
        "--html-report is the metrics file",
        "the rejects file is the input",
        "the report is the input",
    ],
)
def test_outputs_colliding_with_inputs_or_each_other_are_refused(tmp_path: Path, case: str) -> None:
    source = _input(tmp_path, {"the rejects file is the input": "y.rejects.jsonl"}.get(case, "in.jsonl"))
    if case == "the report is the input":
        source = _input(tmp_path, "z.report.json")
    out = tmp_path / "out.jsonl"
    (tmp_path / "link.jsonl").symlink_to(source)
    args = {
        "-o is the input": ["-o", str(source)],
        "-o is a symlink to the input": ["-o", str(tmp_path / "link.jsonl")],
        "--metrics is the input": ["-o", str(out), "--metrics", str(source)],
        "--metrics is -o": ["-o", str(out), "--metrics", str(out)],
        "--html-report is the input": ["-o", str(out), "--html-report", str(source)],
        "--html-report is -o": ["-o", str(out), "--html-report", str(out)],
        "--html-report is the metrics file": ["-o", str(out), "--html-report", str(tmp_path / "out.metrics.jsonl")],
        "the rejects file is the input": ["-o", str(tmp_path / "y.jsonl")],
        "the report is the input": ["-o", str(tmp_path / "z.parquet")],
    }[case]
    before = source.read_bytes()
    result = run_cli("compress", str(source), *args, *SMALL)
    _assert_one_line_error(result, "would overwrite")
    assert source.read_bytes() == before
    assert not out.exists()


def test_two_inputs_mirrored_to_the_same_output_name_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    _input(folder, "a.jsonl")
    (folder / "a.json").write_text("[]")  # a JSON array input is written as a.jsonl too
    result = run_cli("compress", str(folder), "-o", str(tmp_path / "out") + "/", *SMALL)
    _assert_one_line_error(result, "would both be written to", "rename one")


@pytest.mark.parametrize("which", ["-o", "an input"])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """`-o ""` or an input `""` (an unset shell variable, `-o "$OUT"`) named the current folder: the
    run mirrored its inputs into it, or read every file below it."""
    source = _input(tmp_path / "in")
    monkeypatch.chdir(tmp_path)
    args = ["-o", "", str(source)] if which == "-o" else ["-o", str(tmp_path / "out.jsonl"), ""]
    _assert_one_line_error(run_cli("compress", *args, *SMALL), "empty path")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in"]


def test_an_unknown_output_suffix_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("compress", str(_input(tmp_path)), "-o", str(tmp_path / "out" / "x.csv"), *SMALL)
    _assert_one_line_error(result, "x.csv")


def test_an_output_folder_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    result = run_cli("compress", str(_input(tmp_path)), "-o", str(blocker / "x.jsonl"), *SMALL)
    _assert_one_line_error(result, "cannot write", "x.jsonl")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_folder_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = run_cli("compress", str(_input(tmp_path)), "-o", str(folder / "x.jsonl"), *SMALL)
    finally:
        folder.chmod(0o755)
    _assert_one_line_error(result, "cannot write")


def test_a_full_disk_is_one_line_and_the_run_resumes_after(tmp_path: Path) -> None:
    """The file-size limit (RLIMIT_FSIZE) stands in for a full disk: writes past it fail (EFBIG)."""
    source = _input(tmp_path, rows=120)
    reference = tmp_path / "ref" / "x.jsonl"
    assert run_cli("compress", str(source), "-o", str(reference), *SMALL).returncode == 0
    assert reference.stat().st_size > 300_000
    out = tmp_path / "out" / "x.jsonl"

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    command = [sys.executable, "-m", "trajectory_compressor", "compress", str(source), "-o", str(out), *SMALL]
    env = {**os.environ, "TC_CHECKPOINT_ROWS": "10", "TC_CHECKPOINT_SECONDS": "1e9"}
    full = subprocess.run(
        [*command, "--window", "4"], capture_output=True, text=True, env=env, preexec_fn=limit_file_size, check=False
    )
    _assert_one_line_error(full, "cannot write", "re-run the same command")
    assert not out.exists()
    resumed = run_cli("compress", str(source), "-o", str(out), *SMALL[:-1])  # not quiet: says "resuming"
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr
    for name in SIDE_FILES:
        assert (out.parent / name).read_bytes() == (reference.parent / name).read_bytes(), name


def test_analyze_html_report_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    result = run_cli("analyze", str(_input(tmp_path)), "--html-report", str(blocker / "r.html"), "-q")
    _assert_one_line_error(result, "r.html")


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".parquet"])
def test_side_files_are_named_from_the_stem_whatever_the_suffix(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / "out" / f"x{suffix}"
    result = run_cli("compress", str(_input(tmp_path)), "-o", str(out), *SMALL)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(
        [f"x{suffix}", "x.metrics.jsonl", "x.report.json", "x.over_limit.jsonl", "x.rejects.jsonl"]
    )


# -- never replace a file this tool did not write ----------------------------------------------


def _unrelated(path: Path, rows: int = 250) -> bytes:
    """Somebody's data at an output path: not an input, no run's report or work folder beside it."""
    write_jsonl(path, [{"id": f"theirs-{i}", "score": i} for i in range(rows)])
    return path.read_bytes()


def test_an_output_folder_holding_an_unrelated_file_of_the_output_name_is_refused(tmp_path: Path) -> None:
    """`-o somedir/` mirrors `in/agent_runs.jsonl` onto `somedir/agent_runs.jsonl`: somebody's file."""
    source = _input(tmp_path / "in", "agent_runs.jsonl", rows=3)
    theirs = _unrelated(tmp_path / "somedir" / "agent_runs.jsonl")
    refused = run_cli("compress", str(source), "-o", f"{tmp_path / 'somedir'}/", *SMALL)
    _assert_one_line_error(refused, "somedir/agent_runs.jsonl", "not written by this tool", "--overwrite")
    assert (tmp_path / "somedir" / "agent_runs.jsonl").read_bytes() == theirs
    assert sorted(p.name for p in (tmp_path / "somedir").iterdir()) == ["agent_runs.jsonl"]  # nothing beside it

    allowed = run_cli("compress", str(source), "-o", f"{tmp_path / 'somedir'}/", *SMALL, "--overwrite")
    assert allowed.returncode == 0, allowed.stderr
    again = run_cli("compress", str(source), "-o", f"{tmp_path / 'somedir'}/", *SMALL)  # now the run's own
    assert again.returncode == 0, again.stderr
    assert len((tmp_path / "somedir" / "agent_runs.jsonl").read_text().splitlines()) == 3


@pytest.mark.parametrize("name", ["x.jsonl", "x.metrics.jsonl", "x.report.json", "x.rejects.jsonl"])
def test_an_output_file_or_side_file_that_is_somebody_s_is_refused(tmp_path: Path, name: str) -> None:
    source = _input(tmp_path)
    theirs = _unrelated(tmp_path / "out" / name)
    refused = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"), *SMALL)
    _assert_one_line_error(refused, f"out/{name}", "--overwrite")
    assert (tmp_path / "out" / name).read_bytes() == theirs


def test_a_run_s_own_outputs_are_replaced_finished_or_interrupted(tmp_path: Path) -> None:
    """Known by the report beside them, or by the work folder an interrupted run leaves."""
    source, out = _input(tmp_path), tmp_path / "out" / "x.jsonl"
    assert run_cli("compress", str(source), "-o", str(out), *SMALL).returncode == 0
    assert run_cli("compress", str(source), "-o", str(out), *SMALL, "--target-max-tokens", "3000").returncode == 0
    (tmp_path / "out" / "x.report.json").unlink()
    (tmp_path / "out" / ".x.jsonl.work").mkdir()  # as an interrupted run leaves it
    result = run_cli("compress", str(source), "-o", str(out), *SMALL, "--no-resume")
    assert result.returncode == 0, result.stderr


def test_side_files_of_another_output_with_the_same_stem_are_refused(tmp_path: Path) -> None:
    """`x.parquet`'s run and `x.jsonl`'s share `x.metrics.jsonl` and `x.report.json`: the second
    run would replace the first's metrics and report, leaving `x.parquet` with none."""
    source = _input(tmp_path)
    assert run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.parquet"), *SMALL).returncode == 0
    metrics, report = (
        (tmp_path / "out" / "x.metrics.jsonl").read_bytes(),
        (tmp_path / "out" / "x.report.json").read_bytes(),
    )
    refused = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"), *SMALL)
    _assert_one_line_error(refused, "out/x.metrics.jsonl", "belongs to the run that wrote x.parquet", "--overwrite")
    assert (tmp_path / "out" / "x.metrics.jsonl").read_bytes() == metrics
    assert (tmp_path / "out" / "x.report.json").read_bytes() == report
    assert not (tmp_path / "out" / "x.jsonl").exists()
    again = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.parquet"), *SMALL)  # its own: replaced
    assert again.returncode == 0, again.stderr


def test_an_interrupted_run_s_side_files_are_its_own_and_no_other_output_s(tmp_path: Path) -> None:
    """An interrupted run's report names no dataset, only its work folder (`.x.jsonl.work`): it was
    taken for a dry run's, so an `x.parquet` run replaced it, and the `x.jsonl` run resumed over
    `x.parquet`'s files, its work folder vouching for them."""
    source = _input(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "x.metrics.jsonl").write_text('{"index": 0}\n')
    (out / "x.report.json").write_text(
        json.dumps({"status": "interrupted", "outputs": {"work_dir": str(out / ".x.jsonl.work")}})
    )
    report = (out / "x.report.json").read_bytes()
    refused = run_cli("compress", str(source), "-o", str(out / "x.parquet"), *SMALL)
    _assert_one_line_error(refused, "belongs to the run that wrote x.jsonl", "--overwrite")
    assert (out / "x.report.json").read_bytes() == report and not (out / "x.parquet").exists()
    resumed = run_cli("compress", str(source), "-o", str(out / "x.jsonl"), *SMALL)  # its own: goes on
    assert resumed.returncode == 0, resumed.stderr
    # Finished, its report names x.jsonl; with x.jsonl's work folder left behind, x.parquet's run is still refused.
    (out / ".x.jsonl.work").mkdir()
    again = run_cli("compress", str(source), "-o", str(out / "x.parquet"), *SMALL)
    _assert_one_line_error(again, "belongs to the run that wrote x.jsonl")


def test_a_metrics_path_of_its_own_is_replaced_only_where_the_report_lists_it(tmp_path: Path) -> None:
    source = _input(tmp_path)
    assert run_cli("compress", str(source), "-o", str(tmp_path / "a" / "y.jsonl"), *SMALL).returncode == 0
    theirs = _unrelated(tmp_path / "theirs.jsonl")
    refused = run_cli(
        "compress",
        str(source),
        "-o",
        str(tmp_path / "a" / "y.jsonl"),
        "--metrics",
        str(tmp_path / "theirs.jsonl"),
        *SMALL,
    )
    _assert_one_line_error(refused, "theirs.jsonl", "is not this output's", "--overwrite")
    assert (tmp_path / "theirs.jsonl").read_bytes() == theirs
    again = run_cli("compress", str(source), "-o", str(tmp_path / "a" / "y.jsonl"), *SMALL)  # as listed: replaced
    assert again.returncode == 0, again.stderr


def test_html_report_with_an_output_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    source = _input(tmp_path / "in")
    refused = run_cli("compress", str(source), "-o", f"{tmp_path / 'out'}/", "--html-report", str(tmp_path / "r.html"))
    _assert_one_line_error(refused, "--html-report needs an output file", "one run per input file")
    assert not (tmp_path / "out").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("data", ["x.jsonl", "x.work", ".hidden.parquet", "runs.v2.jsonl.gz"])
def test_a_work_folder_names_its_dataset_back(tmp_path: Path, data: str) -> None:
    """A report of an interrupted run names only its work folder; the dataset is read back from it."""
    work_dir = OutputPaths.beside(tmp_path / data).work_dir
    assert OutputPaths.dataset_of_work_dir(work_dir) == data
    for other in ("x.jsonl.work", ".work", "..work", ".x.jsonl"):
        assert OutputPaths.dataset_of_work_dir(tmp_path / other) is None
