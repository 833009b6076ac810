"""A multi-node Ray cluster on this machine, for `tests/ray/test_multinode.py`.

A head and worker nodes, each `ray start` with its own raylet, object store, ports and custom
resource (`head`, `w1`, `w2`), a private HOME (a `~/.ray` left by another process cannot
refuse the nodes' auth) and a private temp dir. A worker node may be started in a mount
namespace of its own (`unshare -m`, root only) with an empty tmpfs over a folder: that node
then sees its own empty folder where the others share the real one, as a second machine's
local disk does.

Everything started here is stopped by PID, never by `ray stop` (which stops every Ray of the
machine): the processes whose command line names the cluster's temp dir or GCS port, and their
descendants. A node is lost by killing its raylet (told apart by `--node_manager_port`) and
every process under it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READY_SECONDS = 120
_START_ATTEMPTS = 3
_PORT_TAKEN = ("already in use", "Failed to start the grpc server")  # in a failed `ray start`'s log
# Ray gives a raylet a fixed 30 s to register with the GCS; on two cores busy with another test
# worker's suite it missed that once in CI (all five multinode tests errored at setup): retried.
_SLOW_START = ("timed out during startup",)
RAY = str(Path(sys.executable).with_name("ray"))


_CHOSEN: set[int] = set()  # ports handed out in this process: never handed out twice


def _kernel_port() -> int:
    """A port the kernel says is free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def free_port() -> int:
    """A port free now and not handed out before (the kernel may give a just-closed probe's port
    again, and two of a node's components on one port fail its `ray start`)."""
    while True:
        port = _kernel_port()
        if port not in _CHOSEN:
            _CHOSEN.add(port)
            return port


def free_range(size: int) -> int:
    """The first port of `size` consecutive free ports (checked by binding each), none handed out before."""
    for _ in range(200):
        start = _kernel_port()
        if start + size > 65000 or _CHOSEN.intersection(range(start, start + size)):
            continue
        sockets = []
        try:
            for port in range(start, start + size):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
        _CHOSEN.update(range(start, start + size))
        return start
    raise RuntimeError("no range of free ports")


