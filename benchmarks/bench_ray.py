"""Judge runs on a Ray cluster vs the local runner: throughput over 1 and 2 endpoints, overhead per call.

A local two-node Ray cluster (tests/support/ray_cluster.py) and stub chat endpoints from
benchmarks/bench_judges.py, each in its own process, answering after 100 ms like a
hosted API: the endpoints cost no CPU, so the rows measure the engines, not a model
sharing the 2 cores. The same calls (fresh studies, empty caches) go through

- the local runner at the judge's concurrency (4) to one endpoint, and at 8 to one
  endpoint (the total concurrency of the two-endpoint Ray run);
- the Ray engine with 4 HTTP actors per endpoint, over 1 and over 2 endpoints.

Rates are labels per second between the first and the last label, so the fixed cost of a
Ray run (joining the cluster, planning the Dataset, starting its actors) is reported apart,
as the time to the first label. The overhead per call on Ray is the steady-state wall time
per label against an instant stub, beside the local runner's.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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


@dataclass(frozen=True, kw_only=True)
class _Timing:
    total_s: float  # the whole run_judges call
    first_s: float  # until the first label: joining the cluster, planning, starting actors
    steady_s: float  # first label to last

    def rate(self, n: int) -> float:
        """Labels per second once answers flow: (n - 1) intervals between first and last label."""
        return (n - 1) / self.steady_s


def _timed(judge, n: int, tag: str, tmp: Path) -> _Timing:
    from judges.runner import StudyPaths, run_judges

    stamps: list[float] = []
    started = time.perf_counter()
    summary = run_judges(_units(n, tag), [judge], StudyPaths.in_dir(tmp / tag / "judges"),
                         on_label=lambda _: stamps.append(time.perf_counter()))
    total = time.perf_counter() - started
    stats = summary.judges[0]
    if stats.calls != n or stats.failed:
        raise RuntimeError(f"{tag}: {stats.calls} calls, {stats.failed} failed of {n}")
    return _Timing(total_s=total, first_s=stamps[0] - started, steady_s=stamps[-1] - stamps[0])


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
            instant_ray = _timed(_judge(instant, CONCURRENCY, ray), n, "ray-instant", tmp)
            instant_local = _timed(_judge(instant, CONCURRENCY), n, "local-instant", tmp)
    finally:
        cluster.stop()
        for stub, _ in stubs:
            stub.terminate()
            stub.wait()
    ceiling = CONCURRENCY / LATENCY_S
    setting = (f"{n} calls to stub endpoints answering after {LATENCY_S * 1000:g} ms (own processes, no CPU), "
               f"two-node local Ray cluster on the same 2 shared cores; labels/s between the first and the last label")

    def per_call(t: _Timing) -> float:
        return t.steady_s / (n - 1) * 1000

    return [
        {"benchmark": f"judges on Ray: {n} calls, 1 endpoint, 4 actors", "accord": f"{ray1.rate(n):.1f} labels/s",
         "peer": f"local runner, concurrency 4: {local4.rate(n):.1f} labels/s",
         "ratio": f"{ray1.rate(n) / local4.rate(n):.2f}x the local rate", "target": "", "met": None,
         "notes": f"{setting}; ceiling at concurrency 4: {ceiling:g}/s; whole run {ray1.total_s:.1f} s on Ray (first "
                  f"label after {ray1.first_s:.1f} s) vs {local4.total_s:.1f} s local"},
        {"benchmark": f"judges on Ray: {n} calls, 2 endpoints, 4 actors each", "accord": f"{ray2.rate(n):.1f} labels/s",
         "peer": f"local runner, concurrency 8 (one endpoint): {local8.rate(n):.1f} labels/s",
         "ratio": f"{ray2.rate(n) / local8.rate(n):.2f}x the local rate; {ray2.rate(n) / ray1.rate(n):.2f}x the "
                  f"1-endpoint Ray rate", "target": "", "met": None,
         "notes": f"{setting}; keys dealt round-robin over the endpoints; ceiling at concurrency 8: {2 * ceiling:g}/s; "
                  f"whole run {ray2.total_s:.1f} s on Ray (first label after {ray2.first_s:.1f} s) vs "
                  f"{local8.total_s:.1f} s local"},
        {"benchmark": "judges on Ray: time per call, instant endpoint", "accord": f"{per_call(instant_ray):.1f} ms/call",
         "peer": f"local runner: {per_call(instant_local):.1f} ms/call",
         "ratio": f"+{per_call(instant_ray) - per_call(instant_local):.1f} ms/call on Ray", "target": "", "met": None,
         "notes": f"a stub answering at once, concurrency 4, {n} calls: steady-state wall time per label (Dataset "
                  f"blocks, Arrow rows, actor hops, the driver's cache commit and label line); fixed cost per Ray run "
                  f"(join the cluster, plan, start actors) {instant_ray.first_s:.1f} s to the first label"},
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
