"""Every reader of a stage's files checks its generation record (issue #23): `accord app`, `judge run`,
`annotators add` refuse blinded tasks or units changed since their stage published them; `accord
report` publishes its files as one generation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.cli import main
from samples.generation import check_generation
from tests.samples.test_stage_commits import PLAN, REPO


@pytest.fixture
def blinded(tmp_path: Path) -> Path:
    study = tmp_path / "study"
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(n=4))
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    assert main(["sample", str(study), "--plan", str(plan)]) == 0
    assert main(["blind", str(study), "--annotators", "a,b"]) == 0
    return study


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def _mix(path: Path) -> None:
    """Another run's version of one file (a task dropped): what a crash between two renames would leave."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[1:]))


def test_annotators_add_refuses_tasks_changed_since_blinding(blinded: Path, capsys) -> None:
    _mix(blinded / "blind" / "tasks.jsonl")
    capsys.readouterr()
    assert main(["annotators", "add", "c", "--study", str(blinded)]) == 2
    assert "tasks.jsonl: differs from the blind generation" in _one_error(capsys)


def test_the_coding_app_refuses_tasks_changed_since_blinding(blinded: Path, capsys) -> None:
    from annotate.app_backend import AppBackend
    from samples.errors import InputError

    orders = blinded / "blind" / "orders.json"
    orders.write_text(json.dumps({"a": [], "b": []}))
    with pytest.raises(InputError, match="orders.json: differs from the blind generation"):
        AppBackend(study=blinded).push_files(blinded / "blind")  # what `accord app` loads before serving


def test_judge_run_refuses_units_changed_since_their_stage(blinded: Path, capsys) -> None:
    _mix(blinded / "sample" / "sample.jsonl")
    capsys.readouterr()
    assert main(["judge", "run", "--study", str(blinded), "--judge", "rule:ehq"]) == 2
    assert "sample.jsonl: differs from the sample generation" in _one_error(capsys)


def test_report_publishes_one_generation_and_drops_plots_it_no_longer_has(tmp_path: Path) -> None:
    from tests.agreement.test_study_io import write_ise_study

    write_ise_study(tmp_path, per_cell=8)
    assert main(["validate", str(tmp_path), "--n-resamples", "100"]) == 0
    stale = tmp_path / "report" / "old_plot.png"
    assert main(["report", str(tmp_path)]) == 0
    first = check_generation(tmp_path, "report")
    assert {"report/report.html", "report/report.md", "report/forest.png"} <= set(first)
    # a plot of an earlier report that this one does not make: published by that run, removed by this one
    from samples.generation import publishing

    with publishing(tmp_path, "report") as generation:
        for name in first:
            generation.write_bytes(tmp_path / name, (tmp_path / name).read_bytes())
        generation.write_bytes(stale, b"png")
    assert stale.is_file()
    assert main(["report", str(tmp_path)]) == 0
    assert not stale.exists() and set(check_generation(tmp_path, "report")) == set(first)
    assert [p.name for p in (tmp_path / "report").iterdir() if p.name.startswith(".")] == []


def test_ls_push_refuses_tasks_changed_since_blinding(blinded: Path, capsys, monkeypatch) -> None:
    """The check comes before the server is contacted: nothing listens at the URL given."""
    monkeypatch.setenv("ACCORD_LS_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ACCORD_LS_TOKEN", "abcdefgh12")
    _mix(blinded / "blind" / "tasks.jsonl")
    capsys.readouterr()
    assert main(["ls", "push", "--study", str(blinded)]) == 2
    assert "tasks.jsonl: differs from the blind generation" in _one_error(capsys)


REPORT_KILLS = 4


def test_killed_report_leaves_the_old_report_or_the_new_one(tmp_path: Path) -> None:
    """SIGKILL of `accord report` at random points and at its commit: after a reader, the report's files
    are all of the earlier report or all of the new one (never a mix), no temporary file is left, and
    a rerun publishes the new report."""
    import random
    import shutil
    import time

    from tests.agreement.test_study_io import write_ise_study
    from tests.samples.test_stage_commits import _accord, _kill_at, _temps

    base = tmp_path / "base"
    write_ise_study(base, per_cell=8)
    assert main(["validate", str(base), "--n-resamples", "100"]) == 0
    assert main(["report", str(base)]) == 0
    old = {name: (base / name).read_bytes() for name in check_generation(base, "report")}
    assert main(["validate", str(base), "--n-resamples", "100", "--seed", "7"]) == 0  # other intervals: a new report
    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    started = time.monotonic()
    assert _accord("report", str(reference), cwd=tmp_path).wait(timeout=600) == 0
    duration = time.monotonic() - started
    rng = random.Random("report-kills")
    outcomes = {"old": 0, "new": 0}
    for attempt in range(REPORT_KILLS):
        study = tmp_path / f"k{attempt}"
        shutil.copytree(base, study)
        journal = study / ".generations" / "report.pending.json"
        at_commit = attempt % 2 == 1
        _kill_at(["report", str(study)], tmp_path, 2 * duration if at_commit else rng.uniform(0.2, duration),
                 journal if at_commit else None)
        check_generation(study, "report")  # a reader rolls forward or back, and cleans up
        state = {name: (study / name).read_bytes() for name in old}
        assert not _temps(study)
        assert main(["report", str(study)]) == 0  # the rerun needs no kill: in process, the same code
        new = {name: (study / name).read_bytes() for name in check_generation(study, "report")}  # names its folder
        assert set(new) == set(old) and new != old
        assert state in (old, new), (attempt, sorted(n for n in old if state[n] not in (old[n], new[n])))
        outcomes["old" if state == old else "new"] += 1
        print(f"report kill {attempt}: {'at the commit' if at_commit else 'at random'} -> {outcomes}")
    assert sum(outcomes.values()) == REPORT_KILLS
