"""A real two-node Ray cluster on this machine, one per test module (the ``ray`` marker).

``ray start --head --block`` and ``ray start --address ... --block`` each run in their own
process group, so stopping a node ends its raylet, GCS and workers and nothing else on
the machine (never ``ray stop``, which ends every Ray process of every user). Their pids
go to ``.run/ray-*-tests.pid`` so scripts/stop_services.sh ends a leftover. The object
stores are small (the machine is shared); the CPU counts are logical, so I/O-bound HTTP
actors fit on both nodes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.servers import free_port, worker_tag

REPO = Path(__file__).resolve().parents[2]
OBJECT_STORE_BYTES = 80 * 1024 * 1024
NODE_CPUS = 4
# The GCS declares a node dead after `failure_threshold` failed health checks `period_ms` apart: by default
# 5 x 3 s, which a killed worker node's run waited out in every worker-kill test. A killed raylet refuses
# the check at once, so 4 x 0.5 s finds it in about 2 s; a live but CPU-starved raylet (2 shared cores) still
# has 4 x (0.5 s + a 3 s timeout) to answer before it is wrongly declared dead. Test cluster only: a real
# cluster keeps Ray's defaults.
NODE_DEATH_DETECTION = {"RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "3000",
                        "RAY_health_check_failure_threshold": "4"}


def _ray_cli() -> list[str]:
    """Ray's CLI through this interpreter, not the venv's ``ray`` script: the script's shebang names
    the interpreter that installed it, which is gone when the venv was moved or is shared by path."""
    return [sys.executable, "-m", "ray.scripts.scripts"]


@dataclass
class RayCluster:
    """The head node and one worker node; ``address`` is what ``--ray-address`` takes."""

    temp_dir: Path
    port: int = field(default_factory=free_port)
    head: subprocess.Popen | None = None
    worker: subprocess.Popen | None = None
    joining: int | None = None  # the node-manager port of a worker node started but not yet waited for

    @property
    def address(self) -> str:
        from ray.util import get_node_ip_address

        return f"{get_node_ip_address()}:{self.port}"  # where Ray's GCS listens and what it advertises

    def _start(self, role: str, args: list[str]) -> subprocess.Popen:
        log = (self.temp_dir / f"{role}.log").open("ab")
        process = subprocess.Popen(
            [*_ray_cli(), "start", "--block", "--num-cpus", str(NODE_CPUS),
             "--object-store-memory", str(OBJECT_STORE_BYTES), "--disable-usage-stats",
             "--dashboard-agent-listen-port", str(free_port()), "--metrics-export-port", str(free_port()), *args],
            cwd=REPO, env={**os.environ, **NODE_DEATH_DETECTION}, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        (REPO / ".run").mkdir(exist_ok=True)
        (REPO / ".run" / f"ray-{role}-tests{worker_tag()}.pid").write_text(str(process.pid))
        return process

    def start(self) -> RayCluster:
        self.head = self._start("head", ["--head", "--port", str(self.port), "--include-dashboard", "false",
                                         "--temp-dir", str(self.temp_dir)])
        self.wait_nodes(1, self.head)
        self.start_worker()
        return self

    def start_worker(self, *, wait: bool = True) -> None:
        """A (new) worker node joined to the head. ``wait`` False: it joins while the caller goes on, and
        ``ready()`` waits for it (a node start costs seconds that a test checking its study need not wait)."""
        self.joining = free_port()
        self.worker = self._start("worker", ["--address", self.address, "--node-manager-port", str(self.joining)])
        if wait:
            self.ready()

    def ready(self) -> RayCluster:
        """Both nodes alive: a joining worker node counted and the one it replaces no longer counted."""
        if self.joining is not None:
            self.wait_nodes(2, self.worker, node_manager_port=self.joining)
            self.joining = None
        return self

    def kill_worker(self) -> None:
        """SIGKILL the worker node: ``ray start``, its raylet and every process below it (Ray's
        worker processes lead their own process groups, so the group alone is not the node)."""
        _kill(self.worker.pid)
        self.worker.wait()
        (REPO / ".run" / f"ray-worker-tests{worker_tag()}.pid").unlink(missing_ok=True)

    def worker_processes(self, name: str) -> int:
        """How many live processes below the worker node's ``ray start`` have ``name`` in their command line."""
        return sum(name in cmdline for cmdline in _descendants(self.worker.pid).values())

    def drivers(self) -> int:
        """How many drivers have joined the cluster: Ray writes a core-driver log per job on this machine."""
        return len(list((self.temp_dir / "session_latest" / "logs").glob("python-core-driver-*.log")))

    def wait_nodes(self, count: int, process: subprocess.Popen, timeout_s: float = 180.0, *,
                   node_manager_port: int | None = None) -> None:
        """Until the GCS's node table (what a judge run's ``ray.nodes()`` reads) holds ``count`` alive nodes,
        one of them listening on ``node_manager_port`` if given (a killed node counts until it is found dead).
        Asked over Ray's own GCS client, not from a fresh driver process per poll: each such probe cost a
        Python start and a ``ray.init`` (seconds on 2 shared cores), several times per node start."""
        from ray._raylet import GcsClient  # Ray's private client, as pinned in pyproject.toml (ray 2.60)
        from ray.core.generated.gcs_pb2 import GcsNodeInfo

        deadline = time.monotonic() + timeout_s
        client = None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"ray start exited with {process.returncode}; see {self.temp_dir}")
            try:
                client = client or GcsClient(address=self.address)
                alive = client.get_all_node_info(timeout=10, state_filter=GcsNodeInfo.GcsNodeState.ALIVE)
            except Exception:  # the head's GCS is not up yet (or too busy to answer in time)
                alive = {}
            if len(alive) == count and (node_manager_port is None or node_manager_port in
                                        {node.node_manager_port for node in alive.values()}):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Ray cluster did not reach {count} node(s) in {timeout_s:g} s; see {self.temp_dir}")

    def stop(self) -> None:
        """SIGKILL both nodes and everything below them. A TERMed ``ray start --block`` winds its
        node down for longer than a 20 s grace (so the session waited for it twice), and this
        cluster's state is thrown away with its temp dir anyway."""
        for role, process in (("worker", self.worker), ("head", self.head)):
            if process is not None and process.poll() is None:
                _kill(process.pid)
                process.wait()
            (REPO / ".run" / f"ray-{role}-tests{worker_tag()}.pid").unlink(missing_ok=True)


