"""Kill a CLI judge run half-way (SIGKILL), resume: every unit labelled once, no paid call repeated."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from judges.tables import read_labels, read_run_log

from tests.judges.units import escalate_units

REPO = Path(__file__).resolve().parents[2]
N_UNITS = 40
CONCURRENCY = 2


def _cli(study: Path, units: Path, base_url: str) -> list[str]:
    return [sys.executable, "-m", "apps.cli", "judge", "run", "--study", str(study), "--units", str(units),
            "--judge", "ise-escalate@openai:judge-m", "--base-url", base_url + "/v1",
            "--concurrency", str(CONCURRENCY), "--json"]


def test_sigkill_then_resume(fault_server, tmp_path) -> None:
    fault_server.delay_s = 0.1
    units = escalate_units(N_UNITS)
    units_file = tmp_path / "units.jsonl"
    units_file.write_text("".join(u.model_dump_json() + "\n" for u in units))
    study = tmp_path / "study"
    labels = study / "judges" / "labels.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OPENAI_API_KEY", None)

    process = subprocess.Popen(_cli(study, units_file, fault_server.base_url), cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if labels.exists() and labels.read_bytes().count(b"\n") >= N_UNITS // 3:
            break
        assert process.poll() is None, process.stderr.read().decode()
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    written_before = labels.read_bytes().count(b"\n")
    assert N_UNITS // 3 <= written_before < N_UNITS, "the kill must land half-way"
    with sqlite3.connect(study / "judges" / "cache.sqlite") as db:
        paid_before = {json.loads(r[0])["body"]["messages"][-1]["content"] for r in db.execute("SELECT request FROM responses")}
    served_before = len(fault_server.attempts)

    resumed = subprocess.run(_cli(study, units_file, fault_server.base_url), cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    stats = json.loads(resumed.stdout)["judges"][0]

    # Every unit labelled exactly once, in the file as well as in the table.
    lines = labels.read_text().splitlines()
    assert len(lines) == N_UNITS
    table = read_labels(labels)
    assert sorted(k[0] for k in table) == sorted(u.unit_id for u in units)
    assert all(row.label == "yes" for row in table.values())

    # No call that had succeeded (its response was cached) was made again.
    successes = fault_server.successes()
    assert all(successes[text] == 1 for text in paid_before)
    # Calls in flight at the kill never reached the cache; at most CONCURRENCY of them repeat.
    repeated = [text for text, n in successes.items() if n > 1]
    assert len(repeated) <= CONCURRENCY
    assert len(fault_server.attempts) - served_before == stats["calls"]
    assert stats["already_done"] + stats["cache_hits"] + stats["calls"] == N_UNITS
    assert stats["already_done"] >= written_before - 1  # a torn last line is not a label

    runs = [e for e in read_run_log(study / "judges" / "runs.jsonl") if e["event"] == "start"]
    assert len(runs) == 2 and runs[1]["existing_rows"] >= N_UNITS // 3
    assert runs[0]["judges"]["ise-escalate@openai:judge-m"]["fingerprint"] == runs[1]["judges"]["ise-escalate@openai:judge-m"]["fingerprint"]
