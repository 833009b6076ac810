"""Do an output, its metrics and `--input` belong together? `eval` checks before it trusts them.

`eval` scores a summary by lining up three files: the metrics line says which input row it is
and which turns were replaced, the output row holds the summary, the input row the turns. Given
another run's input or metrics, or an output cut short, it would score garbage. So the three are
walked together, and the first disagreement is an error (exit 2) naming the file and the row:

- every metrics line names an input row (`index`) that exists, at the `line` and with the `id`
  it records, with `original_turns` turns;
- every metrics line marked written has its output row, in order, with `compressed_turns` turns,
  and the output has no rows beyond them;
- with the run's report beside the output: the inputs are the files it read (size and sha256),
  and the row counts are the ones it recorded (rows read, selected, written).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.layout import RayOutputLayout, is_ray_output_folder, part_files
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.formats import RecordError, detect_format, to_turns
from trajectory_compressor.read.select import RowSelection
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.prepare import record_id
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.types import SourceRecord, Turn
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.run_files import OutputError, file_record
from trajectory_compressor.write.run_report import COMPLETED


class MismatchError(UsageError):
    """The output, its metrics and the input given are not from the same run."""


SAME_RUN = "; are the output, its metrics and --input from the same run?"


@dataclass(frozen=True)
class MatchedRow:
    """One metrics line with the input row it names and the output row it wrote (None: not written)."""

    line_number: int
    entry: dict[str, Any]
    original: SourceRecord
    produced: SourceRecord | None


def load_report(path: Path) -> dict[str, Any] | None:
    """The run's report beside its output, or None when there is none to check against."""
    try:
        report = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return report if isinstance(report, dict) else None


def check_inputs(report: dict[str, Any] | None, report_path: Path, inputs: Sequence[InputSource]) -> None:
    """The inputs given are the files the run read (by size and sha256), in the same order."""
    recorded = (report or {}).get("inputs")
    if not isinstance(recorded, list):
        return  # a report from before inputs were recorded, or from the Ray engine
    report_named = quoted(report_path)
    if len(recorded) != len(inputs):
        names = ", ".join(quoted(str(entry.get("name"))) for entry in recorded if isinstance(entry, dict))
        raise MismatchError(
            f"--input names {len(inputs)} input file(s), but {report_named} records {len(recorded)}: {names}"
        )
    for source, entry in zip(inputs, recorded, strict=True):
        if not isinstance(entry, dict) or not entry.get("sha256") or source.path is None:
            continue  # not a file then (a pipe, a dataset): the rows are checked instead
        try:
            digest, size, _ = file_record(Path(source.path))
        except OSError:
            continue
        expected = str(entry["sha256"])
        if (size, digest.hexdigest()) != (entry.get("bytes"), expected):
            raise MismatchError(
                f"the input {quoted(source.name)} is not the file the run read: {report_named} records "
                f"{quoted(str(entry.get('name')))} ({entry.get('bytes')} bytes, sha256 {expected[:12]}...), "
                f"this one has {size} bytes, sha256 {digest.hexdigest()[:12]}...; pass the run's own input"
            )


def row_turns(item: SourceRecord, config: RunConfig) -> list[Turn]:
    """The turns of a row, read as `compress` reads them; `RecordError` when it has none."""
    if item.record is None:
        raise RecordError(item.error or "not a record")
    fmt = detect_format(item.record, config.read.conversation_key, config.read.format)
    return to_turns(item.record, fmt)


