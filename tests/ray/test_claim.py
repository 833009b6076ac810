"""One run per output on object storage: the output's claim, the parts' run ids, the check before `completed`.

The output is a `file://` URI: the code path of `s3://` / `gs://` (pyarrow's filesystem, no
local lock taken), on a disk a test can look at. Object stores have no lock to emulate; what
the claim relies on is only a put that replaces a whole object and a read that sees the last
put, which a local filesystem gives too. The claim's pure logic runs in-process on a test clock
(fast). Whole Ray runs (slow suite, `ray_faults`) hold the first run at a known point of its
driver (a function of `ray.run` wrapped) and run the second one there, in the same process.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.errors import UsageError
from trajectory_compressor.ray.layout import RayOutputLayout, check_output_folders, claim_output_folders

pytestmark = pytest.mark.ray  # the whole runs are marked ray_faults too (the slow suite); the rest is fast
LEASE = 120.0


def uri_layout(tmp_path: Path) -> RayOutputLayout:
    return RayOutputLayout.beside(f"file://{tmp_path}/out/x.jsonl")


class Clock:
    """The claims' clock: a test moves it; nothing waits."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_live_claim_keeps_a_second_run_out_until_it_ends(tmp_path: Path) -> None:
    from trajectory_compressor.ray.claim import OutputClaim, OutputClaimedError, read_claim

    layout, clock = uri_layout(tmp_path), Clock()
    with OutputClaim(layout, locked=False, lease=LEASE, clock=clock) as first:
        found = read_claim(layout)
        assert found is not None and found.run_id == first.run_id and not found.ended
        check_output_folders(layout)  # the claim and the marker are this tool's own files
        clock.now += LEASE - 1  # not renewed for almost a lease (a slow storage): still held
        with pytest.raises(OutputClaimedError) as refused:
            OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
        assert str(refused.value) == (
            f"another run is writing {layout.data}: run {first.run_id} (host {found.host}, pid {found.pid}; "
            f"renewed 119 s ago) holds {layout.records}/claim.json; wait for it to finish or choose another -o "
            "(a run whose driver was lost stops holding it 120 s after its last renewal)"
        )
        assert isinstance(refused.value, UsageError)  # exit 2, as the local lock's refusal
        assert read_claim(layout) == found  # the refused run wrote nothing
    ended = read_claim(layout)
    assert ended is not None and ended.run_id == first.run_id and ended.ended
    with OutputClaim(layout, locked=False, lease=LEASE, clock=clock) as second:  # ended: the re-run at once
        assert second.run_id != first.run_id


def test_a_lost_drivers_claim_holds_for_a_lease_and_a_run_that_stops_on_an_error_ends_its_own(
    tmp_path: Path,
) -> None:
    from trajectory_compressor.ray.claim import Claim, OutputClaim, OutputClaimedError, read_claim, write_claim

    layout, clock = uri_layout(tmp_path), Clock()
    lost = Claim("0123456789abcdef", "gone-host", 4242, clock.now - 500, clock.now - 10)  # SIGKILLed: never ended
    write_claim(layout, lost)
    with pytest.raises(
        OutputClaimedError, match=r"run 0123456789abcdef \(host gone-host, pid 4242; renewed 10 s ago\)"
    ):
        OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    clock.now += LEASE  # a lease without a renewal: the driver is gone, its re-run takes the output over
    with pytest.raises(KeyboardInterrupt), OutputClaim(layout, locked=False, lease=LEASE, clock=clock) as resumed:
        raise KeyboardInterrupt  # Ctrl-C, an error: the claim still ends
    after = read_claim(layout)
    assert after is not None and after.run_id == resumed.run_id and after.ended
    write_claim(layout, lost)  # beside a local output the driver holds the flock: any claim is a gone run's
    with OutputClaim(layout, locked=True, lease=LEASE, clock=clock) as local:
        assert read_claim(layout).run_id == local.run_id  # type: ignore[union-attr]


