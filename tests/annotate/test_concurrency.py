"""Many writer processes and SIGKILL against one store, on both engines: no lost, duplicated or torn labels."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotate.store import Store
from samples.records import BlindTask
from tests.annotate.helpers import raw

REPO = Path(__file__).resolve().parents[2]

BOTH_ENGINES = True


def make_store(location: str | Path, n_tasks: int, annotators: list[str]) -> tuple[Store, dict[str, str]]:
    store = Store.open(location)
    tasks = [BlindTask(task_id=f"t{i:06d}", kind="escalate_final", text=f"answer {i}") for i in range(n_tasks)]
    order = [t.task_id for t in tasks]
    store.load_tasks(tasks, {name: order for name in annotators})
    return store, {name: store.add_annotator(name) for name in annotators}


def start_writer(location: str | Path, token: str, count: int, ack: Path, go: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.annotate.writer", str(location), token, "t", str(count), str(ack), *([str(go)] if go else [])],
        cwd=REPO,
    )


@pytest.mark.slow
def test_ten_writers_thousand_submits_each_leave_exactly_ten_thousand_rows(store_location, tmp_path):
    names = [f"writer{i}" for i in range(10)]
    store, tokens = make_store(store_location, 1000, names)
    writers = [start_writer(store_location, tokens[name], 1000, tmp_path / f"{name}.ack") for name in names]
    for writer in writers:
        assert writer.wait(timeout=600) == 0
    assert raw(store, "SELECT COUNT(*) FROM submissions") == [(10_000,)]
    assert raw(store, "SELECT COUNT(DISTINCT submission_id) FROM submissions") == [(10_000,)]
    assert raw(store, "SELECT COUNT(*) FROM labels") == [(10_000,)]
    # Each writer labelled task i as "no" when i % 3 == 0: 334 of 1000 per writer.
    assert raw(store, "SELECT annotator, COUNT(*) FROM labels WHERE label='no' GROUP BY annotator ORDER BY annotator") == [(n, 334) for n in names]
    assert raw(store, "SELECT COUNT(*) FROM labels WHERE revisions != 1") == [(0,)]
    assert store.integrity_check() == "ok"


def test_sigkill_during_submits_loses_no_committed_label(store_location, tmp_path):
    names = ["k0", "k1", "k2"]
    store, tokens = make_store(store_location, 1000, names)
    acks = {name: tmp_path / f"{name}.ack" for name in names}
    go = tmp_path / "go"
    writers = [start_writer(store_location, tokens[name], 1000, acks[name], go) for name in names]
    # Every writer must be submitting when the kill comes: on a busy machine one writer can
    # still be starting while another has finished, so they start together once all are ready.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(path.exists() for path in acks.values()):
        time.sleep(0.05)
    go.touch()
    while time.monotonic() < deadline and sum(len(p.read_text().split()) for p in acks.values()) < 300:
        time.sleep(0.05)
    for writer in writers:
        writer.send_signal(signal.SIGKILL)
    for writer in writers:
        assert writer.wait(timeout=30) == -signal.SIGKILL
    reopened = Store.open(store_location)
    assert reopened.integrity_check() == "ok"
    committed = {row[0] for row in raw(reopened, "SELECT submission_id FROM submissions")}
    (n_labels,), = raw(reopened, "SELECT COUNT(*) FROM labels")
    acked = {line for path in acks.values() for line in path.read_text().split()}
    assert len(acked) >= 300
    assert acked <= committed, f"{len(acked - committed)} acknowledged labels lost"
    # At most the one submit per writer that committed just before its acknowledgement was written.
    assert len(committed - acked) <= len(names)
    assert n_labels == len(committed)
    assert len(committed) < 3000, "writers finished before the kill; the test did not interrupt anything"
    # Retrying the killed writers with the same submission ids completes the work without duplicates.
    retries = [start_writer(store_location, tokens[name], 1000, acks[name]) for name in names]
    for writer in retries:
        assert writer.wait(timeout=600) == 0
    assert raw(reopened, "SELECT COUNT(*) FROM submissions") == [(3000,)]
    assert raw(reopened, "SELECT COUNT(*) FROM labels") == [(3000,)]


def test_one_annotators_submits_arriving_twice_at_once_are_stored_once(store_location, tmp_path):
    """Two processes (two app servers) take the same person's submits at the same moment, each with the
    same submission ids (a browser retrying on the other server): every label stored once, none refused."""
    store, tokens = make_store(store_location, 500, ["ana"])
    go = tmp_path / "go"
    acks = [tmp_path / f"server{i}.ack" for i in range(2)]
    writers = [start_writer(store_location, tokens["ana"], 500, ack, go) for ack in acks]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(ack.exists() for ack in acks):
        time.sleep(0.05)
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=600) == 0
    assert all(len(ack.read_text().split()) == 500 for ack in acks)
    assert raw(store, "SELECT COUNT(*), COUNT(DISTINCT submission_id) FROM submissions") == [(500, 500)]
    assert raw(store, "SELECT COUNT(*), MAX(revisions) FROM labels") == [(500, 1)]
    assert store.integrity_check() == "ok"


def test_processes_opening_a_new_store_at_once_all_open_it_and_migrate_once(store_location, tmp_path):
    """App servers and the CLI starting together on a study with no store yet: every one opens it,
    and each named migration is applied once."""
    from annotate.store import MIGRATIONS

    opener = ("import sys, time, pathlib\n"
              "from annotate.store import Store\n"
              "go = pathlib.Path(sys.argv[2])\n"
              "while not go.exists(): time.sleep(0.0005)\n"
              "Store.open(sys.argv[1]).close()\n")
    go = tmp_path / "go"
    openers = [subprocess.Popen([sys.executable, "-c", opener, str(store_location), str(go)], cwd=REPO,
                                stderr=subprocess.PIPE, text=True) for _ in range(6)]
    time.sleep(2.0)  # every interpreter started, imported and waiting, so they open the store together
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in openers]
    assert [p.returncode for p in openers] == [0] * 6, errors
    store = Store.open(store_location)
    assert raw(store, "SELECT name FROM migrations ORDER BY name") == [(name,) for name, _ in MIGRATIONS]
