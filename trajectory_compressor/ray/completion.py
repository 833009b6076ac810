"""What must hold before a Ray run's report says `completed`: its parts as recorded, every row once, no other writer.

The workers record each part they write (`parts`); a record is a promise the driver checks, not
trusts, before the report. Three checks, each of which once caught a run that said `completed`
with a wrong output: every part's bytes read back as recorded (`parts.check_parts`: a node
writing to its own disk), the rows the parts hold (`coverage`: a row lost or held twice), and
the output holding exactly the parts this run counted (`claim.own_parts_problem`: another run
writing the same output). The first that fails is the run's one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajectory_compressor.ray.claim import own_parts_problem
from trajectory_compressor.ray.coverage import coverage_problem
from trajectory_compressor.ray.layout import RayOutputLayout
from trajectory_compressor.ray.parts import PartRecord, check_parts
from trajectory_compressor.ray.read import limit_end
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import SelectConfig

RESUME = "re-run the same command to resume"


def completion_problem(
    layout: RayOutputLayout,
    records: Sequence[PartRecord],
    sources: Sequence[InputSource],
    counts: Sequence[int],
    select: SelectConfig,
    *,
    dataset: bool = True,
) -> tuple[dict[str, Any], str | None]:
    """The report's `files` section, and the line that keeps the run from `completed` (None: it completed).

    `records`: the parts this run wrote and those its resume kept; `counts`: each source's records;
    `dataset`: False for a dry run, which writes no dataset and leaves its folder as it found it.
    """
    files, problems = check_parts(layout, records)
    if problems:
        return files, (
            f"{len(problems)} part files are not as the workers recorded them where this driver reads them "
            f"(first: {problems[0]}); is -o on storage every node shares? re-run the same command to redo them"
        )
    end = limit_end(sum(counts), select)
    if missing := coverage_problem(records, end, select, sources, counts):
        return files, f"the parts do not hold every input row once, in order: {missing}; {RESUME}"
    if foreign := own_parts_problem(layout, records, dataset=dataset):
        return files, f"another writer changed the output while this run wrote it: {foreign}; {RESUME}"
    return files, None
