"""Writing a Ray run: the dataset, metrics, over-limit and rejects as part files, each part recorded.

One Ray Data `Datasink` writes every output of a block of compressed rows, so the rows are
read from the object store once. Each write task names its parts by the first `row_index` of
their rows (`part-000000001234.jsonl`), so the parts sorted by name are the input order, whatever
the order the tasks ran in; a retried task writes the same names again (to a temporary name
first, then moved), so a row is never in two parts. After a part's files, the task writes its
record (`parts`: each file's lines, bytes and sha256, the rows, their totals and first bad
records) and returns it; the driver checks every part against its record before the report says
`completed`, adds the totals up into the report (the same `write.report` as the local engine) and
names the run's first bad records on stderr.

    OUT/                    the dataset: part-*.jsonl (or part-*.parquet)
    <stem>.metrics/         part-*.jsonl, one metrics line per input row
    <stem>.over_limit/      part-*.jsonl, the rows still over the limit
    <stem>.rejects/         part-*.jsonl, the bad records
    <stem>.part_records/    part-*.json, the record of each part (what a resume keeps)
    <stem>.report.json      written by the driver once every part is checked

When a resume keeps parts, a task's rows are split where a kept part lies between them: a new
part holds rows of one gap between kept parts only, so the names still sort in input order.
A folder holding files this tool did not write is refused (`layout`). A report is only written
when every part is, so an output without its report is not complete.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
from ray.data.block import BlockAccessor
from ray.data.datasource import Datasink

from trajectory_compressor.ray.claim import check_owner
from trajectory_compressor.ray.layout import RayOutputLayout, delete_if_present, part_stem, write_whole
from trajectory_compressor.ray.parts import PartFile, PartRecord, row_runs, segment, write_record
from trajectory_compressor.run.commit import REJECTS_SHOWN
from trajectory_compressor.types import RowMetrics
from trajectory_compressor.write.converters import convert_jsonl
from trajectory_compressor.write.report import RunTotals

# Rows per part, the default: a run's comes from `TC_RAY_ROWS_PER_PART` (`environment`; a test sets
# fewer to get many parts from a small input).
ROWS_PER_PART = 512


class CompressedOutput(Datasink):
    """The Datasink of a Ray run's outputs (see the module docstring); `records` once written."""

    def __init__(
        self,
        layout: RayOutputLayout,
        output_format: str = "jsonl",
        *,
        fingerprint: str = "",
        kept_starts: tuple[int, ...] = (),
        json_lists: tuple[str, ...] = (),
        run_id: str = "",
        rows_per_part: int | None = None,
    ) -> None:
        self.layout = layout
        self.output_format = output_format
        self.json_lists = json_lists  # list columns stored as list<json> (hf-chat's messages), as locally
        self.fingerprint = fingerprint  # each record carries it: a resume keeps only this command's parts
        self.kept_starts = kept_starts  # first rows of the parts a resume kept: new parts never span one
        self.records: list[PartRecord] = []  # the parts this run wrote, in input order
        self.rows_per_part = rows_per_part or ROWS_PER_PART  # the run's `TC_RAY_ROWS_PER_PART`, read at its start
        self.run_id = run_id  # the run's claim (`claim`): a part is written only while the output is still its own

    @property
    def min_rows_per_write(self) -> int:
        """Rows Ray gathers for one write task: fewer, larger parts (a task has a fixed cost)."""
        return self.rows_per_part

    def write(self, blocks: Iterable[Any], ctx: Any) -> dict[str, Any]:
        tables = [BlockAccessor.for_block(block).to_arrow() for block in blocks]
        tables = [table for table in tables if table.num_rows]
        if not tables:
            return {"parts": []}
        table = pa.concat_tables(tables)
        indexes = table.column("row_index").to_pylist()
        records = []
        begin = 0
        for end in range(1, len(indexes) + 1):
            if end == len(indexes) or segment(self.kept_starts, indexes[end]) != segment(
                self.kept_starts, indexes[begin]
            ):
                records.append(self._write_part(table.slice(begin, end - begin)).to_dict())
                begin = end
        return {"parts": records}

    def _write_part(self, table: pa.Table) -> PartRecord:
        """One part's files, then its record (written last: a part without one is unfinished).

        Each only while the output's claim is still this run's: a worker of a run whose claim was
        taken over (a driver thought lost) stops, `ClaimLostError`, instead of replacing a part.
        """
        self._check_claim()
        indexes = table.column("row_index").to_pylist()
        name = part_stem(indexes[0])
        columns = {column: table.column(column).to_pylist() for column in ("record", "metrics", "over_limit", "reject")}
        files: dict[str, PartFile] = {}
        records = [record for record in columns["record"] if record is not None]
        if records:
            if self.output_format == "parquet":
                files["data"] = self._write_parquet(name, records)
            else:
                files["data"] = self._write_lines(self.layout.data, f"{name}.jsonl", records)
        files["metrics"] = self._write_lines(self.layout.metrics, f"{name}.jsonl", columns["metrics"])
        sides = (("over_limit", self.layout.over_limit, columns["over_limit"]),
                 ("rejects", self.layout.rejects, columns["reject"]))  # fmt: skip
        for output, folder, lines in sides:
            present = [line for line in lines if line is not None]
            if present:
                files[output] = self._write_lines(folder, f"{name}.jsonl", present)
            else:  # an earlier attempt of this task may have written one (its rows summarized again, differently)
                delete_if_present(folder, f"{name}.jsonl")
        totals = RunTotals()
        for row_lines in columns["metrics"]:
            metrics = [RowMetrics(**orjson.loads(line)) for line in row_lines.split(b"\n")]
            if metrics[0].window is not None:  # --windows: one line per window of the row
                totals.add_windows(metrics)
            else:
                totals.add(metrics[0])
        # The driver names the first bad records of the run on stderr, as the local engine does.
        rejects = [orjson.loads(line) for line in columns["reject"] if line is not None][: REJECTS_SHOWN + 1]
        record = PartRecord(
            indexes[0], row_runs(indexes), files, totals.to_dict(), tuple(rejects), self.fingerprint, self.run_id
        )
        self._check_claim()
        write_record(self.layout, record)
        return record

    def _check_claim(self) -> None:
        if self.run_id:  # `compress_dataset` in a user's pipeline writes through its own sink, unclaimed
            check_owner(self.layout, self.run_id)

    def on_write_complete(self, write_result: Any) -> None:
        parts = [PartRecord.from_dict(part) for task in write_result.write_returns for part in task["parts"]]
        self.records = sorted((part for part in parts if part is not None), key=lambda part: part.first_row)

    def _write_lines(self, folder: str, name: str, lines: list[bytes]) -> PartFile:
        data = b"".join(line + b"\n" for line in lines)
        write_whole(folder, name, data)
        return PartFile.of(name, data)

    def _write_parquet(self, name: str, records: list[bytes]) -> PartFile:
        """A part as the local engine writes a Parquet output (`write.converters`): a column whose
        rows disagree on its type (an id that is a string here, a list there) is stored as text
        or JSON text, where Arrow alone refused the whole part and the run stopped."""
        with tempfile.TemporaryDirectory(prefix="tc-part-") as scratch:
            lines, part = Path(scratch) / "part.jsonl", Path(scratch) / "part.parquet"
            lines.write_bytes(b"".join(record + b"\n" for record in records))
            convert_jsonl(lines, part, "parquet", json_lists=self.json_lists)
            data = part.read_bytes()
        write_whole(self.layout.data, f"{name}.parquet", data)
        return PartFile.of(f"{name}.parquet", data)
