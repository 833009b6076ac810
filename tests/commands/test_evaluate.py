"""`eval` on one output, on several outputs of the same input (single rows, windows, LLM), and the
HTML pages in a real browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread
from trajectory_compressor.messages import quoted

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200"]
SECRET = "ghp_" + "Qw3rTy5uI7oP" * 3


def _rows() -> list[dict[str, Any]]:
    """Agent runs whose tool results name tickets the last answer quotes (anchors the kept turns
    need), with a credential in a middle tool turn (summarized, and shown in the example rows)."""
    rows = [make_trajectory(i, steps=3 + i % 6, output_lines=40) for i in range(10)]
    for row in rows:
        turns = row["conversations"]
        turns[4]["value"] = f"export GITHUB_TOKEN={SECRET}\n" + turns[4]["value"]
        for n, turn in enumerate(t for t in turns if t["from"] == "tool"):
            turn["value"] = turn["value"].replace("exit code: 0", f"exit code: 0, ticket TK{n}X{n * 7}")
        turns[-1]["value"] += " Tickets TK1X7 and TK2X14 are closed."
    return rows


def _compressed(tmp_path: Path, name: str, *extra: str) -> tuple[Path, Path]:
    source = tmp_path / "in.jsonl"
    if not source.exists():
        write_jsonl(source, _rows())
    out = tmp_path / name / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", "-q", *BUDGET, *extra)
    assert result.returncode == 0, result.stderr
    return source, out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same input compressed three ways: single/, short/ (a smaller summary), windows/."""
    root = tmp_path_factory.mktemp("eval")
    _compressed(root, "single")
    _compressed(root, "short", "--summary-target-tokens", "60")
    _compressed(root, "windows", "--windows")
    return root