def test_a_run_whose_claim_was_taken_over_stops_and_leaves_the_new_owners_claim(tmp_path: Path) -> None:
    from trajectory_compressor.ray.claim import ClaimLostError, OutputClaim, read_claim

    layout, clock = uri_layout(tmp_path), Clock()
    first = OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    clock.now += 30
    assert first.renew() and read_claim(layout).renewed == clock.now  # type: ignore[union-attr]
    clock.now += LEASE  # its renewals stopped reaching the storage (a partition): to others, it is gone
    second = OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    assert not first.renew()  # it does not write over the new owner's claim
    with pytest.raises(ClaimLostError) as stopped:
        first.check()
    assert str(stopped.value) == first.lost()
    assert str(stopped.value).startswith(f"another run took over {layout.data} (its claim now: run {second.run_id} ")
    assert stopped.value.exit_code == 1
    first.__exit__(None, None, None)
    held = read_claim(layout)
    assert held is not None and held.run_id == second.run_id and not held.ended
    second.__exit__(None, None, None)


def test_claiming_the_folders_keeps_the_claim(tmp_path: Path) -> None:
    from trajectory_compressor.ray.claim import OutputClaim

    layout = uri_layout(tmp_path)
    with OutputClaim(layout, locked=False, lease=LEASE):
        claim_output_folders(layout)  # deletes the parts it does not keep; never the claim
        assert (tmp_path / "out" / "x.part_records" / "claim.json").is_file()


def test_a_write_task_of_a_run_whose_claim_was_taken_over_writes_nothing(tmp_path: Path) -> None:
    """A zombie: a worker of a run that was taken over (its driver thought lost) still writing."""
    pytest.importorskip("ray.data")
    import pyarrow as pa

    from trajectory_compressor.ray.claim import ClaimLostError, OutputClaim
    from trajectory_compressor.ray.write import CompressedOutput

    layout, clock = uri_layout(tmp_path), Clock()
    old = OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    clock.now += LEASE
    new = OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    claim_output_folders(layout)
    sink = CompressedOutput(layout, run_id=old.run_id)
    table = pa.table({"row_index": [0], "record": [b"{}"], "metrics": [b"{}"], "over_limit": [None], "reject": [None]})
    with pytest.raises(ClaimLostError, match=f"this run {old.run_id} stopped writing"):
        sink.write([table], None)
    for folder in layout.outputs().values():
        assert not [path for path in Path(folder.removeprefix("file://")).iterdir() if path.name.startswith("part-")]
    assert sorted(path.name for path in Path(layout.records.removeprefix("file://")).iterdir()) == [
        ".trajectory-compressor-ray",
        "claim.json",
    ]
    new.__exit__(None, None, None)


def test_a_write_task_still_running_after_its_run_ended_writes_nothing(tmp_path: Path) -> None:
    """A write task in flight when its driver stopped (Ctrl-C, an error: Ray cancels its tasks
    without waiting for them, and an external cluster's go on until the job is torn down) found the
    claim still its run's, only ended, and wrote its part: after the re-run's cleanup, that part
    is one the re-run did not count (exit 1 at its end). An ended claim fences as a taken one."""
    pytest.importorskip("ray.data")
    import pyarrow as pa

    from trajectory_compressor.ray.claim import ClaimLostError, OutputClaim
    from trajectory_compressor.ray.write import CompressedOutput

    layout = uri_layout(tmp_path)
    with OutputClaim(layout, locked=False, lease=LEASE, clock=Clock()) as ended:
        claim_output_folders(layout)
    sink = CompressedOutput(layout, run_id=ended.run_id)
    table = pa.table({"row_index": [0], "record": [b"{}"], "metrics": [b"{}"], "over_limit": [None], "reject": [None]})
    with pytest.raises(ClaimLostError, match=f"run {ended.run_id} has ended"):
        sink.write([table], None)
    for folder in layout.outputs().values():
        assert not [path for path in Path(folder.removeprefix("file://")).iterdir() if path.name.startswith("part-")]


