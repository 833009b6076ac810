"""Names in messages (issue 20 F20): a file name holding a newline kept splitting one-line warnings
and errors. Every message names files (and columns, config files) through `messages.quoted`.

The CLI cases use real files whose names hold a newline, through each command that names them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl
from trajectory_compressor.messages import quoted

SMALL = ["--summarizer", "extractive", "--target-max-tokens", "2500", "--summary-target-tokens", "200", "-q"]


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("in/a.jsonl", "in/a.jsonl"),
        ("runs/été-2024.jsonl", "runs/été-2024.jsonl"),
        ("my runs.jsonl", "'my runs.jsonl'"),
        ("bad\nname.jsonl", "'bad\\nname.jsonl'"),
        ("tab\there\r.jsonl", "'tab\\there\\r.jsonl'"),
        ("esc\x1b[31mred.jsonl", "'esc\\x1b[31mred.jsonl'"),
        ("it's \\ here", "'it\\'s \\\\ here'"),
        ("zero\u200bwidth", "'zero\\u200bwidth'"),
        ("lone\ud800", "'lone\\ud800'"),
        ("", "''"),
    ],
)
def test_quoted_keeps_plain_names_and_makes_any_other_one_unambiguous_line(name: str, shown: str) -> None:
    assert quoted(name) == shown
    assert quoted(Path(name)) == shown if name else True
    assert "\n" not in quoted(name) and "\r" not in quoted(name) and quoted(name).isprintable()


def _one_line_each(stderr: str, count: int) -> list[str]:
    lines = stderr.splitlines()
    assert len(lines) == count, stderr
    assert all(line.startswith(("error: ", "warning: ")) for line in lines), stderr
    return lines


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    """An input named with a newline: three good rows, then a line that is not JSON."""
    path = tmp_path / "bad\nname.jsonl"
    write_jsonl(path, [make_trajectory(i, steps=2) for i in range(3)] + ["{broken"])
    return path


def test_a_bad_record_warning_names_the_file_on_one_line(odd: Path, tmp_path: Path) -> None:
    result = run_cli("compress", str(odd), "-o", str(tmp_path / "out" / "x.jsonl"), *SMALL)
    assert result.returncode == 0, result.stderr
    (line,) = _one_line_each(result.stderr, 1)
    assert line.startswith(f"warning: {quoted(odd)}:4: invalid JSON")


def test_errors_naming_such_a_file_are_one_line(odd: Path, tmp_path: Path) -> None:
    onto_input = run_cli("compress", str(odd), "-o", str(odd), *SMALL)
    assert onto_input.returncode == 2
    (line,) = _one_line_each(onto_input.stderr, 1)
    assert f"would overwrite the input {quoted(odd)};" in line
    missing = tmp_path / "no\nsuch.jsonl"
    not_found = run_cli("compress", str(missing), "-o", str(tmp_path / "o.jsonl"), *SMALL)
    assert not_found.returncode == 2 and _one_line_each(not_found.stderr, 1) == [
        f"error: input not found: {quoted(missing)}"
    ]
    html = run_cli("analyze", str(odd), "--html-report", str(odd), "-q")
    assert html.returncode == 2 and quoted(odd) in _one_line_each(html.stderr, 1)[0]
    config = tmp_path / "c\n.yaml"
    config.write_text("compression: [unclosed")
    bad_config = run_cli("compress", str(odd), "-o", str(tmp_path / "o.jsonl"), "--config", str(config), *SMALL)
    assert bad_config.returncode == 2 and f"config {quoted(config)} is not valid YAML" in bad_config.stderr
    _one_line_each(bad_config.stderr, 1)


def test_eval_mismatch_and_run_summary_name_such_files_on_one_line(odd: Path, tmp_path: Path) -> None:
    out = tmp_path / "out\nx.jsonl"
    result = run_cli("compress", str(odd), "-o", str(out), *SMALL[:-1])  # not quiet: the summary lists the files
    assert result.returncode == 0, result.stderr
    assert f"data: {quoted(out)}" in result.stderr.splitlines()
    assert (
        f"metrics: {quoted(out.with_name(out.name.replace('.jsonl', '.metrics.jsonl')))}" in result.stderr.splitlines()
    )
    other = write_jsonl(tmp_path / "other\n.jsonl", [make_trajectory(i + 10, steps=2) for i in range(3)])
    mismatch = run_cli("eval", str(out), "--input", str(other))
    assert mismatch.returncode == 2
    (line,) = _one_line_each(mismatch.stderr, 1)
    assert f"the input {quoted(other)} is not the file the run read" in line


def test_the_column_type_note_quotes_column_names(tmp_path: Path) -> None:
    rows = [make_trajectory(0, extra={"task\nid": 0}), make_trajectory(1, extra={"task\nid": "a"})]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "x.parquet"
    result = run_cli("compress", str(source), "-o", str(out), *SMALL)
    assert result.returncode == 0, result.stderr
    (line,) = _one_line_each(result.stderr, 1)
    assert (
        line == f"warning: columns stored with another type in {out}: 'task\\nid' as text (numbers and strings mixed)"
    )
    assert json.dumps("task\nid") not in line