def _eval(*args: str) -> dict[str, Any]:
    result = run_cli("eval", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _report(out: Path) -> dict[str, Any]:
    return json.loads((out.parent / "x.report.json").read_text())


def test_eval_scores_every_compressed_row_as_the_run_did(runs: Path) -> None:
    out, source = runs / "single" / "x.jsonl", runs / "in.jsonl"
    summary = _eval(str(out), "--input", str(source))["outputs"][0]
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    compressed = [m for m in metrics if m["was_compressed"]]
    assert summary["rows"] == 10 and summary["compressed"] == summary["scored"] == len(compressed) > 0
    scores = sorted(m["fidelity"]["score"] for m in compressed)
    assert summary["fidelity"]["min"] == scores[0] and sum(summary["fidelity"]["histogram"]) == len(scores)
    assert abs(summary["fidelity"]["mean"] - sum(scores) / len(scores)) < 1e-3
    assert list(summary["by_summarizer"]) == ["extractive"]
    # Future-grounded fidelity, recomputed from the files, is what the run measured.
    report = _report(out)
    future = summary["future"]
    assert (future["anchors"], future["kept"]) == (
        report["fidelity"]["future_anchors"],
        report["fidelity"]["future_kept"],
    )
    assert future["anchors"] > 0 and future["score"] == report["fidelity"]["future"]
    assert summary["compression"]["tokens_before"] == report["tokens"]["before"]
    assert summary["compression"]["tokens_after"] == report["tokens"]["after"] < report["tokens"]["before"]
    training = summary["training"]
    assert (training["gpt_turns"], training["trained"], training["from"]) == (
        report["training"]["gpt_turns"], report["training"]["gpt_turns_trained"], "metrics",
    )  # fmt: skip
    assert summary["cost"] == {"amount": 0.0, "currency": "USD", "requests": 0, "cache_hits": 0}
    worst = [entry["future"] for entry in summary["worst"] if entry["future"] is not None]
    futures = [m["fidelity"]["future"]["score"] for m in compressed if m["fidelity"]["future"]["score"] is not None]
    assert worst == sorted(worst) and worst[0] == min(futures)
    text = run_cli("eval", str(out), "--input", str(source))
    assert "future-grounded fidelity" in text.stdout and "worst rows:" in text.stdout
    assert SECRET not in text.stdout + json.dumps(summary)


def _copy_run(runs: Path, tmp_path: Path) -> Path:
    """A copy of the single-row run's output, metrics and report in a folder of its own."""
    folder = tmp_path / "copy"
    shutil.copytree(runs / "single", folder)
    return folder / "x.jsonl"


def test_an_output_whose_report_says_its_run_did_not_finish_is_scored_with_a_warning(
    runs: Path, tmp_path: Path
) -> None:
    """An interrupted run's figures were printed as a whole run's, with nothing to say they were not."""
    out, source = _copy_run(runs, tmp_path), runs / "in.jsonl"
    assert _eval(str(out), "--input", str(source))["outputs"][0]["problems"] == []
    report = out.parent / "x.report.json"
    report.write_text(json.dumps({"status": "interrupted", "outputs": {"work_dir": "w"}}))
    [summary] = _eval(str(out), "--input", str(source))["outputs"]
    assert summary["scored"] > 0
    assert summary["problems"] == [
        f"the report {quoted(report)} says interrupted, not completed: the run did not finish, so the output may not "
        "hold every row; re-run that run to resume it, then eval again"
    ]
    text = run_cli("eval", str(out), "--input", str(source))
    assert text.returncode == 0 and f"warning: the report {quoted(report)} says interrupted" in text.stdout


def test_a_ray_output_without_its_report_is_scored_as_unfinished(runs: Path, tmp_path: Path) -> None:
    """A Ray run writes its parts as it goes and its report at its end: a folder of parts with no
    report beside it is a run still going, or stopped, and `eval` says so beside its figures."""
    from trajectory_compressor.ray.layout import MARKER, MARKER_TEXT

    local, source = runs / "single" / "x.jsonl", runs / "in.jsonl"
    out = tmp_path / "ray" / "x.jsonl"
    (out).mkdir(parents=True)
    (out / MARKER).write_bytes(MARKER_TEXT)
    shutil.copy(local, out / "part-000000000000.jsonl")
    (tmp_path / "ray" / "x.metrics").mkdir()
    shutil.copy(local.parent / "x.metrics.jsonl", tmp_path / "ray" / "x.metrics" / "part-000000000000.jsonl")
    [summary] = _eval(str(out), "--input", str(source))["outputs"]
    expected = _eval(str(local), "--input", str(source))["outputs"][0]
    assert (summary["scored"], summary["future"]) == (expected["scored"], expected["future"])
    assert summary["problems"] == [
        f"no report beside {quoted(out)} ({quoted(tmp_path / 'ray' / 'x.report.json')}): the Ray run writing it has "
        "not finished, or stopped; these figures are of the parts written so far"
    ]


def test_a_windows_output_counts_each_row_once_and_judges_each_window(runs: Path) -> None:
    """A windows output: input tokens once per row (not once per window), written tokens over all
    windows, the rows split, and each window's own future (its turns after its summary)."""
    out = runs / "windows" / "x.jsonl"
    summary = _eval(str(out), "--input", str(runs / "in.jsonl"))["outputs"][0]
    report = _report(out)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert not any(m.get("elided_turns") for m in metrics)  # the windows are as the run judged them
    assert summary["rows"] == report["rows"]["selected"] == 10
    assert summary["windows"] == {
        "windows": report["windows"]["windows"],
        "rows_split": report["windows"]["rows_split"],
    }
    assert summary["windows"]["windows"] > summary["rows"]
    assert summary["compression"]["tokens_before"] == report["tokens"]["before"]
    assert summary["compression"]["tokens_after"] == report["tokens"]["after"]
    assert summary["compression"]["ratio"] == report["windows"]["tokens_written_per_input_token"] > 1
    assert summary["compressed"] == sum(m["was_compressed"] for m in metrics)
    assert summary["future"]["anchors"] == report["fidelity"]["future_anchors"] > 0
    assert summary["future"]["kept"] == report["fidelity"]["future_kept"]
    assert summary["training"]["trained"] == summary["training"]["gpt_turns"] == report["training"]["gpt_turns"]
    assert all(" window " in entry["row"] for entry in summary["worst"])
    assert {entry["window"] for entry in summary["worst"]} - {0}


def test_eval_puts_any_number_of_outputs_in_one_table(runs: Path) -> None:
    outputs = [runs / name / "x.jsonl" for name in ("single", "short", "windows")]
    data = _eval(*map(str, outputs), "--input", str(runs / "in.jsonl"), "--currency", "EUR")
    table = data["table"]
    assert [row["output"] for row in table] == [str(out) for out in outputs] == [o["output"] for o in data["outputs"]]
    for row, summary in zip(table, data["outputs"], strict=True):
        assert row["tokens_kept"] == summary["compression"]["ratio"]
        assert (row["gpt_turns"], row["gpt_turns_trained"]) == (
            summary["training"]["gpt_turns"], summary["training"]["trained"],
        )  # fmt: skip
        assert row["future_fidelity"] == summary["future"]["score"] is not None
        assert row["item_fidelity"] == summary["fidelity"]["mean"] and row["recall"] == summary["recall"]
        assert (row["cost"], row["currency"], row["requests"]) == (0.0, "EUR", 0)
    single, short, windows = table
    assert windows["trainable_share"] == 1.0 > single["trainable_share"]
    assert windows["tokens_kept"] > 1 > max(single["tokens_kept"], short["tokens_kept"])
    assert (
        windows["records"] == len(read_jsonl(runs / "windows" / "x.jsonl")) > windows["rows"] == single["records"] == 10
    )
    assert "comparison" not in data  # the row-by-row comparison is for two outputs
    text = run_cli("eval", *map(str, outputs), "--input", str(runs / "in.jsonl")).stdout.splitlines()
    assert text[0].split()[:3] == ["output", "records", "tokens"]
    assert [line.split()[:2] for line in text[1:4]] == [
        ["1", "single/x.jsonl"],
        ["2", "short/x.jsonl"],
        ["3", "windows/x.jsonl"],
    ]


@pytest.mark.parametrize("name", ["single", "windows"])
def test_trained_turns_of_older_metrics_are_counted_from_the_files(runs: Path, tmp_path: Path, name: str) -> None:
    """Metrics from before `gpt_turns` / `train_turns`: the gpt turns the output holds verbatim
    (a window's: those marked `"train": true`), counted from the files, are the same figures."""
    out = runs / name / "x.jsonl"
    expected = _eval(str(out), "--input", str(runs / "in.jsonl"))["outputs"][0]["training"]
    older = tmp_path / name
    shutil.copytree(out.parent, older)
    lines = read_jsonl(older / "x.metrics.jsonl")
    for line in lines:
        del line["gpt_turns"], line["train_turns"]
    write_jsonl(older / "x.metrics.jsonl", lines)
    counted = _eval(str(older / "x.jsonl"), "--input", str(runs / "in.jsonl"))["outputs"][0]["training"]
    assert counted == {**expected, "from": "files"} and expected["from"] == "metrics"
    assert 0 < counted["trained"] <= counted["gpt_turns"]


def test_eval_side_by_side_compares_row_by_row(runs: Path) -> None:
    first, second = runs / "single" / "x.jsonl", runs / "short" / "x.jsonl"
    data = _eval(str(first), str(second), "--input", str(runs / "in.jsonl"))
    comparison = data["comparison"]
    both = comparison["rows_in_both"]
    assert both > 0 and comparison["first_better"] + comparison["second_better"] + comparison["tied"] == both
    firsts = {m["index"]: m["fidelity"] for m in read_jsonl(first.parent / "x.metrics.jsonl") if m.get("fidelity")}
    seconds = {m["index"]: m["fidelity"] for m in read_jsonl(second.parent / "x.metrics.jsonl") if m.get("fidelity")}
    # Each column is that output's own score of the row, as its run measured it.
    assert [row["index"] for row in comparison["rows"]] == sorted(set(firsts) & set(seconds))
    for row in comparison["rows"]:
        assert (row["first"], row["second"]) == (firsts[row["index"]]["score"], seconds[row["index"]]["score"])
        assert row["difference"] == round(row["second"] - row["first"], 4)
        assert row["future_first"] == firsts[row["index"]]["future"]["score"]
    assert [o["output"] for o in data["outputs"]] == [str(first), str(second)]


def test_eval_errors_are_one_line(tmp_path: Path) -> None:
    source, out = _compressed(tmp_path, "a")
    (out.parent / "x.metrics.jsonl").unlink()
    result = run_cli("eval", str(out), "--input", str(source))
    assert result.returncode == 2 and "no metrics file" in result.stderr and "Traceback" not in result.stderr
    more = run_cli("eval", str(out), "--input", str(source), "--metrics", "a", "--metrics", "b")
    assert more.returncode == 2 and "once per OUTPUT" in more.stderr


def test_costs_come_from_each_runs_report_in_the_currency_given(tmp_path: Path) -> None:
    source, extractive = _compressed(tmp_path, "extractive")
    llm = tmp_path / "llm" / "x.jsonl"
    with FakeServerThread() as server:
        result = run_cli(
            "compress", str(source), "-o", str(llm), *BUDGET, "--summarizer", "llm", "--model", "m", "--no-cache",
            "--base-url", server.base_url, "--price-in", "3", "--price-out", "15", "-q",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    endpoint = _report(llm)["summaries"]["endpoint"]
    data = _eval(str(extractive), str(llm), "--input", str(source), "--currency", "EUR")
    free, paid = data["table"]
    assert (free["cost"], free["requests"]) == (0.0, 0)
    assert (paid["cost"], paid["currency"], paid["requests"]) == (endpoint["cost_usd"], "EUR", endpoint["requests"])
    assert paid["cost"] > 0 and paid["requests"] == len(server.requests)
    assert list(data["outputs"][1]["by_summarizer"]) == ["llm (m)"]
    text = run_cli("eval", str(extractive), str(llm), "--input", str(source), "--currency", "EUR").stdout
    assert f"{paid['cost']:,.4f} EUR" in text and "0 EUR" in text


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


# Measured in the page at 1200 px: every table within its card, and the example picker switching.
_PROBE_SCRIPT = """<script>
const sections = [...document.querySelectorAll("section")];
const overflow = [];
for (const section of sections) {
  const box = section.getBoundingClientRect();
  for (const element of section.querySelectorAll("table, svg, .turns, .cols, .picker")) {
    const right = element.getBoundingClientRect().right;
    if (right > box.right - 1) overflow.push(section.querySelector("h2").textContent + ": " + right);
  }
}
const shown = () => [...document.querySelectorAll(".picked")].map(e => getComputedStyle(e).display);
const before = shown();
const second = document.querySelector(".picker > label:nth-of-type(2)");
if (second) second.click();
const scroll = document.documentElement.scrollWidth;
const result = {width: window.innerWidth, overflow, before, after: shown(), scroll};
const out = document.createElement("pre"); out.id = "measured"; out.textContent = JSON.stringify(result);
document.body.appendChild(out);
</script>"""


def _measured(browser: str, page: Path, tmp_path: Path) -> dict[str, Any]:
    probe = tmp_path / f"measured-{page.name}"
    probe.write_text(page.read_text().replace("</body>", _PROBE_SCRIPT + "</body>"))
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,2400",
         "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    return json.loads(dom.split('<pre id="measured">', 1)[1].split("</pre>", 1)[0].replace("&quot;", '"'))


@pytest.mark.browser
@pytest.mark.skipif(_chromium() is None, reason="no headless browser installed (.ci/run installs chromium)")
def test_reports_render_in_a_real_browser(tmp_path: Path) -> None:
    # A deep absolute input path: the row labels are long, and must not stretch a table past its card.
    deep = tmp_path / ("a_rather_long_folder_name_for_the_trajectories_" * 2) / "of_one_team" / "runs"
    deep.mkdir(parents=True)
    source, out = _compressed(deep, "a", "--html-report", str(tmp_path / "compress.html"))
    _, second = _compressed(deep, "b", "--summary-target-tokens", "60")
    _, windows = _compressed(deep, "w", "--windows")
    page = tmp_path / "eval.html"
    evaluated = run_cli("eval", str(out), str(second), str(windows), "--input", str(source), "--html-report", str(page))
    assert evaluated.returncode == 0, evaluated.stderr
    browser = _chromium()
    assert browser is not None
    for html_file, sections in (
        (tmp_path / "compress.html", ["Summary fidelity", "Summaries by summarizer", "Why rows", "By input file",
                                      "Example rows"]),
        (page, ["Outputs compared", "Future-grounded fidelity", "Item recall", "Recall by kind", "By input file",
                "Summaries side by side", "Example rows", "Worst rows"]),
    ):  # fmt: skip
        raw = html_file.read_text()
        assert SECRET not in raw and "[REDACTED]" in raw  # the example rows had the token, masked
        common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        dom = subprocess.run(
            [*common, "--dump-dom", html_file.as_uri()], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        for heading in sections:
            assert f"<h2>{heading}" in dom, heading
        assert dom.count('class="bar"') >= 1  # the fidelity histogram has bars
        assert str(source) not in dom.replace(f'title="{source}', "")  # the long path only in titles
        measured = _measured(browser, html_file, tmp_path)
        assert measured["width"] == 1200 and measured["overflow"] == [] and measured["scroll"] <= 1200, measured
        assert measured["before"][:2] == ["block", "none"] and measured["after"][:2] == ["none", "block"], measured
        shot = tmp_path / (html_file.stem + ".png")
        subprocess.run(
            [*common, f"--screenshot={shot}", "--window-size=1200,2400", html_file.as_uri()],
            capture_output=True, timeout=120, check=True,
        )  # fmt: skip
        png = shot.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1200
        assert len(png) > 20_000  # a drawn page, not a blank one
    assert "0 USD" in page.read_text()  # costs carry their currency