class RowMatcher:
    """Walks the metrics lines, the input rows and the output rows together (streamed, in order)."""

    def __init__(
        self,
        output: Path,
        metrics: Sequence[Path],
        inputs: Sequence[InputSource],
        config: RunConfig,
        *,
        dataset: Sequence[Path] | None = None,
    ) -> None:
        """`metrics`: the metrics file, or a Ray run's parts in order; `dataset`: the output's files
        (a Ray run's parts), `output` itself by default."""
        self.output, self.metrics, self.config = output, list(metrics), config
        shown = self.metrics[0].parent if len(self.metrics) > 1 else self.metrics[0]
        self._output_named, self._metrics_named = quoted(output), quoted(shown)  # as messages show them
        self._inputs = iter(RowSelection(inputs, read=config.read))
        files = [str(path) for path in (dataset or [output])]
        self._outputs = (item for _, _, item in RowSelection(expand_inputs(files), read=config.read))
        self.input_rows = 0  # input rows read so far
        self.metrics_lines = 0
        self.rows = 0  # input rows the metrics describe (one line each, or one per window)
        self.rows_written = 0  # of them, rows with a record in the output
        self.output_rows = 0  # output rows matched so far
        self._last: tuple[int, SourceRecord] | None = None  # the row the previous line named
        self._row_written = False  # whether that row has a record in the output yet

    def __iter__(self) -> Iterator[MatchedRow]:
        for line_number, line in enumerate(_lines(self.metrics), start=1):
            entry = self._entry(line_number, line)
            self.metrics_lines += 1
            later_window = isinstance(entry.get("window"), dict) and entry["window"].get("index", 0) > 0
            if later_window and self._last is not None and self._last[0] == entry["index"]:
                original = self._last[1]  # --windows: every window of a row names the same input row
            else:
                original = self._input_row(line_number, entry)
                self.rows += 1
                self._last = (entry["index"], original)
                self._row_written = False
            produced = self._output_row(line_number, entry, original) if _written(entry) else None
            if produced is not None and not self._row_written:
                self.rows_written += 1
                self._row_written = True
            yield MatchedRow(line_number, entry, original, produced)

    def _entry(self, line_number: int, line: bytes) -> dict[str, Any]:
        entry = _parsed(line)
        problem = "no integer index" if entry is None or type(entry.get("index")) is not int else _odd_field(entry)
        if entry is None or problem is not None:
            raise MismatchError(f"{self._metrics_named}:{line_number} is not a metrics line of this tool ({problem})")
        return entry

    def _input_row(self, line_number: int, entry: dict[str, Any]) -> SourceRecord:
        where = f"{self._metrics_named}:{line_number}"
        index = entry["index"]
        if index < self.input_rows:
            raise MismatchError(f"{where} names input row {index} out of order; is it a metrics file of this tool?")
        item = None
        for current, _, candidate in self._inputs:
            self.input_rows = current + 1
            if current == index:
                item = candidate
                break
        if item is None:
            raise MismatchError(
                f"{where} names input row {index}, but --input has {self.input_rows} rows; pass the run's own input"
            )
        row = f"input row {index} ({quoted(item.source)}:{item.line})"
        if entry.get("line") not in (None, item.line):
            raise MismatchError(f"{where} says line {entry['line']}, but {row} is at line {item.line}{SAME_RUN}")
        found = record_id(item.record)
        if entry.get("id") is not None and entry["id"] != found:
            raise MismatchError(f"{where} names id {entry['id']!r}, but {row} has id {found!r}{SAME_RUN}")
        if not entry.get("rejected"):
            turns, expected = self._turn_count(item, where, row), entry.get("original_turns")
            if turns != expected:
                raise MismatchError(f"{where} says {expected} turns, but {row} has {turns}{SAME_RUN}")
        return item

    def _output_row(self, line_number: int, entry: dict[str, Any], original: SourceRecord) -> SourceRecord:
        where = f"{self._metrics_named}:{line_number}"
        produced = next(self._outputs, None)
        if produced is None:
            later = (_parsed(line) for line in _rest(self.metrics, line_number))
            written = self.output_rows + 1 + sum(_written(entry) for entry in later if entry is not None)
            raise MismatchError(
                f"{self._output_named} has {self.output_rows} rows, but its metrics ({self._metrics_named}) say "
                f"{written} were written; is the output complete?"
            )
        self.output_rows += 1
        row = f"output row {self.output_rows} ({quoted(produced.source)}:{produced.line})"
        if not entry.get("rejected") and _same_format(original, produced):  # --write-format changes turns
            turns = self._turn_count(produced, where, row)
            if turns != entry.get("compressed_turns"):
                raise MismatchError(
                    f"{where} says {entry.get('compressed_turns')} turns written, but {row} has {turns}{SAME_RUN}"
                )
        return produced

    def _turn_count(self, item: SourceRecord, where: str, row: str) -> int:
        try:
            return len(row_turns(item, self.config))
        except RecordError as exc:
            raise MismatchError(f"{where} describes a valid row, but {row} is not one ({exc}){SAME_RUN}") from None

    def check_totals(self, report: dict[str, Any] | None, report_path: Path) -> None:
        """After the last metrics line: no output rows left over, and the report's counts agree."""
        if next(self._outputs, None) is not None:
            raise MismatchError(
                f"{self._output_named} has more rows than the {self.output_rows} its metrics "
                f"({self._metrics_named}) say were written{SAME_RUN}"
            )
        rows = (report or {}).get("rows")
        if not isinstance(rows, dict):
            return
        report_named = quoted(report_path)
        if rows.get("selected") != self.rows:
            raise MismatchError(
                f"{self._metrics_named} describes {self.rows} rows, but {report_named} records "
                f"{rows.get('selected')}; pass the metrics file of this output"
            )
        if rows.get("written") != self.rows_written:
            raise MismatchError(
                f"{self._output_named} holds {self.rows_written} rows, but {report_named} records "
                f"{rows.get('written')} written"
            )
        read = rows.get("read")
        if ((report or {}).get("settings") or {}).get("limit") is None:
            self._count_inputs_to(None)
            agrees = read == self.input_rows
        else:  # the run stopped reading at its limit: the input holds at least what it read
            self._count_inputs_to(read if isinstance(read, int) else None)
            agrees = isinstance(read, int) and self.input_rows >= read
        if not agrees:
            raise MismatchError(
                f"--input has {self.input_rows} rows, but {report_named} records {read} read; pass the run's own input"
            )

    def _count_inputs_to(self, enough: int | None) -> None:
        """Read on through the input, counting its rows, to its end or until `enough` are counted."""
        while enough is None or self.input_rows < enough:
            if next(self._inputs, None) is None:
                return
            self.input_rows += 1


