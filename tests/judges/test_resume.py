"""Kill CLI judge runs (SIGKILL) at any point, resume: every label once, no paid call repeated."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from collections import Counter

import pytest

from judges.tables import read_label_rows, read_labels, read_run_log
from samples.layout import StudyLayout
from tests.judges import cli_runs
from tests.judges.units import escalate_unit, escalate_units

N_UNITS = 40
CONCURRENCY = 2
FAULTS = ("", "#fault:429:0.3,ok", "#fault:500,500,ok", "#fault:reset,ok", "#fault:slow:1.5,ok", "#fault:malformed,ok")
KILLS = 4


def _cli(study, units, base_url) -> list[str]:
    return [*cli_runs.command(study, units, units)[:-3], "--judge", "ise-escalate@openai:judge-m",
            "--base-url", base_url + "/v1", "--concurrency", str(CONCURRENCY), "--json"]


def test_sigkill_then_resume(fault_server, tmp_path, capsys) -> None:
    fault_server.delay_s = 0.1
    units = escalate_units(N_UNITS)
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", units)
    study = tmp_path / "study"
    layout = StudyLayout.of(study)

    process = subprocess.Popen(_cli(study, units_file, fault_server.base_url), cwd=cli_runs.REPO, env=cli_runs.env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    cli_runs.wait_for(lambda: cli_runs.log_lines(study) >= N_UNITS // 3, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    written_before = cli_runs.log_lines(study)
    assert N_UNITS // 3 <= written_before < N_UNITS, "the kill must land half-way"
    assert not layout.judge_labels.exists()  # the table is rebuilt at the end: a killed first run leaves none
    with sqlite3.connect(layout.judge_cache) as db:
        paid_before = {json.loads(r[0])["body"]["messages"][-1]["content"] for r in db.execute("SELECT request FROM responses")}
    served_before = len(fault_server.attempts)

    # the resume: nothing kills it, so in process (the same code without an interpreter's start-up)
    code, out, err = cli_runs.run_command_in_process(_cli(study, units_file, fault_server.base_url), capsys)
    assert code == 0, err
    stats = json.loads(out)["judges"][0]

    # Every unit labelled exactly once, in the file as well as in the table.
    lines = layout.judge_labels.read_text().splitlines()
    assert len(lines) == N_UNITS
    table = read_labels(layout.judge_labels)
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

    runs = [e for e in read_run_log(layout.judge_runs) if e["event"] == "start"]
    assert len(runs) == 2 and runs[1]["existing_rows"] >= N_UNITS // 3
    assert runs[0]["judges"]["ise-escalate@openai:judge-m"]["fingerprint"] == runs[1]["judges"]["ise-escalate@openai:judge-m"]["fingerprint"]


@pytest.mark.slow  # 16 s on 2 idle cores: make test runs it, make test-fast does not
def test_repeated_kills_under_faults_then_resume(fault_server, tmp_path, capsys) -> None:
    """Two judges, every fault the server has, KILLS kill -9s at different points, then a resume."""
    fault_server.delay_s = 0.05
    units = [escalate_unit(f"traj-{i}", f"Final answer {i}: it opened in {1900 + i}. {FAULTS[i % len(FAULTS)]}")
             for i in range(8 * len(FAULTS))]
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", units)
    config = cli_runs.write_config(tmp_path / "judges.toml", fault_server.base_url, concurrency=CONCURRENCY,
                                   timeout_s=0.75, max_backoff_s=0.5)
    study = tmp_path / "study"
    layout = StudyLayout.of(study)
    expected = len(units) * len(cli_runs.JUDGES)
    for kill in range(KILLS):
        process = cli_runs.start(study, units_file, config)
        target = cli_runs.log_lines(study) + expected // (KILLS + 2)
        if kill == 0:  # as soon as it holds the study, before any label
            cli_runs.wait_for(lambda pid=process.pid: cli_runs.lock_holder(study) == pid, process)
        else:  # after some progress
            cli_runs.wait_for(lambda target=target: cli_runs.log_lines(study) >= target, process)
        process.send_signal(signal.SIGKILL)
        process.communicate()
        # What a reader sees after any kill: the old table or none, never half of one nor a repeated key.
        tally = cli_runs.tally(study, units)
        assert tally.duplicated == 0 and tally.rows == tally.keys
    assert cli_runs.log_lines(study) < expected, "the kills must land before the end"

    code, out, err = cli_runs.run_in_process(study, units_file, config, capsys)  # the resume: nothing kills it
    assert code == 0, err
    tally = cli_runs.tally(study, units)
    assert (tally.rows, tally.lost, tally.duplicated) == (expected, 0, 0)
    table = read_labels(layout.judge_labels)
    assert {row.label for row in table.values()} == {"yes"}  # every script ends in ok: no failure left unretried
    assert not list(layout.judges_dir.glob("*.tmp")) and not list(layout.judges_dir.glob(".*.tmp"))

    # Paid twice only for calls in flight at a kill (their answer never reached the cache);
    # "slow:1.5" answers came after the 0.75 s timeout, so only "ok" answers were received.
    answered = Counter(a.key for a in fault_server.attempts if a.action == "ok")
    assert len(answered) == expected
    assert sum(n - 1 for n in answered.values()) <= KILLS * CONCURRENCY * len(cli_runs.JUDGES)

    # A rerun calls nothing and changes nothing.
    before = layout.judge_labels.read_bytes()
    served = len(fault_server.attempts)
    code, out, err = cli_runs.run_in_process(study, units_file, config, capsys)
    assert code == 0, err
    assert len(fault_server.attempts) == served
    assert sum(j["already_done"] for j in json.loads(out)["judges"]) == expected
    assert layout.judge_labels.read_bytes() == before
    log_rows = read_label_rows(layout.judge_label_log)[1]
    with capsys.disabled():
        print(f"\n[killed judge runs] {KILLS} kill -9s + resume, {len(units)} units x {len(cli_runs.JUDGES)} judges = "
              f"{expected} labels under 429/500/reset/timeout/malformed: lost {tally.lost}, duplicated {tally.duplicated}; "
              f"{sum(n - 1 for n in answered.values())} calls repeated (in flight at a kill); {log_rows} log rows")
