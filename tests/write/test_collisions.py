"""The one output guard: every command that writes refuses an output that is a file it reads, or
another of its own outputs (symlinks followed), with one line and exit 2, touching nothing.

`compress`'s own cases are in `test_paths.py`; `merge` onto a shard's file in `test_merge.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl
from tests.write.test_paths import SMALL, _assert_one_line_error
from trajectory_compressor.write.collisions import NamedFile, refuse_overwrites
from trajectory_compressor.write.html_report import PAGE_MARK
from trajectory_compressor.write.run_files import OutputError

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An input and the compress run made from it (out/x.*), plus a symlink to the input."""
    root = tmp_path_factory.mktemp("collisions")
    source = write_jsonl(root / "in.jsonl", [make_trajectory(i, steps=2 + i % 5, output_lines=30) for i in range(8)])
    (root / "link.jsonl").symlink_to(source)
    result = run_cli("compress", str(source), "-o", str(root / "out" / "x.jsonl"), *SMALL)
    assert result.returncode == 0, result.stderr
    return root


def _untouched(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("target", "named"),
    [
        ("in.jsonl", "the input"),
        ("link.jsonl", "the input"),  # a symlink to the input is the input
        ("out/x.metrics.jsonl", "the metrics file"),
        ("out/x.jsonl", "the output"),
        ("out/x.report.json", "the report"),
    ],
)
def test_eval_html_report_onto_a_file_it_reads_is_refused(run: Path, target: str, named: str) -> None:
    before = _untouched(run)
    result = run_cli(
        "eval", str(run / "out" / "x.jsonl"), "--input", str(run / "in.jsonl"), "--html-report", str(run / target)
    )
    line = _assert_one_line_error(result, "the HTML report", "would overwrite", named)
    assert "choose another path" in line
    assert _untouched(run) == before


def test_eval_html_report_onto_a_given_metrics_file_is_refused(run: Path) -> None:
    metrics = run / "out" / "x.metrics.jsonl"
    before = _untouched(run)
    result = run_cli(
        "eval", str(run / "out" / "x.jsonl"), "--input", str(run / "in.jsonl"), "--metrics", str(metrics),
        "--html-report", str(metrics),
    )  # fmt: skip
    _assert_one_line_error(result, "would overwrite the metrics file")
    assert _untouched(run) == before


@pytest.mark.parametrize("target", ["in.jsonl", "link.jsonl"])
def test_analyze_html_report_onto_its_input_is_refused(run: Path, target: str) -> None:
    before = _untouched(run)
    result = run_cli("analyze", str(run / "in.jsonl"), "--html-report", str(run / target), *BUDGET, "-q")
    _assert_one_line_error(result, "the HTML report", "would overwrite the input")
    assert _untouched(run) == before


def test_requests_output_onto_its_input_through_a_symlink_is_refused(run: Path) -> None:
    before = _untouched(run)
    result = run_cli("requests", str(run / "in.jsonl"), "-o", str(run / "link.jsonl"), *BUDGET, "--model", "m")
    _assert_one_line_error(result, "would overwrite the input")
    assert _untouched(run) == before


def test_compress_output_onto_its_responses_file_is_refused(run: Path) -> None:
    responses = write_jsonl(run / "responses.jsonl", [])
    before = _untouched(run)
    result = run_cli(
        "compress", str(run / "in.jsonl"), "-o", str(responses), "--responses", str(responses),
        "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *BUDGET,
    )  # fmt: skip
    _assert_one_line_error(result, "would overwrite the responses file")
    assert _untouched(run) == before
    responses.unlink()


def test_the_guard_names_the_first_collision(tmp_path: Path) -> None:
    data = tmp_path / "d" / "x.jsonl"
    with pytest.raises(OutputError, match=r"^the HTML report .*x\.jsonl would overwrite the output .*x\.jsonl;"):
        refuse_overwrites([NamedFile("the output", data), NamedFile("the HTML report", data)])
    # A directory output (a datasets save_to_disk folder) holding a file read.
    with pytest.raises(OutputError, match=r"the output .* would overwrite the input .*in\.jsonl"):
        refuse_overwrites([NamedFile("the output", tmp_path)], [NamedFile("the input", tmp_path / "s" / "in.jsonl")])
    refuse_overwrites([NamedFile("the output", data)], [NamedFile("the input", tmp_path / "in.jsonl")])  # apart: fine


def test_ray_engine_report_onto_its_input_is_refused(run: Path) -> None:
    pytest.importorskip("ray")
    source = run / "ray" / "y.report.json"  # a JSON array input, named as the run's report would be
    source.parent.mkdir()
    source.write_text(json.dumps([make_trajectory(0, steps=2)]))
    before = _untouched(run)
    result = run_cli("compress", str(source), "-o", str(run / "ray" / "y.jsonl"), "--engine", "ray", *SMALL)
    _assert_one_line_error(result, "the report", "would overwrite the input")
    assert _untouched(run) == before


