"""Every selected input row in exactly one part, in input order: checked on the driver before `completed`.

A part's record says which input rows it holds (`parts.PartRecord.rows`). The files of the
parts are checked against their records (`parts.check_parts`); this checks the records against
the input: the rows of the parts, sorted by name, must rise (no row in two parts, none out of
order) and together be the rows the run selected, every index below the selection's end
(`read.limit_end`), or with `--sample-percent` the sampled ones. A file that changed between
being counted and being read (`read.read_files` stops that run itself), a write lost without an
error, or any other way rows could go missing or twice, ends the run in one line naming the
first row concerned, by its input file and line, instead of a `completed` report.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.parts import PartRecord
from trajectory_compressor.read.select import sampled
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import SelectConfig


def where(index: int, sources: Sequence[InputSource], counts: Sequence[int]) -> str:
    """Row `index` of the input stream as its file and record number (1-based): `'a.jsonl' record 31`."""
    starts = [0]
    for count in counts:
        starts.append(starts[-1] + count)
    at = bisect.bisect_right(starts, index) - 1
    if 0 <= at < len(sources):
        return f"row {index} ({quoted(sources[at].name)} record {index - starts[at] + 1})"
    return f"row {index}"


def coverage_problem(
    records: Sequence[PartRecord],
    end: int,
    select: SelectConfig,
    sources: Sequence[InputSource],
    counts: Sequence[int],
) -> str | None:
    """What is wrong with the rows the parts hold (see the module docstring); None when nothing is."""
    every = select.sample_percent is None or select.sample_percent >= 100
    ordered = sorted(records, key=lambda part: part.first_row)
    previous = 0
    for record in ordered:  # first: no row twice, none out of order, none past the end
        if not record.rows or record.rows[0][0] != record.first_row:
            return f"the part {record.name} does not start at its own first row"
        for start, stop in record.rows:
            if start < previous:
                return f"{where(start, sources, counts)} is in two parts or out of input order (part {record.name})"
            if stop > end:
                return f"{where(stop - 1, sources, counts)} is past the rows the run read (part {record.name})"
            previous = stop
    if not every:
        return _sample_problem(ordered, end, select, sources, counts)
    previous = 0
    for start, stop in (run for record in ordered for run in record.rows):  # then: none missing
        if start > previous:
            return _missing(previous, start, sources, counts)
        previous = stop
    if previous < end:
        return _missing(previous, end, sources, counts)
    return None


def _sample_problem(
    ordered: Sequence[PartRecord], end: int, select: SelectConfig, sources: Sequence[InputSource], counts: Sequence[int]
) -> str | None:
    """With `--sample-percent`: the parts hold exactly the rows the sample takes below `end`, row
    by row (a count alone passed a part holding a row the sample skips in place of one it takes)."""
    percent, seed = float(select.sample_percent or 0), select.seed
    runs = [(start, stop, record.name) for record in ordered for start, stop in record.rows]
    position = 0
    for index in range(end):
        while position < len(runs) and runs[position][1] <= index:
            position += 1
        held = position < len(runs) and runs[position][0] <= index
        if held != sampled(index, percent, seed):
            if held:
                return (
                    f"{where(index, sources, counts)} is in part {runs[position][2]}, but the sample does not take it"
                )
            return f"{where(index, sources, counts)} is in no part"
    return None


def _missing(start: int, stop: int, sources: Sequence[InputSource], counts: Sequence[int]) -> str:
    more = stop - start - 1
    return f"{where(start, sources, counts)} is in no part" + (f", nor are the {more} rows after it" if more else "")