def node_ports() -> dict[str, int]:
    """The ports one node listens on, each free now (`--min/max-worker-port`: a range of 40)."""
    worker_ports = free_range(40)
    ports = {
        name: free_port()
        for name in (
            "node-manager-port",
            "object-manager-port",
            "dashboard-agent-listen-port",
            "dashboard-agent-grpc-port",
            "runtime-env-agent-port",
            "metrics-export-port",
        )
    }
    return {**ports, "min-worker-port": worker_ports, "max-worker-port": worker_ports + 39}


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process of the machine."""
    table: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        table[int(entry.name)] = (parent, command)
    return table


def descendants(roots: set[int], table: dict[int, tuple[int, str]]) -> set[int]:
    found = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, (parent, _) in table.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def kill_pids(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Node:
    name: str  # its custom resource: head, w1, w2
    ports: dict[str, int]
    private_folder: Path | None = None  # a tmpfs over this folder, seen by this node only

    @property
    def manager_port(self) -> int:
        return self.ports["node-manager-port"]


@dataclass
class SimulatedCluster:
    """A head and worker nodes on this machine; `stop()` ends every process they started."""

    root: Path  # the cluster's own folder (HOME, logs)
    temp_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tcmn-", dir="/tmp")))
    gcs_port: int = field(default_factory=free_port)
    nodes: list[Node] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    def env(self) -> dict[str, str]:
        """The environment of the nodes and of a driver joining them (private HOME, quick node death)."""
        home = self.root / "home"
        home.mkdir(parents=True, exist_ok=True)
        inherited = {name: value for name, value in os.environ.items() if name not in ("RAY_ADDRESS",)}
        return {
            **inherited,
            "HOME": str(home),
            # Explicit: a local `ray.init` earlier in this process sets RAY_AUTH_MODE=token in
            # os.environ when it finds a token in the real ~/.ray; the nodes have no token.
            "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0",
            # A lost node is declared dead after ~1.5 s, not the default ~30 s.
            "RAY_health_check_period_ms": "500",
            "RAY_health_check_timeout_ms": "500",
            "RAY_health_check_failure_threshold": "3",
            "TC_RAY_LEASE_SECONDS": "2",
        }

    def start(self, *, private_folder: Path | None = None) -> SimulatedCluster:
        """Head (1 CPU, resource `head`), `w1` (1 CPU), `w2` (1 CPU, a private tmpfs over
        `private_folder` when given)."""
        self._start_node(Node("head", node_ports()), head=True)
        self._start_node(Node("w1", node_ports()))
        self._start_node(Node("w2", node_ports(), private_folder))
        self.wait_for_nodes(3)
        return self

    def _start_node(self, node: Node, *, head: bool = False) -> None:
        """`ray start` the node. A port free when it was chosen can be taken before `ray start`
        binds it (by another Ray of the machine), and a loaded machine can make a raylet miss
        Ray's start-up deadline: that start is cleaned up and tried again on new ports, up to
        `_START_ATTEMPTS` times; any other failure is raised at once."""
        log_path = self.root / f"start-{node.name}.log"
        if node.private_folder is not None:
            node.private_folder.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, _START_ATTEMPTS + 1):
            with open(log_path, "wb") as log:
                done = subprocess.run(
                    self._command(node, head),
                    env=self.env(),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=READY_SECONDS,
                )
            if done.returncode == 0:
                self.nodes.append(node)
                return
            text = log_path.read_text(errors="replace")
            if attempt == _START_ATTEMPTS or not any(sign in text for sign in (*_PORT_TAKEN, *_SLOW_START)):
                raise RuntimeError(f"ray start ({node.name}) failed: {text}")
            if head:  # every process of the failed head: named by its temp dir and GCS port
                kill_pids(self.own_pids())
                self.gcs_port = free_port()
            else:
                raylet = self.raylet_pid(node)
                kill_pids(descendants({raylet}, process_table()) if raylet is not None else set())
            node.ports = node_ports()

    def _command(self, node: Node, head: bool) -> list[str]:
        base = [RAY, "start", "--num-cpus=1", f"--resources={json.dumps({node.name: 1})}", "--disable-usage-stats"]
        base += [f"--{name}={port}" for name, port in node.ports.items()]
        if head:
            base += ["--head", f"--port={self.gcs_port}", f"--temp-dir={self.temp_dir}", "--include-dashboard=false"]
        else:
            base += [f"--address={self.address}"]
        if node.private_folder is None:
            return base
        script = 'mount -t tmpfs none "$1" && shift && exec "$@"'
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(node.private_folder), *base]

    def wait_for_nodes(self, count: int) -> None:
        self.wait_for(f"{count} alive nodes", lambda: len(self.alive_nodes()) == count)

    def alive_nodes(self) -> list[dict[str, Any]]:
        """The GCS's alive nodes (asked by a short-lived process, so this one never joins Ray)."""
        code = (
            "import json, ray;"
            f"ray.init(address={self.address!r}, logging_level='ERROR', log_to_driver=False);"
            "print(json.dumps([n for n in ray.nodes() if n['Alive']], default=str))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], env=self.env(), capture_output=True, text=True, timeout=READY_SECONDS
        )
        if done.returncode != 0:
            return []
        return list(json.loads(done.stdout.strip().splitlines()[-1]))

    @staticmethod
    def wait_for(what: str, condition: Callable[[], Any], seconds: float = READY_SECONDS) -> Any:
        """Poll `condition` until true (a known state of the cluster or the run), or fail naming `what`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def raylet_pid(self, node: Node) -> int | None:
        for pid, (_, command) in process_table().items():
            if "raylet" in command.split(" ", 1)[0] and f"--node_manager_port={node.manager_port}" in command:
                return pid
        return None

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    def kill_node(self, node: Node) -> None:
        """The node is lost: its raylet and every process under it killed at once."""
        raylet = self.raylet_pid(node)
        assert raylet is not None, f"no raylet for {node.name}"
        kill_pids(descendants({raylet}, process_table()))

    def replace_node(self, lost: Node) -> None:
        """A new node in place of a lost one (same resource, same private folder, new ports)."""
        self.wait_for(f"{lost.name} to be dead", lambda: self.raylet_pid(lost) is None)
        self.nodes.remove(lost)
        self._start_node(Node(lost.name, node_ports(), lost.private_folder))
        self.wait_for_nodes(len(self.nodes))

    def compress_workers_on(self, node: Node) -> list[int]:
        """The processes of the run's compress actors (Ray Data titles them after `CompressWorker`) on `node`."""
        raylet = self.raylet_pid(node)
        if raylet is None:
            return []
        table = process_table()
        return [pid for pid in descendants({raylet}, table) if "CompressWorker" in table[pid][1]]

    def actor_pids(self, class_name: str) -> list[int]:
        """The processes of live actors of `class_name` (titled `ray::<ClassName>`) on this cluster's nodes
        (other Rays of the machine have actors of that name too: never theirs)."""
        table = process_table()
        raylets = {pid for node in self.nodes if (pid := self.raylet_pid(node)) is not None}
        return [pid for pid in descendants(raylets, table) if table[pid][1].startswith(f"ray::{class_name}")]

    def node_of(self, pid: int) -> Node | None:
        """The node a worker or actor process belongs to (the raylet it descends from)."""
        table = process_table()
        for node in self.nodes:
            raylet = self.raylet_pid(node)
            if raylet is not None and pid in descendants({raylet}, table):
                return node
        return None

    def own_pids(self) -> set[int]:
        """Every process this cluster started: named by its temp dir or GCS port, and their descendants."""
        table = process_table()
        marks = (str(self.temp_dir), f":{self.gcs_port}")
        roots = {pid for pid, (_, command) in table.items() if any(mark in command for mark in marks)}
        roots.discard(os.getpid())
        return descendants(roots, table) - {os.getpid()}

    def stop(self) -> None:
        for _ in range(20):
            pids = self.own_pids()
            if not pids:
                break
            kill_pids(pids)
            time.sleep(0.2)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@contextlib.contextmanager
def simulated_cluster(root: Path, private_folder: Path | None = None) -> Iterator[SimulatedCluster]:
    cluster = SimulatedCluster(root)
    try:
        yield cluster.start(private_folder=private_folder)
    finally:
        cluster.stop()
