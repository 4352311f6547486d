"""Two `accord judge run` at once on one study, as real subprocesses against the fault server.

Before the study lock, two runs appended to and rewrote the same labels table at once
and 161 of 297 rows were lost (with exit 0 and "ok: 297"). Now the second run is refused
(exit 2, one line naming the running one's pid), or, when the first had already ended,
finds everything done; either way the table holds units x judges rows, each key once,
and no call is paid twice.
"""

from __future__ import annotations

import json
import re
import signal
from collections import Counter

import pytest

from apps.cli import main
from judges.lock import LockHeld, exclusive
from samples.layout import StudyLayout
from tests.judges import cli_runs
from tests.judges.units import escalate_units

N_UNITS = 50
ROUNDS = 3
REFUSAL = re.compile(r"^accord judge: error: another run \(pid (\d+)\) is writing the judge labels in (\S+) "
                     r"\(lock (\S+)\); wait for it to finish or stop it, then run again$")


def test_a_second_run_is_refused_naming_the_first_and_a_killed_first_frees_the_study(fault_server, tmp_path,
                                                                                       capsys) -> None:
    fault_server.delay_s = 0.5  # the first run is seen mid-run (labels written, calls to go) before it ends
    units = escalate_units(N_UNITS)
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", units)
    # A held answer must not time out: the first run waits on the server, not on its own retries.
    config = cli_runs.write_config(tmp_path / "judges.toml", fault_server.base_url, timeout_s=300.0)
    study = tmp_path / "study"
    layout = StudyLayout.of(study)

    first = cli_runs.start(study, units_file, config)
    cli_runs.wait_for(lambda: cli_runs.lock_holder(study) == first.pid and cli_runs.log_lines(study) > 0, first)
    # Mid-run (labels written, the lock held), the server holds every further answer until the first run is
    # killed: it is still running whatever the second run's start-up costs on a loaded machine (with a fixed
    # 0.5 s delay it once finished first: a timing race).
    fault_server.released.clear()
    second = cli_runs.start(study, units_file, config)
    out, err = second.communicate(timeout=120)
    assert first.poll() is None, "the first run must still hold the study"
    assert second.returncode == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    match = REFUSAL.match(err.strip())
    assert match, err
    assert int(match[1]) == first.pid
    assert match[2] == str(layout.judges_dir.absolute()) and match[3] == str(layout.judge_lock.absolute())
    # A dry run writes nothing, so it needs no lock: it reports while the first run works.
    dry = main(["judge", "run", "--study", str(study), "--units", str(units_file), "--config", str(config),
                "--dry-run", "--json"])
    assert dry == 0 and first.poll() is None
    planned = json.loads(capsys.readouterr().out)["judges"]
    assert sum(j["already_done"] + j["cache_hits"] + j["calls"] for j in planned) == N_UNITS * len(cli_runs.JUDGES)

    # kill -9 the holder mid-run: the kernel drops its lock, the next run resumes at once.
    first.send_signal(signal.SIGKILL)
    first.communicate()
    assert cli_runs.lock_holder(study) == first.pid  # the file still names it, but nobody holds the lock
    fault_server.delay_s = 0.0
    fault_server.released.set()
    code, out, err = cli_runs.run_in_process(study, units_file, config, capsys)  # the resume: nothing kills it
    assert code == 0, err
    tally = cli_runs.tally(study, units)
    assert (tally.rows, tally.lost, tally.duplicated) == (N_UNITS * len(cli_runs.JUDGES), 0, 0)
    assert cli_runs.lock_holder(study) is None  # released cleanly this time
    stats = {j["judge"]: j for j in json.loads(out)["judges"]}
    assert sum(j["already_done"] + j["cache_hits"] + j["calls"] for j in stats.values()) == N_UNITS * len(cli_runs.JUDGES)


@pytest.mark.slow  # 17 s on 2 idle cores: make test runs it, make test-fast does not
def test_runs_started_at_once_lose_and_double_nothing(fault_server, tmp_path, capsys) -> None:
    """ROUNDS times, two runs launched together on a fresh study."""
    fault_server.delay_s = 0.15
    config = cli_runs.write_config(tmp_path / "judges.toml", fault_server.base_url, concurrency=4)
    units = escalate_units(N_UNITS)
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", units)
    labels = N_UNITS * len(cli_runs.JUDGES)
    outcomes = {"refused": 0, "serialised": 0}
    for round_ in range(ROUNDS):
        study = tmp_path / f"study{round_}"
        fault_server.attempts.clear()
        pair = [cli_runs.start(study, units_file, config) for _ in range(2)]
        results = [(p, *p.communicate(timeout=180)) for p in pair]
        codes = sorted(p.returncode for p, _, _ in results)
        assert codes in ([0, 0], [0, 2]), [err for _, _, err in results]
        if codes == [0, 2]:
            outcomes["refused"] += 1
            (winner,) = [p for p, _, _ in results if p.returncode == 0]
            (err,) = [e for p, _, e in results if p.returncode == 2]
            match = REFUSAL.match(err.strip())
            assert match and int(match[1]) == winner.pid, err
        else:
            outcomes["serialised"] += 1  # the first had ended before the second looked: it found all done
        tally = cli_runs.tally(study, units)
        assert (tally.rows, tally.lost, tally.duplicated) == (labels, 0, 0)
        # No call paid twice: one 200 per distinct request body, one log row per label.
        answered = Counter(a.key for a in fault_server.attempts if a.action == "ok")
        assert len(answered) == labels and set(answered.values()) == {1}
        assert cli_runs.log_lines(study) == labels
    with capsys.disabled():
        print(f"\n[concurrent judge runs] {ROUNDS} rounds x 2 runs at once, {ROUNDS * labels} labels: "
              f"{outcomes['refused']} refused naming the holder's pid, {outcomes['serialised']} serialised; "
              "0 lost, 0 duplicated")


def test_the_lock_refuses_a_second_holder_in_the_same_process(tmp_path) -> None:
    import os

    lock = tmp_path / ".locks" / "judges.lock"
    with exclusive(lock, what="the study"):
        with pytest.raises(LockHeld, match=rf"another run \(pid {os.getpid()}\) is writing the study") as held:
            with exclusive(lock, what="the study"):
                pass
        assert held.value.pid == os.getpid()
    with exclusive(lock, what="the study"):  # released on exit
        pass
