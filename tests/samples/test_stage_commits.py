"""Stages commit as a set, for real: `accord ingest|sample|blind` killed with SIGKILL at random
points leave the old generation or the new one (never a mix), no temporary file that the next
reader or run does not delete, and no worker process alive; files are private whatever the umask.

The number of kills per stage is ``ACCORD_KILLS`` (default 6); each kill prints one line of
figures (``-s`` shows them) and the totals are asserted.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samples.errors import InputError
from samples.generation import check_generation, stage_files
from samples.layout import StudyLayout

REPO = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("ACCORD_KILLS", "6"))
PLAN = """name = "kill"
kinds = ["identify_turn"]
strata = ["split"]
allocation = "proportional"
n = {n}
one_per_trajectory = false
"""


def _accord(*argv: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "apps", *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def _run(*argv: str, cwd: Path) -> float:
    started = time.monotonic()
    process = _accord(*argv, cwd=cwd)
    _, err = process.communicate(timeout=600)
    assert process.returncode == 0, err.decode()
    return time.monotonic() - started


def _in_process(*argv: str, cwd: Path) -> None:
    """A run nobody kills: in process, the same code as ``python -m apps`` without an interpreter's start-up."""
    from apps.cli import main

    with contextlib.chdir(cwd):
        assert main(list(argv)) == 0


