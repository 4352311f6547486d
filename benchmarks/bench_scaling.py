"""Past one machine: 20 annotators labelling at once over two coding-app servers on one PostgreSQL
store (target submit p95 < 300 ms), beside the same 20 on one server on the SQLite store.

Twenty annotators, each in their own browser context of one headless chromium, read each unit
for a seeded 1-3 s and label it (the submit round trip of bench_annotate: the Submit key press
until the confirmation and the next task are painted). On PostgreSQL annotator i works at server
i mod 2, both servers on one study store in a PostgreSQL 15 cluster started for the run by
scripts/postgres.sh; on SQLite all twenty share the one server a SQLite store allows. The stores
are then checked for exactly the labels submitted. Everything (cluster, servers, chromium)
shares this machine's 2 cores, which servers and annotators on their own machines would not.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np

from annotate.store import STORE_URL_ENV
from benchmarks.bench_annotate import READING_S, TARGET_MS, _browser_round_trips, _check_stored, _study

ANNOTATORS = 20
SERVERS = 2
REPO = Path(__file__).resolve().parents[1]


@contextmanager
def _postgres():
    """A PostgreSQL cluster of its own for the run (scripts/postgres.sh), yielding a fresh database's URL."""
    from tests.support.postgres import temporary_cluster

    with temporary_cluster(REPO / ".run" / "postgres-bench.pid") as cluster:
        yield cluster.create_database(f"bench_{uuid.uuid4().hex[:8]}")


def _round_trips(root: Path, n_servers: int, n_submits: int) -> tuple[np.ndarray, dict[str, float]]:
    from tests.annotate.server import coding_app

    n_tasks = n_submits + 2
    root, tokens, backend = _study(root, n_tasks, ANNOTATORS)
    with ExitStack() as stack:
        names = [f"bench-scaling-{i}" for i in range(n_servers)]
        urls = [stack.enter_context(coding_app(root, name=name)) for name in names]
        pids = [int((REPO / ".run" / f"{name}.pid").read_text()) for name in names]
        timings, cpu = asyncio.run(_browser_round_trips(urls, tokens, n_submits, n_tasks, pids, read=True))
    _check_stored(backend, tokens, n_submits)
    return timings[:, 0] * 1000, cpu


def run(quick: bool = False) -> list[dict]:
    n_submits = 3 if quick else 12
    saved = os.environ.get(STORE_URL_ENV)
    with tempfile.TemporaryDirectory(prefix="accord-bench-scaling-") as tmp:
        tmp_path = Path(tmp)
        try:
            os.environ.pop(STORE_URL_ENV, None)
            sqlite_ms, _ = _round_trips(tmp_path / "sqlite", 1, n_submits)
            with _postgres() as url:
                os.environ[STORE_URL_ENV] = url  # the servers (child processes) open the database store
                pg_ms, cpu = _round_trips(tmp_path / "postgres", SERVERS, n_submits)
        finally:
            os.environ.pop(STORE_URL_ENV, None)
            if saved is not None:
                os.environ[STORE_URL_ENV] = saved
    pg_p95, sqlite_p95 = float(np.percentile(pg_ms, 95)), float(np.percentile(sqlite_ms, 95))
    return [{
        "benchmark": f"coding app submit round trip p95, {ANNOTATORS} annotators over {SERVERS} app servers on PostgreSQL",
        "accord": f"{pg_p95:.0f} ms",
        "peer": f"{sqlite_p95:.0f} ms (one server, SQLite)",
        "ratio": f"{pg_p95 / sqlite_p95:.2f}x",
        "target": f"< {TARGET_MS:.0f} ms",
        "met": pg_p95 < TARGET_MS,
        "notes": (
            f"{pg_ms.size} submits per store; each annotator reads each unit a seeded {READING_S[0]:.0f}-{READING_S[1]:.0f} s, "
            f"annotator i at server i mod {SERVERS}, one PostgreSQL 15 cluster (scripts/postgres.sh), every label checked in "
            f"the store after; PostgreSQL median {np.median(pg_ms):.0f} ms, SQLite median {np.median(sqlite_ms):.0f} ms, "
            f"p95 {sqlite_p95:.0f} ms; CPU per submit on PostgreSQL: app servers {cpu['server'] / pg_ms.size * 1000:.0f} ms, "
            f"chromium {cpu['browsers'] / pg_ms.size * 1000:.0f} ms (servers, database and {ANNOTATORS} browsers on the same "
            f"{os.cpu_count()} cores)"
        ),
    }]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
