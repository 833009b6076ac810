"""An `hf-chat` output whose first rows hold no tools still loads with `datasets`, with the later rows' tools.

`datasets` fixes a column's type from the first block it reads (10 MB of JSON lines, or the first
file of several): a `tools` column that is null in every row of that block is typed `null`, and
a later block's text then stops the load (`Couldn't cast array of type string to null`). Found
on real runs: SWE-agent runs (no tool schemas) before tau-bench runs (schemas) in one 11 MB
output, and in two outputs (shards, or two sources) loaded together. So a record with no tools
has the JSON text of an empty list, which every recipe reads as no tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli, write_jsonl
from tests.write.agent_rows import AIRLINE_TOOLS, airline_row, swe_row
from trajectory_compressor.training import tools_of

BUDGET = ["--summarizer", "extractive", "--target-max-tokens", "8000", "-q"]


def _no_tools(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "tools"}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """hf-chat outputs: rows with no tools then rows with tools (one file), and each apart."""
    root = tmp_path_factory.mktemp("hf_chat_no_tools")
    inputs = {
        "mixed": [_no_tools(swe_row(padding)) for padding in range(6)] + [airline_row(task) for task in range(3)],
        "none": [_no_tools(swe_row(padding)) for padding in range(3)],
        "some": [airline_row(task) for task in range(3)],
    }
    written = {}
    for name, rows in inputs.items():
        source = write_jsonl(root / "in" / f"{name}.jsonl", rows)
        for suffix in ("jsonl", "parquet"):
            out = root / suffix / f"{name}.{suffix}"
            result = run_cli("compress", str(source), "-o", str(out), "--write-format", "hf-chat", *BUDGET)
            assert result.returncode == 0, result.stderr
            written[f"{name}.{suffix}"] = out
    return written


def test_one_output_whose_first_block_holds_no_tools_loads_whole(outputs: dict[str, Path], tmp_path: Path) -> None:
    import datasets

    # A block of a few rows stands for the 10 MB block of a large output.
    loaded = datasets.load_dataset(
        "json", data_files=str(outputs["mixed.jsonl"]), split="train", chunksize=4096, cache_dir=str(tmp_path)
    )
    assert len(loaded) == 9
    assert [tools_of(row) for row in loaded] == [None] * 6 + [AIRLINE_TOOLS] * 3


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_an_output_with_no_tools_loads_first_beside_one_with_tools(
    outputs: dict[str, Path], suffix: str, tmp_path: Path
) -> None:
    import datasets

    builder = "json" if suffix == "jsonl" else "parquet"
    files = [str(outputs[f"none.{suffix}"]), str(outputs[f"some.{suffix}"])]
    loaded = datasets.load_dataset(builder, data_files=files, split="train", cache_dir=str(tmp_path))
    assert loaded.column_names == ["messages", "tools", "metadata"]
    assert [tools_of(row) for row in loaded] == [None] * 3 + [AIRLINE_TOOLS] * 3
    # Every row's tools is text a trainer decodes: axolotl `json.loads` a string and refuses
    # anything but a list (`_get_tools`), so neither null nor "null" would do.
    assert all(isinstance(json.loads(row["tools"]), list) for row in loaded)