def test_a_retried_write_task_with_fewer_side_outputs_leaves_none_of_the_first_attempts(tmp_path: Path) -> None:
    """A write task retried after its node died reads its rows again from their lineage, summarized
    again: a row the first attempt rejected or left over the limit may now be neither. The first
    attempt's rejects and over-limit parts stayed beside the second's record, and the driver ended
    the run with "another writer changed the output", which no other writer had done."""
    pytest.importorskip("ray.data")
    import orjson
    import pyarrow as pa

    from trajectory_compressor.ray.claim import OutputClaim, own_parts_problem
    from trajectory_compressor.ray.parts import PartRecord
    from trajectory_compressor.ray.write import CompressedOutput

    layout = uri_layout(tmp_path)
    metrics = orjson.dumps({"index": 0, "source": "in.jsonl", "line": 1})

    def attempt(over_limit: bytes | None, reject: bytes | None) -> list[PartRecord]:
        table = pa.table(
            {"row_index": [0], "record": [b"{}"], "metrics": [metrics], "over_limit": [over_limit], "reject": [reject]}
        )
        parts = sink.write([table], None)["parts"]
        return [record for record in map(PartRecord.from_dict, parts) if record is not None]

    with OutputClaim(layout, locked=False, lease=LEASE, clock=Clock()) as claim:
        claim_output_folders(layout)
        sink = CompressedOutput(layout, run_id=claim.run_id)
        attempt(b'{"id": "r0"}', b'{"error": "bad"}')
        assert (tmp_path / "out" / "x.rejects" / "part-000000000000.jsonl").is_file()
        records = attempt(None, None)
        assert own_parts_problem(layout, records) is None
    for side in ("x.rejects", "x.over_limit"):
        assert not list((tmp_path / "out" / side).glob("part-*")), side


def test_the_driver_finds_a_part_another_writer_replaced_or_added(tmp_path: Path) -> None:
    from trajectory_compressor.ray.claim import own_parts_problem
    from trajectory_compressor.ray.parts import PartFile, PartRecord, write_record

    layout = uri_layout(tmp_path)
    claim_output_folders(layout)
    data = Path(layout.data.removeprefix("file://"))

    def written(first: int, rows: int, run_id: str, text: bytes) -> PartRecord:
        name = f"part-{first:012d}.jsonl"
        (data / name).write_bytes(text)
        record = PartRecord(first, ((first, first + rows),), {"data": PartFile.of(name, text)}, {}, (), "f", run_id)
        write_record(layout, record)
        return record

    mine = [written(0, 2, "run-a", b"1\n2\n"), written(2, 2, "run-a", b"3\n4\n")]
    assert own_parts_problem(layout, mine) is None
    kept = PartRecord(4, ((4, 5),), {}, {}, (), "f", "")  # kept by a resume: another run's (an older version's)
    write_record(layout, kept)
    assert own_parts_problem(layout, [*mine, kept]) is None
    records = f"{layout.records}/part-000000000002.json"
    written(2, 2, "run-b", b"3\n4\n")  # the same bytes, another run's record: a replaced part all the same
    assert own_parts_problem(layout, [*mine, kept]) == f"{records} was replaced (written by run run-b)"
    written(2, 2, "run-a", b"3\n4\n")
    extra = written(6, 1, "run-b", b"7\n")
    assert own_parts_problem(layout, [*mine, kept]) == (
        f"{layout.records}/part-000000000006.json (written by run run-b) is not a part of this run"
    )
    Path(f"{layout.records.removeprefix('file://')}/{extra.name}").unlink()  # its data file left, no record
    assert (
        own_parts_problem(layout, [*mine, kept]) == f"{layout.data}/part-000000000006.jsonl is not a part of this run"
    )


# Whole runs: the first held at a known point of its driver, the second run there.
RAY = ("--engine", "ray", "--num-workers", "2", "-q")


