"""`compress` on zstandard-compressed JSON Lines: a `.jsonl.zst` file, a folder of them mirrored into
an output folder, `--engine ray` and a `file://` URI, each writing what the plain `.jsonl` writes.

The reader is one module and one row of the format table (`read/jsonl_zst.py`, `read/readers.py`);
these runs show the rest followed from the table: the directory walk, the mirrored names
(`.jsonl.zst` -> `.jsonl`), the side files' names, Ray's listing, counting and reading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli
from tests.ray.conftest import json_lines, local_ray, ray_parts  # noqa: F401  (`local_ray`: a fixture)
from tests.read.test_jsonl_zst import zstd

EXTRACTIVE = ["--summarizer", "extractive", "-q"]
ROWS = 24


def _inputs(folder: Path) -> tuple[Path, Path]:
    """The same rows as `plain/a.jsonl` + `plain/sub/b.jsonl` and `packed/a.jsonl.zst` +
    `packed/sub/b.ndjson.zst` (two frames)."""
    rows = read_jsonl(SAMPLE)[:ROWS]
    data = [b"".join(json.dumps(row).encode() + b"\n" for row in part) for part in (rows[:10], rows[10:])]
    for root, names, pack in (
        ("plain", ("a.jsonl", "b.jsonl"), False),
        ("packed", ("a.jsonl.zst", "b.ndjson.zst"), True),
    ):
        (folder / root / "sub").mkdir(parents=True)
        (folder / root / names[0]).write_bytes(zstd(data[0], 2) if pack else data[0])
        (folder / root / "sub" / names[1]).write_bytes(zstd(data[1], 2) if pack else data[1])
    return folder / "plain", folder / "packed"


def _metrics(path: Path) -> list[dict[str, Any]]:
    return [{**line, "source": Path(line["source"]).name.split(".")[0]} for line in read_jsonl(path)]


def test_a_zst_file_and_a_folder_of_them_write_what_the_plain_files_write(tmp_path: Path) -> None:
    plain, packed = _inputs(tmp_path)
    for name, source in (("plain", plain / "a.jsonl"), ("packed", packed / "a.jsonl.zst")):
        result = run_cli("compress", str(source), "-o", str(tmp_path / "one" / name / "x.jsonl"), *EXTRACTIVE)
        assert result.returncode == 0, result.stderr
    one = tmp_path / "one"
    assert (one / "packed" / "x.jsonl").read_bytes() == (one / "plain" / "x.jsonl").read_bytes()
    assert _metrics(one / "packed" / "x.metrics.jsonl") == _metrics(one / "plain" / "x.metrics.jsonl")
    for name, source in (("plain", plain), ("packed", packed)):
        result = run_cli("compress", str(source), "-o", f"{tmp_path / 'mirror' / name}/", *EXTRACTIVE)
        assert result.returncode == 0, result.stderr
    mirror = tmp_path / "mirror"

    def written(root: Path) -> list[str]:
        return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())

    assert written(mirror / "packed") == written(mirror / "plain")  # the side files named alike
    assert {"a.jsonl", "a.metrics.jsonl", "sub/b.jsonl", "sub/b.report.json"} <= set(written(mirror / "packed"))
    for name in ("a.jsonl", "sub/b.jsonl"):
        assert (mirror / "packed" / name).read_bytes() == (mirror / "plain" / name).read_bytes(), name
    report = json.loads((mirror / "packed" / "sub" / "b.report.json").read_text())
    assert report["rows"] == json.loads((mirror / "plain" / "sub" / "b.report.json").read_text())["rows"]


def test_a_zst_file_whose_mirrored_name_is_taken_is_refused_in_one_line(tmp_path: Path) -> None:
    _, packed = _inputs(tmp_path)
    (packed / "a.jsonl").write_bytes((tmp_path / "plain" / "a.jsonl").read_bytes())  # a.jsonl and a.jsonl.zst
    result = run_cli("compress", str(packed), "-o", f"{tmp_path / 'out'}/", *EXTRACTIVE)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "a.jsonl" in result.stderr and not (tmp_path / "out").exists()


@pytest.mark.ray_runs
@pytest.mark.ray
def test_ray_reads_zst_files_and_a_file_uri_as_the_local_engine(local_ray: Any, tmp_path: Path) -> None:  # noqa: F811
    _, packed = _inputs(tmp_path)
    local = run_cli("compress", str(packed), "-o", str(tmp_path / "local" / "x.jsonl"), *EXTRACTIVE)
    assert local.returncode == 0, local.stderr
    expected = (tmp_path / "local" / "x.jsonl").read_bytes()
    local_metrics = [
        {**m, "source": Path(m["source"]).name} for m in read_jsonl(tmp_path / "local" / "x.metrics.jsonl")
    ]
    for name, source in (("ray", str(packed)), ("uri", f"file://{packed}")):
        out = tmp_path / name / "x.jsonl"
        result = run_cli("compress", source, "-o", str(out), *EXTRACTIVE, "--engine", "ray", "--num-workers", "2")
        assert result.returncode == 0, result.stderr
        assert ray_parts(out) == expected, name
        metrics = json_lines(ray_parts(tmp_path / name / "x.metrics"))
        assert [{**m, "source": Path(m["source"]).name} for m in metrics] == local_metrics, name
