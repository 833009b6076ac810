"""Before a run on several nodes: is every local path it uses the same storage on every node?

A local `-o` names a folder on each machine. Where the nodes do not share it, each worker
writes its parts to its own machine's disk and the driver's folder holds only its own node's
share: a run once said `completed` with most of its rows on other machines. So before any
work, the driver writes a probe file (a random token) into the output's folder, the cache
folder and every existing output folder, and one task pinned to each alive node (node
affinity, not soft, no CPU asked) reads them back and looks at each local input file's size.

* an output folder or an input a node does not see as the driver does: the run is refused in
  one line, before anything is written, naming `s3://` / `gs://` or storage every node mounts;
* a cache folder a node does not share: a warning (summaries that node stores are seen by no
  other node nor by a re-run elsewhere: they are asked for again), and the run goes on.

One node (a local Ray, or a cluster of one machine): nothing to check. Nodes that join after
the check (an autoscaler) are not checked. Every wait is bounded: a node that does not answer
within `TC_RAY_PROBE_SECONDS` (120 s) stops the run as a lost node does.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.errors import RunAborted, UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.messages import quoted
from trajectory_compressor.ray.layout import PROBE_PREFIX
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.read.sources import InputSource

PROBE_SECONDS = 120.0  # the default; a run's comes from `TC_RAY_PROBE_SECONDS` (`environment`)
PROBE_NAME = PROBE_PREFIX + "{token}"  # token_hex(16): `layout` knows the name as ours, a stale one deleted
SHARED = "write to s3:// or gs:// (any URI pyarrow reads), or to a folder every node mounts (NFS, a PVC)"


class NotSharedError(UsageError):
    """A local path of the run is not the same storage on every node."""


@dataclass(frozen=True)
class NodeView:
    """What one node saw: which probes it read back, and the first input it does not see."""

    node: str  # the node's address and id, as messages name it
    probes: tuple[bool, ...]
    missing_input: str | None


def look(
    probes: Sequence[tuple[str, str]], inputs: Sequence[tuple[str, int]], node: str, times: Sequence[int]
) -> NodeView:
    """On one node: each probe read back (path, token), each input's size compared, and its
    modification time (`times`, ns, in the order of `inputs`): a node's own copy of a file, as
    long as the driver's, is another file."""
    seen = []
    for path, token in probes:
        try:
            with open(path, encoding="utf-8") as handle:
                seen.append(handle.read() == token)
        except OSError:
            seen.append(False)
    missing = None
    for number, (path, size) in enumerate(inputs):
        try:
            found = os.stat(path)
            if found.st_size == size and (number >= len(times) or found.st_mtime_ns == times[number]):
                continue
        except OSError:
            pass
        missing = path
        break
    return NodeView(node, tuple(seen), missing)


def check_shared_storage(
    outputs: Sequence[str],
    cache_folder: str | None,
    sources: Sequence[InputSource],
    say: Callable[[str], None],
    wait: float = PROBE_SECONDS,
) -> None:
    """Refuse local outputs or inputs some node does not share; warn about such a cache folder.

    `outputs`: the run's local output folders (absolute; the first one's parent is where the
    run makes them). A URI needs no check: every node reaches it the same way.
    """
    import ray

    nodes = [node for node in ray.nodes() if node.get("Alive")]
    local_outputs = [path for path in outputs if not is_uri(path)]
    if len(nodes) <= 1 or not (local_outputs or cache_folder or sources):
        return
    folders = _probe_folders(local_outputs)
    cache = [cache_folder] if cache_folder and not is_uri(cache_folder) else []
    token = secrets.token_hex(16)
    probes: list[tuple[str, str]] = []
    made: list[str] = []
    try:
        for folder in [*folders, *cache]:
            made.extend(_make_folder(folder))
            path = os.path.join(folder, PROBE_NAME.format(token=token))
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(token)
            probes.append((path, token))
        inputs, times = _input_stats(sources)
        views = _ask_every_node(nodes, probes, inputs, times, wait)
    finally:
        for path, _ in probes:
            with contextlib.suppress(OSError):
                os.unlink(path)
    output_probes = len(folders)
    for view in views:
        if not all(view.probes[:output_probes]):
            folder = folders[view.probes.index(False)]
            _remove_empty(made)
            raise NotSharedError(
                f"-o {quoted(local_outputs[0])} is not on storage every node shares (node {view.node} does not see "
                f"{quoted(folder)} as this one does): {SHARED}"
            )
        if view.missing_input is not None:
            _remove_empty(made)
            raise NotSharedError(
                f"the input {quoted(view.missing_input)} is not on storage every node shares (node {view.node} does "
                f"not see it as this one does): read it from s3:// or gs://, or from a folder every node mounts"
            )
    unshared = [view.node for view in views if not all(view.probes[output_probes:])]
    if unshared:
        say(
            f"warning: the cache folder {quoted(cache[0])} is not shared by every node (node {unshared[0]} does not "
            "see it as this one does): summaries stored there are not seen by the other nodes nor by a re-run "
            "elsewhere, and are asked for again; put --cache on storage every node mounts"
        )


def _probe_folders(outputs: Sequence[str]) -> list[str]:
    """Where the outputs go: their common parent (made if missing), and each output folder that exists
    (a folder that is a mount point of its own is checked too)."""
    parents = sorted({os.path.dirname(path.rstrip("/")) for path in outputs})
    return [*parents, *(path for path in outputs if os.path.isdir(path))]


def _make_folder(folder: str) -> list[str]:
    """`os.makedirs`, returning the folders it made (removed again if the run is refused)."""
    missing = []
    current = folder
    while current and not os.path.exists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    os.makedirs(folder, exist_ok=True)
    return missing


def _remove_empty(folders: Sequence[str]) -> None:
    for folder in folders:  # deepest first, as `_make_folder` lists them
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _input_stats(sources: Sequence[InputSource]) -> tuple[list[tuple[str, int]], list[int]]:
    """Each local input file's (path, size), and its modification time (ns), from one `stat`."""
    sizes, times = [], []
    for source in sources:
        path = source.path or source.name
        if is_uri(path) or not os.path.isfile(path):
            continue  # a URI is the same everywhere; a directory input is read whole by one task
        found = os.stat(path)
        sizes.append((path, found.st_size))
        times.append(found.st_mtime_ns)
    return sizes, times


def _ask_every_node(
    nodes: Sequence[dict[str, Any]],
    probes: Sequence[tuple[str, str]],
    inputs: Sequence[tuple[str, int]],
    times: Sequence[int] = (),
    wait: float = PROBE_SECONDS,
) -> list[NodeView]:
    """One `look` task pinned to each node (no CPU asked: it runs beside whatever holds them)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(look)
    refs = []
    for node in nodes:
        name = f"{node.get('NodeManagerAddress')}:{node.get('NodeManagerPort')} ({node['NodeID'][:12]})"
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        refs.append(task.options(scheduling_strategy=strategy).remote(list(probes), list(inputs), name, list(times)))
    try:
        return list(ray.get(refs, timeout=wait))
    except ray.exceptions.GetTimeoutError:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise RunAborted(
            f"a node did not answer the check of the output storage within {wait:g} s (lost?); re-run the same command",
            ExitCode.LOST,
        ) from None
    except ray.exceptions.RayError as exc:
        raise RunAborted(
            f"a node was lost during the check of the output storage ({type(exc).__name__}); re-run the same command",
            ExitCode.LOST,
        ) from None
