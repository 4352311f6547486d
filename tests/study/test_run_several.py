"""`accord run` on several study files (scripts/real_studies.sh runs the real studies this way): every file is
checked before anything runs, a study's own error is its one line while the others finish, and a worker running
studies side by side never starts a llama-server of its own (two would race for one instance name)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.study.helpers import REPO, accord

PANEL = REPO / "data" / "examples" / "identify_panel.csv"
POLICY = REPO / "data" / "policies" / "screening.toml"
ACCORD = Path(sys.executable).with_name("accord")  # the venv's console script, run with this checkout first on the path


def _human(name: str) -> str:
    return (f'[[human_labels]]\nname = "{name}"\npath = "{PANEL}"\nunit_column = "unit"\nannotator_column = "rater"\n'
            f'label_column = "label"\nwhere = {{ rater = "{name}" }}\n')


# A labels-only study on the example panel (60 units, two annotators, one imported judge): seconds, no model.
IMPORTED = (f'output = "imported"\n[study]\nname = "panel"\n[units]\npath = "{PANEL}"\nunit_column = "unit"\n'
            f'kind = "identify_turn"\ncluster_column = "trajectory"\n' + _human("ann_1") + _human("ann_2") +
            f'[[judge]]\nprovider = "import"\nname = "judge_a"\npath = "{PANEL}"\nunit_column = "unit"\n'
            f'output_column = "label"\nwhere = {{ rater = "judge_a" }}\n[validation]\ntie_policy = "exclude"\n'
            f'[gate]\npolicy = "{POLICY}"\n')
# Trajectories judged by a local model: its judge stage needs llama-server.
LOCAL = (f'output = "local"\n[study]\nname = "needs-llama"\n[[source]]\nname = "ise"\nadapter = "ise"\n'
         f'path = "{REPO / "data" / "ise_example.jsonl"}"\nkinds = ["identify_turn"]\n'
         f'[[judge]]\nname = "identify@smollm2"\nprompt = "ise-identify"\nprovider = "local"\nmodel = "smollm2"\n'
         f'[sampling]\nplan = "{REPO / "data" / "plans" / "who_and_when_turns.toml"}"\n'
         f'[blinding]\nannotators = ["a", "b"]\n[validation]\ntie_policy = "exclude"\n[gate]\npolicy = "{POLICY}"\n')


def _write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text)
    return str(tmp / name)


def test_a_bad_study_file_among_several_is_one_line_and_nothing_runs(tmp_path, capsys):
    good = _write(tmp_path, "good.toml", IMPORTED)
    code, out, err = accord(capsys, "run", good, str(tmp_path / "missing.toml"), "--quiet", "--jobs", "2")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "missing.toml" in err, err
    assert not (tmp_path / "imported").exists()  # the good study's folder was not even made


def test_several_studies_take_no_output_folder_one_folder_each_and_at_least_one_job(tmp_path, capsys):
    first, second = _write(tmp_path, "a.toml", IMPORTED), _write(tmp_path, "b.toml", IMPORTED)
    code, _, err = accord(capsys, "run", first, second, "--output", str(tmp_path / "out"))
    assert code == 2 and err == ("accord run: error: --output names one study folder; 2 study files were given "
                                 "(each writes to its study file's `output`)\n")
    code, _, err = accord(capsys, "run", first, "--jobs", "0")
    assert code == 2 and err == "accord run: error: --jobs: expected a number of worker processes >= 1, got 0\n"
    code, _, err = accord(capsys, "run", first, second, "--jobs", "2")  # both name the folder "imported"
    assert code == 2 and err == (f"accord run: error: {second} and {first} both write to {tmp_path / 'imported'}; "
                                 "expected one study folder per study file\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.toml", "b.toml"]


def test_a_study_needing_llama_server_side_by_side_is_its_one_line_and_the_others_finish(tmp_path):
    local, imported = _write(tmp_path, "local.toml", LOCAL), _write(tmp_path, "imported.toml", IMPORTED)
    env = {**os.environ, "PYTHONPATH": str(REPO), "ACCORD_RUN_DIR": str(tmp_path / "run")}  # no server running
    alone = subprocess.run([str(ACCORD), "run", imported, "--quiet"], capture_output=True, text=True, env=env,
                           timeout=600)
    assert alone.returncode == 1 and alone.stdout.startswith("panel: REJECT judge_a: "), alone.stderr
    both = subprocess.run([str(ACCORD), "run", local, imported, "--quiet", "--jobs", "2"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert both.returncode == 2  # an input error outranks the other study's REJECT
    assert both.stdout == alone.stdout
    assert both.stderr == (f"accord run: error: {local}: its local models need a running llama-server (instance "
                           "'llama-server'), which studies run side by side do not start: start it first (accord "
                           "judges serve), pass --base-url, or run this study with --jobs 1\n")
    assert not (tmp_path / "run").exists()  # no server was started