@dataclass(frozen=True)
class OutputFiles:
    """An output's dataset files, metrics files and report: what `eval` reads of a run."""

    output: Path
    dataset: list[Path]
    metrics: list[Path]
    report_path: Path
    report: dict[str, Any] | None

    @classmethod
    def find(cls, output: Path, metrics: Path | None) -> OutputFiles:
        paths = OutputPaths.beside(output)
        dataset = part_files(output) if is_ray_output_folder(output) else [output]
        return cls(output, dataset, _metrics_files(output, metrics), paths.report, load_report(paths.report))

    def unfinished(self) -> str | None:
        """Why the output may hold only part of its run (None: its report says `completed`). The
        figures of such an output are of the rows written so far, so `eval` says so beside them:
        a Ray run's parts are written as it goes and its report only at its end, and a local
        run's report says whether it finished."""
        status = (self.report or {}).get("status")
        if status is None and is_ray_output_folder(self.output):
            return (
                f"no report beside {quoted(self.output)} ({quoted(self.report_path)}): the Ray run writing it has not "
                "finished, or stopped; these figures are of the parts written so far"
            )
        if status is None or status == COMPLETED:
            return None
        return (
            f"the report {quoted(self.report_path)} says {quoted(str(status))}, not {quoted(COMPLETED)}: the run did "
            "not finish, so the output may not hold every row; re-run that run to resume it, then eval again"
        )

    def model(self) -> str | None:
        settings = (self.report or {}).get("settings", {})
        model = (settings.get("llm") or {}).get("model") if isinstance(settings, dict) else None
        return str(model) if model else None

    def rows(self, inputs: Sequence[InputSource], config: RunConfig) -> Iterator[MatchedRow]:
        """Every metrics line with its input and output rows, checked to belong together (a
        `MismatchError` at the first place they do not, never a score)."""
        check_inputs(self.report, self.report_path, inputs)
        matcher = RowMatcher(self.output, self.metrics, inputs, config, dataset=self.dataset)
        yield from matcher
        matcher.check_totals(self.report, self.report_path)


def _metrics_files(output: Path, metrics: Path | None) -> list[Path]:
    """The metrics files of `output`, in order: the one given (a file, or a folder of parts), the
    local run's file beside the output, or a Ray run's metrics folder of parts."""
    looked = metrics or OutputPaths.beside(output).metrics
    if looked.is_dir() and metrics is not None:
        return part_files(looked)
    if looked.is_file():
        return [looked]
    if metrics is None and is_ray_output_folder(output):
        looked = Path(RayOutputLayout.beside(str(output)).metrics)
        if looked.is_dir():
            return part_files(looked)
    raise OutputError(f"no metrics file for {quoted(output)} (looked for {quoted(looked)}); pass --metrics PATH")


def _same_format(original: SourceRecord, produced: SourceRecord) -> bool:
    """Whether the output row is in the input row's format (not converted by `--write-format`)."""
    try:
        return detect_format(original.record).name == detect_format(produced.record).name
    except RecordError:
        return True  # not a conversation: the turn count says so


def _odd_field(entry: dict[str, Any]) -> str | None:
    """The first field the evaluation counts with that is not of the type this tool writes, or
    None: an edited or foreign line is named, not an internal error further on."""
    window = entry.get("window")
    if window is not None:
        if not isinstance(window, dict):
            return "'window' is not an object"
        for key in ("index", "count"):
            if type(window.get(key)) is not int:
                return f"'window.{key}' is not an integer"
    for key in ("original_tokens", "compressed_tokens"):
        if entry.get(key) is not None and type(entry[key]) is not int:
            return f"{key!r} is not an integer"
    region = entry.get("compression_region")
    if region is not None and not isinstance(region, dict):
        return "'compression_region' is not an object"
    return None


def _written(entry: dict[str, Any]) -> bool:
    return bool(entry.get("written", True)) and not entry.get("dropped")


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return entry if isinstance(entry, dict) else None


def _lines(paths: Sequence[Path]) -> Iterator[bytes]:
    for path in paths:
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    yield line


def _rest(path: Sequence[Path], after: int) -> Iterator[bytes]:
    for number, line in enumerate(_lines(path), start=1):
        if number > after:
            yield line
