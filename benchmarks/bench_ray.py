"""Judge runs on a Ray cluster vs the local runner: throughput over 1 and 2 endpoints, overhead per call.

A local two-node Ray cluster (tests/support/ray_cluster.py) and stub chat endpoints from
benchmarks/bench_judges.py, each in its own process, answering after 100 ms like a
hosted API: the endpoints cost no CPU, so the rows measure the engines, not a model
sharing the 2 cores. The same calls (fresh studies, empty caches) go through

- the local runner at the judge's concurrency (4) to one endpoint, and at 8 to one
  endpoint (the total concurrency of the two-endpoint Ray run);
- the Ray engine with 4 HTTP actors per endpoint, over 1 and over 2 endpoints.

The overhead per call on Ray is the slope of wall time over calls against an instant
stub: (T(n) - T(n/4)) / (3n/4), which removes the fixed cost of starting the Dataset's
actors; that fixed cost is reported beside it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_judges import _units

HERE = Path(__file__).resolve().parents[1]
CALLS = 400
LATENCY_S = 0.1
CONCURRENCY = 4


def _stub(delay: float) -> tuple[subprocess.Popen, str]:
    stub = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_judges", "stub", "--delay", str(delay)],
                            stdout=subprocess.PIPE, text=True, cwd=HERE)
    return stub, f"http://127.0.0.1:{int(stub.stdout.readline())}"


def _judge(base_url: str, concurrency: int, ray: dict | None = None):
    from judges.spec import build_judge

    data = {"prompt": "ise-escalate", "provider": "local", "model": "bench-m", "base_url": base_url,
            "params": {"temperature": 0.0, "max_tokens": 2}, "max_retries": 0, "concurrency": concurrency}
    if ray is not None:
        data.update(engine="ray", ray=ray)
    return build_judge(data)


def _timed(judge, n: int, tag: str, tmp: Path) -> float:
    from judges.runner import StudyPaths, run_judges

    started = time.perf_counter()
    summary = run_judges(_units(n, tag), [judge], StudyPaths.in_dir(tmp / tag / "judges"))
    seconds = time.perf_counter() - started
    stats = summary.judges[0]
    if stats.calls != n or stats.failed:
        raise RuntimeError(f"{tag}: {stats.calls} calls, {stats.failed} failed of {n}")
    return seconds


def run(quick: bool = False) -> list[dict]:
    from tests.support.ray_cluster import RayCluster

    n = 100 if quick else CALLS
    stubs = [_stub(LATENCY_S), _stub(LATENCY_S), _stub(0.0)]
    cluster_dir = Path(tempfile.mkdtemp(prefix="accray", dir="/tmp"))
    cluster = RayCluster(temp_dir=cluster_dir)
    try:
        cluster.start()
        (_, slow_a), (_, slow_b), (_, instant) = stubs
        ray = {"address": cluster.address, "batch_size": 4}
        with tempfile.TemporaryDirectory(prefix="accord-bench-ray-") as tmp:
            tmp = Path(tmp)
            _timed(_judge(slow_a, CONCURRENCY, ray), 8, "warm", tmp)  # first-use costs: imports, the Ray Data planner
            local4 = _timed(_judge(slow_a, CONCURRENCY), n, "local4", tmp)
            local8 = _timed(_judge(slow_a, 2 * CONCURRENCY), n, "local8", tmp)
            ray1 = _timed(_judge(slow_a, CONCURRENCY, ray), n, "ray1", tmp)
            ray2 = _timed(_judge(slow_a, CONCURRENCY, {**ray, "endpoints": [slow_a + "/v1", slow_b + "/v1"]}),
                          n, "ray2", tmp)
            small = _timed(_judge(instant, CONCURRENCY, ray), n // 4, "ray-instant-small", tmp)
            large = _timed(_judge(instant, CONCURRENCY, ray), n, "ray-instant", tmp)
    finally:
        cluster.stop()
        for stub, _ in stubs:
            stub.terminate()
            stub.wait()
    per_call_ms = (large - small) / (n - n // 4) * 1000
    fixed_s = small - (n // 4) * per_call_ms / 1000
    ceiling = CONCURRENCY / LATENCY_S
    setting = (f"{n} calls to stub endpoints answering after {LATENCY_S * 1000:g} ms (own processes, no CPU); "
               f"two-node local Ray cluster on the same 2 shared cores; wall time of run_judges incl. joining the cluster")
    return [
        {"benchmark": f"judges on Ray: {n} calls, 1 endpoint, 4 actors", "accord": f"{n / ray1:.1f} calls/s",
         "peer": f"local runner, concurrency 4: {n / local4:.1f} calls/s", "ratio": f"{ray1 / local4:.2f}x slower"
         if ray1 > local4 else f"{local4 / ray1:.2f}x faster", "target": "", "met": None,
         "notes": f"{setting}; ceiling at concurrency 4: {ceiling:g} calls/s; Ray 2.60's HTTP stage sends a batch's "
                  f"requests one after another, so 4 actors x batch 4 overlap 4 calls"},
        {"benchmark": f"judges on Ray: {n} calls, 2 endpoints, 4 actors each", "accord": f"{n / ray2:.1f} calls/s",
         "peer": f"local runner, concurrency 8 (one endpoint): {n / local8:.1f} calls/s",
         "ratio": f"{n / ray2 / (n / ray1):.2f}x the 1-endpoint Ray run", "target": "", "met": None,
         "notes": f"{setting}; keys dealt round-robin over the endpoints; ceiling at concurrency 8: {2 * ceiling:g} "
                  f"calls/s"},
        {"benchmark": "judges on Ray: overhead per call", "accord": f"{per_call_ms:.1f} ms/call",
         "peer": "", "ratio": "", "target": "", "met": None,
         "notes": f"slope of wall time over calls to an instant stub ({n // 4} vs {n} calls, 4 actors): the Dataset, "
                  f"Arrow rows, the driver's cache commit and label line per call; fixed cost per run (join the "
                  f"cluster, start the actors) about {fixed_s:.1f} s"},
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