def _processes() -> dict[int, tuple[int, str]]:
    """Every live process: pid -> (parent pid, command line)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            found[int(stat.parent.name)] = (int(fields[1]), cmdline)
    return found


def _descendants(root: int) -> dict[int, str]:
    table = _processes()
    below: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, cmdline) in table.items():
            if ppid == parent and pid not in below:
                below[pid] = cmdline
                frontier.append(pid)
    return below


def _kill(root: int) -> None:
    """SIGKILL ``root`` and everything below it (listed first: a dead parent's children are re-parented)."""
    import signal

    for pid in [*_descendants(root), root]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    """One two-node cluster for the ``ray`` tests of a module (all of them are in tests/judges/test_ray.py, so it
    starts once); it stops when the module ends, since an idle cluster's raylets, GCS and monitors took CPU from
    the rest of the service tier. A missing Ray is a failure naming the extra."""
    try:
        import ray.data.llm  # noqa: F401
    except ImportError:
        pytest.fail("Ray is not installed: pip install -e '.[ray]'")
    # A short path: Ray's unix sockets live under it and must stay under the 107-byte limit.
    temp_dir = Path(tempfile.mkdtemp(prefix="accray", dir="/tmp"))
    cluster = RayCluster(temp_dir=temp_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(temp_dir, ignore_errors=True)
