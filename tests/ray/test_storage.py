"""The shared-storage check's decisions, in-process: what a node reads back, and what the driver makes of it.

The three-node tests (`test_multinode.py`, slow suite) run the whole check on a simulated
cluster whose worker node has its own disk. Here the same check runs with two alive nodes
listed (`ray.nodes` patched) and each node's reading done by `look` itself, in this process, one
of them looking at another machine's disk (a different root): so every branch of the driver's
decision is held, and the probe files and folders it makes are seen cleaned up.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from trajectory_compressor.read.sources import InputSource

ray = pytest.importorskip("ray")
storage = pytest.importorskip("trajectory_compressor.ray.storage")

pytestmark = pytest.mark.ray

NODES = [
    {"NodeID": "a" * 56, "Alive": True, "NodeManagerAddress": "10.0.0.1", "NodeManagerPort": 1},
    {"NodeID": "b" * 56, "Alive": True, "NodeManagerAddress": "10.0.0.2", "NodeManagerPort": 2},
    {"NodeID": "c" * 56, "Alive": False, "NodeManagerAddress": "10.0.0.3", "NodeManagerPort": 3},
]


def test_a_node_reads_each_probe_back_and_names_the_first_input_it_does_not_see(tmp_path: Path) -> None:
    good, other = tmp_path / "good", tmp_path / "other"
    good.write_text("token-1")
    other.write_text("not the token")
    same, changed = tmp_path / "same.jsonl", tmp_path / "changed.jsonl"
    same.write_text("abc")
    changed.write_text("abcd")
    probes = [(str(good), "token-1"), (str(tmp_path / "absent"), "token-1"), (str(other), "token-1")]
    inputs = [(str(same), 3), (str(changed), 3), (str(tmp_path / "never.jsonl"), 1)]
    view = storage.look(probes, inputs, "node-x", ())
    assert view == storage.NodeView("node-x", (True, False, False), str(changed))
    assert storage.look([], [(str(same), 3)], "node-x", ()).missing_input is None


def _cluster(monkeypatch: pytest.MonkeyPatch, elsewhere: Path | None, *, hide: str = "") -> list[list[str]]:
    """Two alive nodes (and a dead one); the second sees the disk under `elsewhere` instead of
    this one for paths containing `hide` (every path when empty). Returns each call's probe paths."""
    monkeypatch.setattr(ray, "nodes", lambda: NODES)
    asked: list[list[str]] = []

    def ask(
        nodes: Sequence[dict[str, object]],
        probes: Sequence[tuple[str, str]],
        inputs: Sequence[tuple[str, int]],
        times: Sequence[int] = (),
        wait: float = 0,
    ) -> list[object]:
        assert [node["NodeID"] for node in nodes] == [NODES[0]["NodeID"], NODES[1]["NodeID"]]  # the alive ones
        asked.append([path for path, _ in probes])
        assert all(Path(path).is_file() for path, _ in probes)  # written before any node looks

        def moved(path: str) -> str:
            return str(elsewhere / path.lstrip("/")) if elsewhere is not None and hide in path else path

        moved_inputs = [(moved(p), s) for p, s in inputs]
        second = storage.look([(moved(p), t) for p, t in probes], moved_inputs, "node-b", times)
        return [storage.look(probes, inputs, "node-a", times), second]

    monkeypatch.setattr(storage, "_ask_every_node", ask)
    return asked


def _source(path: Path) -> InputSource:
    return InputSource(name=str(path), kind="jsonl", path=str(path))


def test_outputs_inputs_and_cache_every_node_shares_pass_and_leave_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text("{}\n")
    asked = _cluster(monkeypatch, None)
    said: list[str] = []
    out = tmp_path / "out" / "new" / "x.jsonl"
    storage.check_shared_storage([str(out)], str(tmp_path / "cache"), [_source(data)], said.append)
    assert said == [] and len(asked) == 1 and len(asked[0]) == 2  # the output's folder and the cache folder
    assert not any(Path(path).exists() for path in asked[0])  # the probes are removed
    assert (tmp_path / "out" / "new").is_dir()  # the run's own folder stays: it writes there next


def test_an_output_another_node_does_not_see_is_refused_and_the_folders_made_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cluster(monkeypatch, tmp_path / "other-machine")
    out = tmp_path / "out" / "new" / "x.jsonl"
    with pytest.raises(storage.NotSharedError) as refused:
        storage.check_shared_storage([str(out)], None, [], lambda line: None)
    message = str(refused.value)
    assert message.startswith("-o ") and str(out) in message and "is not on storage every node shares" in message
    assert "node node-b does not see" in message and "s3://" in message and "gs://" in message
    assert not (tmp_path / "out").exists()  # made by the check, empty: removed


def test_an_input_another_node_does_not_see_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "runs" / "in.jsonl"
    data.parent.mkdir()
    data.write_text("{}\n")
    _cluster(monkeypatch, tmp_path / "other-machine", hide="/runs/")
    with pytest.raises(storage.NotSharedError, match=r"the input .*in\.jsonl.* is not on storage every node shares"):
        storage.check_shared_storage([str(tmp_path / "out" / "x.jsonl")], None, [_source(data)], lambda line: None)


def test_a_cache_folder_another_node_does_not_share_is_a_warning_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cluster(monkeypatch, tmp_path / "other-machine", hide="/cache/")
    said: list[str] = []
    storage.check_shared_storage([str(tmp_path / "out" / "x.jsonl")], str(tmp_path / "cache"), [], said.append)
    assert len(said) == 1 and said[0].startswith("warning: the cache folder")
    assert "(node node-b does not see it" in said[0] and "--cache on storage every node mounts" in said[0]


def test_one_node_or_nothing_local_needs_no_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _cluster(monkeypatch, None)
    storage.check_shared_storage(["s3://bucket/out/x.jsonl"], None, [], lambda line: None)  # every path a URI
    monkeypatch.setattr(ray, "nodes", lambda: NODES[:1])
    storage.check_shared_storage([str(tmp_path / "out" / "x.jsonl")], None, [], lambda line: None)
    assert asked == [] and not (tmp_path / "out").exists()


def test_each_alive_node_answers_from_a_task_pinned_to_it(local_ray, tmp_path: Path) -> None:
    """The real tasks on the real (local) node, listed twice as two nodes would be."""
    probe = tmp_path / "probe"
    probe.write_text("t")
    node = next(node for node in ray.nodes() if node.get("Alive"))
    views = storage._ask_every_node([node, node], [(str(probe), "t")], [(str(probe), os.stat(probe).st_size)])
    assert [view.probes for view in views] == [(True,), (True,)]
    assert all(view.missing_input is None and node["NodeID"][:12] in view.node for view in views)