def held_at(monkeypatch: pytest.MonkeyPatch, name: str, then: Any) -> list[Any]:
    """Run `then()` once, in the driver of the next Ray run, right after its `ray.run.<name>` returns."""
    import trajectory_compressor.ray.run as ray_run

    original = getattr(ray_run, name)
    results: list[Any] = []

    def hold(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        if not results:
            results.append(None)
            results[0] = then()
        return value

    monkeypatch.setattr(ray_run, name, hold)
    return results


@pytest.mark.ray_faults
def test_a_second_run_on_the_same_object_store_output_is_refused_while_the_first_runs(
    local_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before: the second run (other settings, `--no-resume`) ran to `completed` while the first was
    counting its inputs; the first then replaced every part of it and said `completed` too."""
    from tests.ray.conftest import assert_same_outputs
    from trajectory_compressor.ray import write
    from trajectory_compressor.ray.run import run_on_ray
    from trajectory_compressor.settings import RunConfig, with_values

    monkeypatch.setattr(write, "ROWS_PER_PART", 16)
    source = write_jsonl(tmp_path / "in.jsonl", read_jsonl(SAMPLE)[:40])
    out = f"file://{tmp_path}/ray/x.jsonl"
    config = RunConfig(summarizer="extractive", engine="ray", num_workers=2, quiet=True)

    def second() -> Any:
        other = with_values(with_values(config, "plan", target_max_tokens=9000), "output", resume=False)
        try:
            return run_on_ray([str(source)], out, other, on_message=lambda _: None)
        except UsageError as exc:
            return exc

    refused = held_at(monkeypatch, "count_inputs", second)
    first = run_on_ray([str(source)], out, config, on_message=lambda _: None)
    assert isinstance(refused[0], UsageError), refused[0]  # exit 2
    assert str(refused[0]).startswith(f"another run is writing {out}: run {first.report['engine']['run_id']} ")
    assert first.exit_code == 0, first.message
    local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive")
    assert local.returncode == 0, local.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")
    claim = json.loads((tmp_path / "ray" / "x.part_records" / "claim.json").read_text())
    assert claim["ended"]  # so the same command again starts at once


@pytest.mark.ray_faults
def test_a_run_whose_claim_was_taken_over_writes_no_part_and_no_report_over_the_new_owners(
    local_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The first run's renewals stop reaching the storage (a partition: to others, its driver is
    lost); the second takes the output over and completes; then the first goes on, its workers'
    write tasks to come. Before: the first replaced every part of the second's, rewrote the report
    and said `completed`, as did the second."""
    from tests.ray.conftest import assert_same_outputs
    from trajectory_compressor.ray import claim, write
    from trajectory_compressor.ray.run import run_on_ray
    from trajectory_compressor.settings import RunConfig, with_values

    monkeypatch.setattr(write, "ROWS_PER_PART", 16)
    source = write_jsonl(tmp_path / "in.jsonl", read_jsonl(SAMPLE)[:40])
    out = f"file://{tmp_path}/ray/x.jsonl"
    base = RunConfig(summarizer="extractive", engine="ray", num_workers=2, quiet=True)
    first_config = with_values(base, "plan", target_max_tokens=9000)

    def partitioned_then_second() -> Any:
        layout = RayOutputLayout.beside(out)
        held = claim.read_claim(layout)
        assert held is not None
        long_ago = claim.Claim(held.run_id, held.host, held.pid, held.started, renewed=0.0)
        claim.write_claim(layout, long_ago)
        return held.run_id, run_on_ray([str(source)], out, base, on_message=lambda _: None)

    monkeypatch.setattr(claim.OutputClaim, "renew", lambda self: True)  # the first run's renewals never land
    taken = held_at(monkeypatch, "claim_output_folders", partitioned_then_second)  # the first has claimed its folders
    first = run_on_ray([str(source)], out, first_config, on_message=lambda _: None)
    first_id, second = taken[0]
    assert second.exit_code == 0, second.message
    assert first.exit_code == 1
    assert first.message.startswith(f"another run took over {out} (its claim now: run ")
    assert first.message.endswith(
        f"this run {first_id} stopped writing and wrote no report: the output is the other run's"
    )
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert report["status"] == "completed" and report["settings"] == second.report["settings"]
    local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive")
    assert local.returncode == 0, local.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")  # the second run's, whole
    records = [json.loads(path.read_text()) for path in (tmp_path / "ray" / "x.part_records").glob("part-*.json")]
    assert records and {record["run_id"] for record in records} != {first_id}
    assert all(record["run_id"] != first_id for record in records)


class FlakyReads:
    """A filesystem whose first `failures` reads of any file fail as a store refusing for a moment does."""

    def __init__(self, filesystem: Any, failures: int) -> None:
        self.filesystem, self.failures = filesystem, failures

    def open_input_stream(self, path: str) -> Any:
        if self.failures:
            self.failures -= 1
            raise OSError("When reading information for key 'x/claim.json': AWS Error SLOW_DOWN")
        return self.filesystem.open_input_stream(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.filesystem, name)


@pytest.mark.parametrize("failures", [2, 3])
def test_a_claim_read_that_fails_is_tried_again_then_raised_never_taken_for_no_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failures: int
) -> None:
    """A refused read taken for "no claim" stopped a run whose claim was whole as taken over (a
    write task's check) and let a second run in; it is tried again, and raised if it keeps failing."""
    from trajectory_compressor.ray import claim, claim_file
    from trajectory_compressor.ray.layout import filesystem_of

    layout = uri_layout(tmp_path)
    with claim.OutputClaim(layout, locked=False, lease=LEASE, clock=Clock()) as held:
        flaky = FlakyReads(filesystem_of(layout.records)[0], failures)
        monkeypatch.setattr(claim_file, "filesystem_of", lambda folder: (flaky, filesystem_of(folder)[1]))
        monkeypatch.setattr(claim_file.time, "sleep", lambda seconds: None)
        if failures < 3:
            claim.check_owner(layout, held.run_id)  # two refusals, then the claim: still this run's
        else:
            with pytest.raises(OSError, match="SLOW_DOWN"):
                claim.check_owner(layout, held.run_id)
        monkeypatch.undo()


@pytest.mark.parametrize("uri", [False, True])
def test_an_output_the_driver_cannot_make_is_one_line_naming_it_before_ray_starts(tmp_path: Path, uri: bool) -> None:
    """A folder under a file (or a bucket the driver may not write): the lock or the claim could
    not be written, which was `error: internal error FileNotFoundError ...`, exit 1."""
    (tmp_path / "taken").write_text("a file, not a folder\n")
    output = f"{'file://' if uri else ''}{tmp_path}/taken/out/x.jsonl"
    result = run_cli("compress", str(SAMPLE), "-o", output, "--engine", "ray", "--dry-run")
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot write {output}: ") and "internal" not in line
    assert (tmp_path / "taken").read_text() == "a file, not a folder\n"


def age(tmp_path: Path, clock: Clock, seconds: float) -> None:
    """Make the claim file `seconds` old by the claims' clock (its modification time)."""
    os.utime(tmp_path / "out" / "x.part_records" / "claim.json", (clock.now - seconds, clock.now - seconds))


@pytest.mark.parametrize(
    "fields",
    [
        {"renewed": "soon"},  # a user's hand-written claim: `now - "soon"` raised TypeError
        {"renewed": None},
        {"run_id": 42},
        {"ended": "no"},  # truthy text, not a boolean
        {"pid": True},
    ],
)
def test_a_claim_json_with_a_field_of_the_wrong_type_holds_by_its_age_not_an_internal_error(
    tmp_path: Path, fields: dict[str, Any]
) -> None:
    """A claim.json of this version's keys but not its types raised TypeError from `holds`, an
    internal error before Ray started. It is a claim this version cannot read: held, as any
    claim, until its file is a lease old; never this run's own."""
    from trajectory_compressor.ray.claim import ClaimLostError, ForeignClaim, OutputClaim, check_owner, read_claim

    layout, clock = uri_layout(tmp_path), Clock()
    with OutputClaim(layout, locked=False, lease=LEASE, clock=clock) as first:
        pass  # the records folder made and marked, as a run leaves it
    path = tmp_path / "out" / "x.part_records" / "claim.json"
    whole = json.loads(path.read_text())
    path.write_text(json.dumps({**whole, "ended": False, "renewed": clock.now, **fields}))
    age(tmp_path, clock, 5)
    assert isinstance(read_claim(layout), ForeignClaim)
    with pytest.raises(ClaimLostError, match="another run took over"):
        check_owner(layout, first.run_id)
    with pytest.raises(UsageError, match=r"another version of this tool \(claim version 1, .*written 5 s ago\)"):
        OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    age(tmp_path, clock, LEASE)
    with OutputClaim(layout, locked=False, lease=LEASE, clock=clock) as second:
        found = read_claim(layout)
        assert found is not None and found.run_id == second.run_id


def test_a_claim_another_version_wrote_is_refused_until_it_ends_or_its_lease_runs_out(tmp_path: Path) -> None:
    """A newer driver on the same output (another claim `version`, a field this one does not know):
    its claim was taken for no claim and taken over at once, two drivers on one output. It holds
    as this version's own do, by when its file was written: refused, naming the holder and its
    version; taken over once a lease old, or at once when it says it ended, or beside a locked
    local output."""
    from trajectory_compressor.ray.claim import ClaimLostError, ForeignClaim, OutputClaim, check_owner, read_claim

    layout, clock = uri_layout(tmp_path), Clock()
    with OutputClaim(layout, locked=False, lease=LEASE, clock=clock):
        pass
    path = tmp_path / "out" / "x.part_records" / "claim.json"
    newer = {"version": 2, "run_id": "feedfacefeedface", "host": "h2", "pid": 77, "lease": 300, "ended": False}
    path.write_text(json.dumps(newer))
    age(tmp_path, clock, 12)
    found = read_claim(layout)
    assert isinstance(found, ForeignClaim) and found.holds(clock.now, LEASE)
    with pytest.raises(UsageError) as refused:
        OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    assert str(refused.value) == (
        f"another run is writing {layout.data}: run feedfacefeedface of another version of this tool "
        f"(claim version 2, host h2, pid 77; written 12 s ago) holds {layout.records}/claim.json; wait for it "
        "to finish or choose another -o (a run whose driver was lost stops holding it 120 s after its last write)"
    )
    assert json.loads(path.read_text()) == newer  # the refused run wrote nothing
    with pytest.raises(ClaimLostError, match=r"its claim now: run feedfacefeedface of another version"):
        check_owner(layout, "0123456789abcdef")
    age(tmp_path, clock, LEASE - 1)
    with pytest.raises(UsageError):
        OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    with OutputClaim(layout, locked=True, lease=LEASE, clock=clock) as local:  # the flock held: a gone run's
        assert read_claim(layout).run_id == local.run_id  # type: ignore[union-attr]
    for ended, seconds in ((False, LEASE), (True, 0)):
        path.write_text(json.dumps({**newer, "ended": ended}))
        age(tmp_path, clock, seconds)
        with OutputClaim(layout, locked=False, lease=LEASE, clock=clock) as taken:
            assert read_claim(layout).run_id == taken.run_id  # type: ignore[union-attr]


@pytest.mark.parametrize("text", [b"not json", b"[1, 2]", b'{"version": "2.0"}'])
def test_a_claim_json_this_version_cannot_read_at_all_is_named_as_such(tmp_path: Path, text: bytes) -> None:
    from trajectory_compressor.ray.claim import OutputClaim

    layout, clock = uri_layout(tmp_path), Clock()
    with OutputClaim(layout, locked=False, lease=LEASE, clock=clock):
        pass
    (tmp_path / "out" / "x.part_records" / "claim.json").write_bytes(text)
    age(tmp_path, clock, 3)
    with pytest.raises(UsageError) as refused:
        OutputClaim(layout, locked=False, lease=LEASE, clock=clock).__enter__()
    holder = 'of another version of this tool (claim version "2.0"; ' if b"version" in text else "of a writer "
    assert f": a run {holder}" in str(refused.value)
    assert "written 3 s ago" in str(refused.value)


def test_a_claim_read_that_fails_when_the_run_ends_leaves_the_runs_own_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store refusing every read as the run ends: the claim is left to go stale after the lease
    (as an unreachable write leaves it), and the run's own end is kept; the OSError raised from
    `__exit__` replaced it (a completed run whose report was written ended in an internal error)."""
    from trajectory_compressor.ray import claim, claim_file
    from trajectory_compressor.ray.layout import filesystem_of

    layout = uri_layout(tmp_path)
    held = claim.OutputClaim(layout, locked=False, lease=LEASE, clock=Clock())
    held.__enter__()
    flaky = FlakyReads(filesystem_of(layout.records)[0], 1_000)
    monkeypatch.setattr(claim_file, "filesystem_of", lambda folder: (flaky, filesystem_of(folder)[1]))
    monkeypatch.setattr(claim_file.time, "sleep", lambda seconds: None)
    held.__exit__(None, None, None)  # raised OSError
    monkeypatch.undo()
    left = claim.read_claim(layout)
    assert left is not None and left.run_id == held.run_id and not left.ended


@pytest.mark.ray_faults
@pytest.mark.timeout(600)
def test_ctrl_c_on_an_object_store_output_ends_the_claim_and_the_same_command_resumes(tmp_path: Path) -> None:
    """A driver stopped by Ctrl-C while a summary is held, a part already recorded: exit 130, its
    claim ended, and the same command at once keeps that part and completes with the local engine's
    bytes (a claim left held would refuse it for a lease). The input is a `.jsonl.gz` with a plain
    line appended: the Ray engine reads it member by member, its last record kept, the line one reject."""
    import gzip
    import os
    import signal
    import subprocess
    import sys

    from tests.fake_openai_server import FakeServerThread
    from tests.ray.conftest import assert_same_outputs
    from tests.ray.test_faults import Schedule, llm_flags, wait_for

    rows = read_jsonl(SAMPLE)[:12]
    source = tmp_path / "in.jsonl.gz"
    body = b"\n".join(json.dumps(row).encode() for row in rows[:-1])  # the last record without a line end
    source.write_bytes(gzip.compress(body) + json.dumps(rows[-1]).encode() + b"\n")
    out = f"file://{tmp_path}/ray/x.jsonl"
    records = tmp_path / "ray" / "x.part_records"
    schedule = Schedule()
    env = {**os.environ, "TC_RAY_ROWS_PER_PART": "2"}
    with FakeServerThread(faults=schedule) as server:
        local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"),
                        *llm_flags(server.base_url, tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
        schedule.hold, schedule.answer_first = True, len(server.requests) + 2
        command = [sys.executable, "-m", "trajectory_compressor", "compress", str(source), "-o", out,
                   *llm_flags(server.base_url, tmp_path / "cache" / "s.sqlite3"),
                   "--engine", "ray", "--num-workers", "1", "-q"]  # fmt: skip
        driver = subprocess.Popen(command, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env)  # fmt: skip
        try:
            wait_for("a part recorded and a held request", lambda: (
                (list(records.glob("part-*.json")) and server.held > 0) or driver.poll() is not None))  # fmt: skip
            assert driver.poll() is None, driver.communicate()[1]
            driver.send_signal(signal.SIGINT)  # Ctrl-C, to the driver
            _, stderr = driver.communicate(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
            schedule.hold = False
            server.release(None)
        assert driver.returncode == 130, stderr
        claim = json.loads((records / "claim.json").read_text())
        assert claim["ended"], claim
        rerun = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert report["resume"]["parts_kept"] >= 1
    assert report["engine"]["run_id"] != claim["run_id"]
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")


def test_a_run_claiming_while_another_writes_its_claim_is_not_an_error_writing_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run's whole claim is written while the first's is under its temporary name. With
    one temporary name for every writer, the second's move took the first's file away: the first
    stopped with `cannot write ...: No such file` (a FileNotFoundError), not as a run sharing the
    output. Each writer's own temporary name: both moves land, the last holds, the other is fenced
    (two runs within one read of each other, the window plain puts leave)."""
    from trajectory_compressor import faults
    from trajectory_compressor.ray.claim import OutputClaim, read_claim

    layout, clock = uri_layout(tmp_path), Clock()
    with OutputClaim(layout, locked=False, lease=LEASE, clock=clock):
        pass  # the folder made and marked by an earlier run, its claim ended
    second = OutputClaim(layout, locked=False, lease=LEASE, clock=clock)
    calls: list[str] = []

    def between_write_and_move(name: str) -> None:
        calls.append(name)
        if len(calls) == 1:  # the first run's claim written, not moved yet: the second claims
            second.__enter__()

    monkeypatch.setattr(faults, "boundary", between_write_and_move)
    first = OutputClaim(layout, locked=False, lease=LEASE, clock=clock)
    first.__enter__()
    monkeypatch.setattr(faults, "boundary", lambda name: None)
    held = read_claim(layout)
    assert held is not None and held.run_id == first.run_id
    assert second.lost() is not None and first.lost() is None
    second.__exit__(None, None, None)
    first.__exit__(None, None, None)
    ended = read_claim(layout)
    assert ended is not None and ended.run_id == first.run_id and ended.ended
    # A driver killed between its write and its move leaves its own temporary name: the tool's file.
    (tmp_path / "out" / "x.part_records" / f".claim.json.{second.run_id}.tmp").write_bytes(b"{}")
    check_output_folders(layout)


def test_a_run_refused_before_any_work_leaves_no_records_folder_it_made(tmp_path: Path) -> None:
    """A refusal after the claim (a local -o one node does not share: exit 2, before any work)
    left `x.part_records/claim.json` where the user had nothing; a folder that was there keeps
    its claim, ended, as any other end keeps it."""
    from trajectory_compressor.ray.claim import OutputClaim, read_claim

    layout = uri_layout(tmp_path)
    with pytest.raises(UsageError), OutputClaim(layout, locked=False, lease=LEASE, clock=Clock()):
        raise UsageError("-o is not on storage every node shares")
    assert not (tmp_path / "out" / "x.part_records").exists()
    with OutputClaim(layout, locked=False, lease=LEASE, clock=Clock()):
        pass  # an ordinary end: the claim stays, ended
    with pytest.raises(UsageError), OutputClaim(layout, locked=False, lease=LEASE, clock=Clock()) as refused:
        raise UsageError("refused")
    found = read_claim(layout)
    assert found is not None and found.run_id == refused.run_id and found.ended


@pytest.mark.parametrize("lease", ["0", "-5", "two minutes", "nan", "inf"])
def test_a_claim_lease_that_is_no_positive_number_is_refused_before_anything_is_written(
    tmp_path: Path, lease: str
) -> None:
    """`TC_RAY_CLAIM_SECONDS=0` made every claim stale at once (any second run took the output
    over, and the renewal thread renewed without a pause); text raised ValueError on import, an
    internal error. Both are one line, exit 2, as a bad setting, and nothing is written."""
    result = run_cli(
        "compress", str(SAMPLE), "-o", f"file://{tmp_path}/out/x.jsonl", "--engine", "ray", "--dry-run",
        env={"TC_RAY_CLAIM_SECONDS": lease},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: TC_RAY_CLAIM_SECONDS must be a positive number of seconds (the claim's lease), got {lease!r}"
    ]
    assert not (tmp_path / "out").exists()


def test_a_local_run_does_not_take_over_a_live_run_writing_the_same_folder_as_a_file_uri(tmp_path: Path) -> None:
    """`-o file:///d/x.jsonl` holds no lock (the code path of `s3://`), only its claim; a run with
    `-o /d/x.jsonl` holds the lock, and took any claim it found for a gone run's: it took the live
    `file://` run's over, which then stopped, exit 1, its work lost. To a lock holder, only a claim
    whose driver held the lock too is a gone run's (a local driver SIGKILLed: taken at once)."""
    from trajectory_compressor.ray.claim import (
        Claim,
        OutputClaim,
        OutputClaimedError,
        hold_output,
        read_claim,
        write_claim,
    )

    uri = uri_layout(tmp_path)
    local = RayOutputLayout.beside(f"{tmp_path}/out/x.jsonl")
    with hold_output(uri, LEASE) as first:
        refused = f"another run is writing {local.data}: run {first.run_id} "
        with pytest.raises(OutputClaimedError, match=refused), hold_output(local, LEASE):
            pass
        assert first.lost() is None  # still its own
        assert json.loads((tmp_path / "out" / "x.part_records" / "claim.json").read_bytes())["locked"] is False
    with hold_output(local, LEASE) as second:  # the file:// run ended: at once
        found = read_claim(local)
        assert found is not None and found.run_id == second.run_id and found.locked
        written = json.loads((tmp_path / "out" / "x.part_records" / "claim.json").read_bytes())
        assert "locked" not in written  # the schema earlier versions read: they refuse it as a live claim
    s3 = RayOutputLayout.beside("s3://bucket/out/x.jsonl")
    assert OutputClaim(s3, locked=False, lease=LEASE).claim.locked  # no lock can be held beside it: not written
    lost = Claim.new(time.time(), locked=True)  # a local driver SIGKILLed a moment ago: never ended
    write_claim(local, lost)
    with hold_output(local, LEASE) as third:
        assert read_claim(local).run_id == third.run_id  # type: ignore[union-attr]