def _descendants(pid: int) -> list[int]:
    """Child processes (recursively), from /proc (no psutil here)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _state(root: Path, stage: str) -> dict[str, bytes | None]:
    layout = StudyLayout.of(root)
    return {layout.relative(p): (p.read_bytes() if p.is_file() else None) for p in stage_files(layout, stage)}


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*.tmp") if p.is_file()]


def _kill_at(argv: list[str], cwd: Path, delay: float, journal: Path | None = None) -> tuple[int, float, list[int]]:
    """Start accord, SIGKILL it (the main process only) after ``delay`` s, or as soon as ``journal`` exists
    (the commit has begun: the kill lands among its renames or just after); (exit code, seconds to the kill,
    workers alive 2 s later)."""
    started = time.monotonic()
    process = _accord(*argv, cwd=cwd)
    deadline = time.monotonic() + delay
    children: set[int] = set()
    polls = 0
    while time.monotonic() < deadline and process.poll() is None:
        if journal is not None and journal.exists():
            break
        polls += 1
        if journal is None or polls % 20 == 0:
            children.update(_descendants(process.pid))
        time.sleep(0.0005 if journal is not None else 0.01)
    children.update(_descendants(process.pid))
    process.send_signal(signal.SIGKILL)
    killed_at = time.monotonic() - started
    process.wait()
    end = time.monotonic() + 2
    while time.monotonic() < end and any(_alive(c) for c in children):
        time.sleep(0.05)
    return process.returncode, killed_at, [c for c in children if _alive(c)]


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    from samples.synthetic import write_ise_jsonl

    folder = tmp_path_factory.mktemp("kill_inputs")
    write_ise_jsonl(folder / "old.jsonl", 600, seed=1)
    write_ise_jsonl(folder / "new.jsonl", 4000, seed=2)  # about 13 MB in, 52 MB out: a few seconds of ingest
    (folder / "plan_old.toml").write_text(PLAN.format(n=200))
    (folder / "plan_new.toml").write_text(PLAN.format(n=300))
    return folder


def _kill_loop(stage: str, template: Path, argv: list[str], inputs: Path, tmp_path: Path) -> None:
    old = _state(template, stage)
    work = tmp_path / "work"  # one path: manifests record the study's paths
    study_args = [*argv, str(work)] if stage != "ingest" else [*argv, "--study", str(work)]
    shutil.copytree(template, work, symlinks=True)
    duration = _run(*study_args, cwd=inputs)
    new = _state(work, stage)
    assert new != old
    rng = random.Random(f"{stage}-kills")
    figures = {"kills": 0, "finished_before_kill": 0, "old": 0, "new": 0, "mixed": 0, "rolled_forward": 0,
               "temp_files_left_by_kill": 0, "temp_bytes_left_by_kill": 0, "temp_files_after_reader": 0,
               "workers_alive": 0}
    for attempt in range(KILLS):
        shutil.rmtree(work)
        shutil.copytree(template, work, symlinks=True)
        # a third at random over the run, a third in its last fifth (writing, committing), a third the
        # moment the commit journal appears
        how = ("random", "late", "at commit")[attempt % 3]
        delay = rng.uniform(0.3, duration * 1.05) if how == "random" else rng.uniform(0.8 * duration, 1.05 * duration)
        journal = work / ".generations" / f"{stage}.pending.json" if how == "at commit" else None
        code, delay, alive = _kill_at(study_args, inputs, 2 * duration if journal else delay, journal)
        figures["kills"] += 1
        figures["finished_before_kill"] += code == 0
        figures["workers_alive"] += len(alive)
        left = _temps(work)
        figures["temp_files_left_by_kill"] += len(left)
        figures["temp_bytes_left_by_kill"] += sum(p.stat().st_size for p in left)
        figures["rolled_forward"] += (work / ".generations" / f"{stage}.pending.json").exists()
        try:
            check_generation(work, stage)  # what every reader does first: roll forward, clean up, verify
        except InputError as error:
            pytest.fail(f"kill {attempt} at {delay:.2f}s: the generation check refused the state: {error}")
        after = _state(work, stage)
        outcome = "old" if after == old else "new" if after == new else "mixed"
        figures[outcome] += 1
        figures["temp_files_after_reader"] += len(_temps(work))
        print(f"{stage} kill {attempt} ({how}): at {delay:.2f}s of {duration:.2f}s -> {outcome}, {len(left)} temp file(s) "
              f"left by the kill, {len(alive)} worker(s) alive")
    # the next run of the stage finishes from whatever the last kill left (in process, unless it forks
    # workers: forking the test's threaded process could deadlock them)
    (_run if "--workers" in argv else _in_process)(*study_args, cwd=inputs)
    assert _state(work, stage) == new and not _temps(work)
    print(f"{stage}: {json.dumps(figures)}")
    assert figures["mixed"] == 0
    assert figures["temp_files_after_reader"] == 0
    assert figures["workers_alive"] == 0


@pytest.mark.slow  # 10 s on 2 idle cores: make test runs it, make test-fast does not
def test_killed_ingest_leaves_old_or_new(big_input: Path, tmp_path: Path) -> None:
    template = tmp_path / "template"
    _in_process("ingest", "old.jsonl", "--adapter", "ise", "--study", str(template), cwd=big_input)
    _kill_loop("ingest", template, ["ingest", "new.jsonl", "--adapter", "ise", "--workers", "2"], big_input, tmp_path)


def test_killed_sample_leaves_old_or_new(big_input: Path, tmp_path: Path) -> None:
    template = tmp_path / "template"
    _in_process("ingest", "new.jsonl", "--adapter", "ise", "--study", str(template), cwd=big_input)
    _in_process("sample", str(template), "--plan", "plan_old.toml", cwd=big_input)
    _kill_loop("sample", template, ["sample", "--plan", "plan_new.toml", "--seed", "7"], big_input, tmp_path)


def test_killed_blind_replace_leaves_old_or_new(big_input: Path, tmp_path: Path) -> None:
    template = tmp_path / "template"
    _in_process("ingest", "old.jsonl", "--adapter", "ise", "--study", str(template), cwd=big_input)
    _in_process("sample", str(template), "--plan", "plan_old.toml", cwd=big_input)
    _in_process("blind", str(template), "--annotators", "a,b", cwd=big_input)
    _kill_loop("blind", template, ["blind", "--annotators", "a,b", "--seed", "9", "--replace"], big_input, tmp_path)


# --- the parts, without kills ------------------------------------------------------------------


@pytest.fixture
def small_study(tmp_path: Path) -> Path:
    from apps.cli import main

    study = tmp_path / "study"
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    return study


def test_files_and_folders_are_private_whatever_the_umask(tmp_path: Path) -> None:
    from apps.cli import main

    old = os.umask(0)
    try:
        study = tmp_path / "study"
        plan = tmp_path / "plan.toml"
        plan.write_text(PLAN.format(n=2))
        assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
        assert main(["sample", str(study), "--plan", str(plan)]) == 0
        assert main(["blind", str(study), "--annotators", "a,b"]) == 0
    finally:
        os.umask(old)
    modes = {p.relative_to(study).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in [study, *study.rglob("*")]}
    assert {name for name, mode in modes.items() if (study / name).is_file() and mode != 0o600} == set()
    assert {name for name, mode in modes.items() if (study / name).is_dir() and mode != 0o700} == set()
    assert {"units.jsonl", "trajectories.jsonl", "sample/sample.jsonl", "sealed/key.jsonl", "blind/tasks.jsonl"} <= set(modes)


def test_no_units_removes_stale_units(small_study: Path) -> None:
    from apps.cli import main

    assert (small_study / "units.jsonl").is_file()
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(small_study),
                 "--no-units"]) == 0
    assert not (small_study / "units.jsonl").exists()
    assert check_generation(small_study, "ingest") is not None


def test_a_hand_edited_file_is_refused_by_readers(small_study: Path, tmp_path: Path, capsys) -> None:
    from apps.cli import main

    units = small_study / "units.jsonl"
    units.write_bytes(units.read_bytes()[:-200])
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(n=2))
    capsys.readouterr()
    assert main(["sample", str(small_study), "--plan", str(plan)]) == 2
    err = capsys.readouterr().err
    assert "units.jsonl: differs from the ingest generation" in err and len(err.strip().splitlines()) == 1
    assert not (small_study / "sample").exists()


def test_a_second_writer_is_refused_naming_the_first(small_study: Path) -> None:
    from samples.generation import stage_lock

    layout = StudyLayout.of(small_study)
    refused = pytest.raises(InputError, match=rf"another `accord ingest` \(pid {os.getpid()}\) is writing this study")
    with stage_lock(layout, "ingest"), refused, stage_lock(layout, "ingest"):
        pass
    with stage_lock(layout, "ingest"):  # released: the next writer gets it
        pass


def test_workers_are_bounded_by_the_cores(small_study: Path, capsys) -> None:
    from apps.cli import main
    from samples.ingest import usable_cores

    capsys.readouterr()
    too_many = str(usable_cores() + 1)
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(small_study),
                 "--workers", too_many]) == 2
    assert f"expected an integer from 1 to {usable_cores()}" in capsys.readouterr().err
