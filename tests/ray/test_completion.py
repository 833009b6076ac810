"""`completion_problem`: the driver's checks before `completed`, in their order, each one line.

Parts written by hand as a write task leaves them (`tests/ray/test_parts.py`'s helper); no Ray.
The checks themselves are tested where they live (`test_parts.py`, `test_integrity.py`,
`test_claim.py`); here, that a run is `completed` only when all three hold, and which line wins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ray.test_parts import _part
from trajectory_compressor.ray.completion import completion_problem
from trajectory_compressor.ray.layout import RayOutputLayout
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import SelectConfig

pytestmark = pytest.mark.ray
SOURCES = [InputSource(name="a.jsonl", kind="jsonl", path="a.jsonl")]


def test_a_run_completes_only_when_its_parts_rows_and_output_are_all_as_counted(tmp_path: Path) -> None:
    layout = RayOutputLayout.beside(str(tmp_path / "x.jsonl"))
    records = [_part(layout, 0, [b'{"a": 1}', b'{"a": 2}']), _part(layout, 2, [b'{"a": 3}'])]
    files, problem = completion_problem(layout, records, SOURCES, [3], SelectConfig())
    assert problem is None and files["data"]["parts"] == 2 and files["data"]["lines"] == 3

    _, problem = completion_problem(layout, records, SOURCES, [4], SelectConfig())  # a row in no part
    assert problem == (
        "the parts do not hold every input row once, in order: row 3 (a.jsonl record 4) is in no part; "
        "re-run the same command to resume"
    )
    stray = _part(layout, 3, [b'{"a": 4}'])  # a part this run did not count: another writer's
    _, problem = completion_problem(layout, records, SOURCES, [3], SelectConfig())
    assert problem is not None and problem.startswith("another writer changed the output while this run wrote it: ")
    assert stray.name in problem

    (Path(layout.data) / "part-000000000002.jsonl").write_bytes(b'{"a": 9}\n')  # the bytes first, whatever else
    _, problem = completion_problem(layout, records, SOURCES, [4], SelectConfig())
    assert problem is not None and problem.startswith("1 part files are not as the workers recorded them")
