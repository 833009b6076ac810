"""Writing a Ray run: the dataset, metrics, over-limit and rejects as part files, the totals added up.

One Ray Data `Datasink` writes every output of a block of compressed rows, so the rows are
read from the object store once. Each write task names its parts by the first `row_index` of
its rows (`part-000000001234.jsonl`), so the parts sorted by name are the input order, whatever
the order the tasks ran in; a retried task writes the same names again (to a temporary name
first, then moved), so a row is never in two parts. Each task returns its rows' `RunTotals`
and its first bad records; the driver adds the totals up into the report (the same
`write.report` as the local engine) and names the run's first bad records on stderr.

    OUT/                   the dataset: part-*.jsonl (or part-*.parquet)
    <stem>.metrics/        part-*.jsonl, one metrics line per input row
    <stem>.over_limit/     part-*.jsonl, the rows still over the limit
    <stem>.rejects/        part-*.jsonl, the bad records
    <stem>.report.json     written by the driver once everything else is

A folder of an earlier run is emptied of that run's parts first, and of nothing else: a folder
holding files this tool did not write is refused (`layout`). A report is only written when
every part is, so an output without its report is not complete.
"""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
from ray.data.block import BlockAccessor
from ray.data.datasource import Datasink

from trajectory_compressor.ray.layout import RayOutputLayout, claim_output_folders, filesystem_of, part_stem
from trajectory_compressor.run.commit import REJECTS_SHOWN
from trajectory_compressor.types import RowMetrics
from trajectory_compressor.write.converters import convert_jsonl
from trajectory_compressor.write.report import RunTotals

SIDE_PARTS = ("metrics", "over_limit", "rejects")
ROWS_PER_PART = 512


class CompressedOutput(Datasink):
    """The Datasink of a Ray run's outputs (see the module docstring); `totals` once written."""

    def __init__(self, layout: RayOutputLayout, output_format: str = "jsonl") -> None:
        self.layout = layout
        self.output_format = output_format
        self.totals = RunTotals()
        self.first_rejects: list[dict[str, Any]] = []  # the reject lines of the run's first parts, in input order

    @property
    def min_rows_per_write(self) -> int:
        """Rows Ray gathers for one write task: fewer, larger parts (a task has a fixed cost)."""
        return ROWS_PER_PART

    def on_write_start(self, schema: Any = None) -> None:
        claim_output_folders(self.layout)  # only this tool's own parts are deleted (see `layout`)

    def write(self, blocks: Iterable[Any], ctx: Any) -> dict[str, Any]:
        tables = [BlockAccessor.for_block(block).to_arrow() for block in blocks]
        tables = [table for table in tables if table.num_rows]
        totals = RunTotals()
        if not tables:
            return {"first_row": -1, "totals": totals.to_dict(), "rejects": []}
        table = pa.concat_tables(tables)
        first_row = table.column("row_index")[0].as_py()
        name = part_stem(first_row)
        columns = {column: table.column(column).to_pylist() for column in ("record", "metrics", "over_limit", "reject")}
        records = [record for record in columns["record"] if record is not None]
        if records:
            if self.output_format == "parquet":
                self._write_parquet(name, records)
            else:
                self._write_lines(self.layout.data, f"{name}.jsonl", records)
        self._write_lines(self.layout.metrics, f"{name}.jsonl", columns["metrics"])
        sides = ((self.layout.over_limit, columns["over_limit"]), (self.layout.rejects, columns["reject"]))
        for folder, lines in sides:
            present = [line for line in lines if line is not None]
            if present:
                self._write_lines(folder, f"{name}.jsonl", present)
        for row_lines in columns["metrics"]:
            metrics = [RowMetrics(**orjson.loads(line)) for line in row_lines.split(b"\n")]
            if metrics[0].window is not None:  # --windows: one line per window of the row
                totals.add_windows(metrics)
            else:
                totals.add(metrics[0])
        # The driver names the first bad records of the run on stderr, as the local engine does.
        rejects = [orjson.loads(line) for line in columns["reject"] if line is not None][: REJECTS_SHOWN + 1]
        return {"first_row": first_row, "totals": totals.to_dict(), "rejects": rejects}

    def on_write_complete(self, write_result: Any) -> None:
        parts = sorted(write_result.write_returns, key=lambda part: part["first_row"])
        for part in parts:
            self.totals.merge(RunTotals.from_dict(part["totals"]))
            self.first_rejects.extend(part["rejects"])
        self.totals.rows_read = self.totals.rows_selected  # the driver sets what the inputs held

    def _write_lines(self, folder: str, name: str, lines: list[bytes]) -> None:
        self._write_bytes(folder, name, b"".join(line + b"\n" for line in lines))

    def _write_parquet(self, name: str, records: list[bytes]) -> None:
        """A part as the local engine writes a Parquet output (`write.converters`): a column whose
        rows disagree on its type (an id that is a string here, a list there) is stored as text
        or JSON text, where Arrow alone refused the whole part and the run stopped."""
        with tempfile.TemporaryDirectory(prefix="tc-part-") as scratch:
            lines, part = Path(scratch) / "part.jsonl", Path(scratch) / "part.parquet"
            lines.write_bytes(b"".join(record + b"\n" for record in records))
            convert_jsonl(lines, part, "parquet")
            self._write_bytes(self.layout.data, f"{name}.parquet", part.read_bytes())

    @staticmethod
    def _write_bytes(folder: str, name: str, data: bytes) -> None:
        """Write to a temporary name, then move: a part that exists is whole."""
        filesystem, path = filesystem_of(folder)
        final = posixpath.join(path, name)
        temporary = posixpath.join(path, f".{name}.tmp")
        with filesystem.open_output_stream(temporary) as stream:
            stream.write(data)
        filesystem.move(temporary, final)