def test_compress_datasets_directory_holding_its_input_is_refused(tmp_path: Path) -> None:
    """An `hf` output directory is replaced whole: an input inside it would go with it."""
    folder = tmp_path / "data"
    source = write_jsonl(folder / "a.jsonl", [make_trajectory(0, steps=2)])
    result = run_cli("compress", str(source), "-o", str(folder), "--output-format", "hf", *SMALL)
    _assert_one_line_error(result, f"the output {folder}", f"would overwrite the input {source}")
    assert [p.name for p in folder.iterdir()] == ["a.jsonl"]


@pytest.mark.parametrize("command", ["analyze", "eval", "compress"])
@pytest.mark.parametrize("target", ["other/y.metrics.jsonl", "other/y.jsonl"])
def test_html_report_onto_data_a_command_does_not_read_is_refused(run: Path, command: str, target: str) -> None:
    """Another run's metrics or dataset is nobody's HTML page: refused, untouched (a folder is click's error)."""
    other = run / "other"
    other.mkdir(exist_ok=True)
    (other / "y.metrics.jsonl").write_text('{"row_index": 0}\n')
    (other / "y.jsonl").write_text('{"conversations": []}\n')
    before = _untouched(run)
    args = {
        "analyze": ["analyze", str(run / "in.jsonl"), *BUDGET, "-q"],
        "eval": ["eval", str(run / "out" / "x.jsonl"), "--input", str(run / "in.jsonl")],
        "compress": ["compress", str(run / "in.jsonl"), "-o", str(run / "out2" / "z.jsonl"), *SMALL],
    }[command]
    result = run_cli(*args, "--html-report", str(run / target))
    _assert_one_line_error(result, "the HTML report", "not a page of this tool", "choose another path")
    assert _untouched(run) == before


def test_html_report_replaces_an_older_page_and_an_empty_file(run: Path) -> None:
    """Re-running a command rewrites its page: an older page of ours (one written before pages
    carried their mark, known by its stylesheet) or an empty file is no data to keep."""
    page = run / "pages" / "analysis.html"
    page.parent.mkdir(exist_ok=True)
    first = run_cli("analyze", str(run / "in.jsonl"), *BUDGET, "-q", "--html-report", str(page))
    assert first.returncode == 0, first.stderr
    ours = page.read_text()
    before_the_mark = ours.replace(PAGE_MARK + "\n", "").replace("<h1>", "<h1>old ")
    for older in (ours.replace("<h1>", "<h1>old "), "\ufeff  " + before_the_mark, ""):
        page.write_text(older)
        result = run_cli("analyze", str(run / "in.jsonl"), *BUDGET, "-q", "--html-report", str(page))
        assert result.returncode == 0, result.stderr
        assert page.read_text() == ours


@pytest.mark.parametrize(
    "page",
    ["<!DOCTYPE html>\n<html><head><title>My site</title></head><body>hello</body></html>\n", "<html>old</html>"],
    ids=["a-site-index", "a-bare-page"],
)
def test_html_report_onto_an_html_page_this_tool_did_not_write_is_refused(run: Path, page: str) -> None:
    """A user's own `index.html` is data too: `--html-report index.html` by mistake must not
    replace it (pages of ours carry a mark; this one has none)."""
    target = run / "index.html"
    target.write_text(page)
    result = run_cli("analyze", str(run / "in.jsonl"), *BUDGET, "-q", "--html-report", str(target))
    _assert_one_line_error(result, "the HTML report", "not a page of this tool", "choose another path")
    assert target.read_text() == page


def test_the_page_guard_reads_only_the_start_of_a_file(tmp_path: Path) -> None:
    data = tmp_path / "big.jsonl"
    data.write_bytes(b'{"a": "' + b"<!DOCTYPE html>" * 10 + b'"}\n')
    with pytest.raises(OutputError, match="not a page of this tool"):
        refuse_overwrites([NamedFile("the HTML report", data, html_page=True)])
    refuse_overwrites([NamedFile("the HTML report", data)])  # the plain guard knows nothing of contents


def test_a_file_that_only_starts_blank_is_no_empty_file(tmp_path: Path) -> None:
    """Only the file's first 4 KB are read: one whose first 4 KB are blank lines, then data,
    was taken for an empty file and replaced by the page."""
    data = tmp_path / "notes.html"
    data.write_bytes(b"\n" * 8192 + b"my notes\n")
    with pytest.raises(OutputError, match="not a page of this tool"):
        refuse_overwrites([NamedFile("the HTML report", data, html_page=True)])
    blank = tmp_path / "blank.html"
    blank.write_bytes(b"\n  \n")
    refuse_overwrites([NamedFile("the HTML report", blank, html_page=True)])  # blank whole: replaced
