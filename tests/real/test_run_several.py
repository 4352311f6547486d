"""`accord run` on several real study files, as scripts/real_studies.sh runs them: side by side in worker
processes (--jobs), each study's lines in the order given, every file byte-identical to a run of that study alone."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STUDIES = REPO / "data" / "studies"
# What differs between two runs of the same study by design: when each stage finished and took (state.json),
# and the lock files' holders.
VOLATILE = ("state.json", ".locks/")
ACCORD = Path(sys.executable).with_name("accord")  # the venv's console script, run with this checkout first on the path


def _accord(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The CLI in its own process, as a person (or the script) runs it."""
    return subprocess.run([str(ACCORD), *argv], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=600)


def _in_process(capsys, *argv: str) -> tuple[int, str]:
    """The CLI in this process from the same folder (the code the console script runs, without its start-up):
    (exit code, stdout)."""
    from apps.cli import main

    capsys.readouterr()
    with contextlib.chdir(REPO):
        code = main(list(argv))
    return code, capsys.readouterr().out


def _copy(study: Path, tmp: Path, name: str) -> Path:
    """The shipped study file with its output in ``tmp/name`` and its policy path made absolute."""
    text = study.read_text()
    policy = next(line for line in text.splitlines() if line.startswith("policy = "))
    absolute = (study.parent / policy.split('"')[1]).resolve()
    output = next(line for line in text.splitlines() if line.startswith("output = "))
    text = text.replace(output, f'output = "{tmp / name}"').replace(policy, f'policy = "{absolute}"')
    copy = tmp / f"{name}.toml"
    copy.write_text(text)
    return copy


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not str(p.relative_to(root)).startswith(VOLATILE)}


@pytest.mark.slow  # two real studies, each run twice: about 10 CPU-seconds
def test_studies_side_by_side_print_in_order_and_write_what_each_alone_writes(shared, tmp_path, capsys):
    # lesion (six judges) takes longer than MAD (one judge) and is given first: its lines must still come first.
    names = ["lesion", "mad"]
    files = {"lesion": STUDIES / "alttest" / "lesion" / "study.toml", "mad": STUDIES / "mad" / "study.toml"}
    copies = [str(_copy(files[n], tmp_path, n)) for n in names]
    alone = [_in_process(capsys, "run", copy, "--quiet") for copy in copies]  # the side-by-side run is the script's
    assert [code for code, _ in alone] == [1, 1]  # both reject a judge
    written = {n: _files(tmp_path / n) for n in names}
    for n in names:  # the same folders again, written by one run of both
        shutil.rmtree(tmp_path / n)

    both = _accord("run", *copies, "--quiet", "--jobs", "2")
    assert both.returncode == 1, both.stderr
    assert both.stderr == ""
    assert both.stdout == "".join(out for _, out in alone)
    assert both.stdout.splitlines()[0].startswith("alttest-lesion: ")
    assert both.stdout.splitlines()[-1].startswith("mad-mast-lint: REJECT mast-lint: ")
    for n in names:
        assert "gate/verdict.json" in written[n] and "report/report.html" in written[n]
        assert _files(tmp_path / n) == written[n], n


def test_the_script_says_once_that_the_shared_folder_is_absent(tmp_path):
    """Without the shared data every study file fails to load: one line from accord run, one from the script, exit 0,
    and no study folder made."""
    before = sorted((REPO / "studies").rglob("*")) if (REPO / "studies").exists() else []
    script = subprocess.run(["bash", str(REPO / "scripts" / "real_studies.sh")], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), "ACCORD_SHARED": str(tmp_path / "absent"),
                                 "ACCORD": str(ACCORD)}, timeout=600)
    assert script.returncode == 0
    assert script.stdout == ""
    lines = script.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("accord run: error: ") and "the shared data folder" in lines[0]
    assert lines[1].startswith("real studies: skipped")
    after = sorted((REPO / "studies").rglob("*")) if (REPO / "studies").exists() else []
    assert after == before


def test_a_quiet_run_judging_with_rules_prints_nothing_while_it_waits_for_people(shared, tmp_path):
    """The ASA study judges 40 units with a rule judge, then waits for coders: with --quiet it has nothing to say.
    The judges' progress bar used to leave a blank line on stdout (seen among the real studies' verdict lines)."""
    run = _accord("run", str(STUDIES / "asa" / "study.toml"), "--output", str(tmp_path / "asa"), "--quiet")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "asa" / "judges" / "labels.jsonl").is_file()
    assert run.stdout == "" and run.stderr == ""
