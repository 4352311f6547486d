"""Issue #23's errors and permissions through the CLI, as a user meets them.

Folders accord makes are 0700 and files 0600 whatever the umask (022 and 000), per command that
creates them; a read-only study folder is one line and exit 2 (a real read-only bind mount in a
private mount namespace); a store URL holding a password (``?password=`` too) is refused and never
printed; ``shared:`` paths stay inside the shared folder; unit ids differing only by surrounding
whitespace are one unit.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from apps.cli import main

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "data" / "policies" / "screening.toml"


def _modes(root: Path) -> tuple[set[str], set[str]]:
    """(folders not 0700, files not 0600) under ``root``, ``root`` included."""
    folders, files = set(), set()
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        name = path.relative_to(root.parent).as_posix()
        if path.is_dir() and mode != 0o700:
            folders.add(f"{name} {mode:o}")
        elif path.is_file() and mode != 0o600:
            files.add(f"{name} {mode:o}")
    return folders, files


def _table(path: Path, n: int = 40) -> Path:
    lines = ["id,family,ann_1,ann_2,ann_3,judge"]
    for i in range(n):
        a = "yes" if i % 3 else "no"
        lines.append(f"u{i},f{i % 2},{a},{a},{'no' if i % 5 == 0 else a},{'no' if i % 4 == 0 else a}")
    path.write_text("\n".join(lines) + "\n")
    return path


STUDY = """output = "{output}"
[study]
name = "umask"
[units]
path = "{table}"
unit_column = "id"
kind = "identify_trajectory"
strata_columns = ["family"]
[[human_labels]]
name = "people"
path = "{table}"
unit_column = "id"
annotator_columns = ["ann_1", "ann_2", "ann_3"]
[[judge]]
provider = "import"
name = "judge"
path = "{table}"
unit_column = "id"
output_column = "judge"
[validation]
tie_policy = "exclude"
n_resamples = 200
seed = 20261129
level = 0.95
[gate]
policy = "{policy}"
"""


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def test_accord_run_makes_private_folders_and_files(tmp_path, umask, capsys):
    table = _table(tmp_path / "t.csv")
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(output=tmp_path / "made" / "out", table=table, policy=POLICY))
    assert main(["run", str(study), "--quiet"]) in (0, 1)
    assert _modes(tmp_path / "made") == (set(), set())


def test_accord_import_makes_private_folders_and_files(tmp_path, umask):
    table = _table(tmp_path / "t.csv")
    assert main(["import", "table", str(table), "--study", str(tmp_path / "new" / "s"), "--unit-column", "id",
                 "--kind", "identify_trajectory", "--annotator-columns", "ann_1,ann_2,ann_3",
                 "--judge-columns", "judge"]) == 0
    assert main(["import", "judge-labels", str(table), "--study", str(tmp_path / "new" / "s"), "--judge", "again",
                 "--unit-column", "id", "--output-column", "judge"]) == 0
    assert _modes(tmp_path / "new") == (set(), set())


def test_batch_write_out_is_private(tmp_path, umask, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    study = tmp_path / "s"
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    assert main(["judge", "batch-write", "--study", str(study), "--judge", "ise-identify@openai:gpt-4o-mini",
                 "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "b" / "batch")]) == 0
    assert _modes(tmp_path / "b") == (set(), set())
    assert len(list((tmp_path / "b" / "batch").iterdir())) == 2


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_label_exports_are_private(tmp_path, umask, fmt, monkeypatch):
    from annotate.store import STORE_URL_ENV

    monkeypatch.delenv(STORE_URL_ENV, raising=False)
    study = tmp_path / "s"
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    out = tmp_path / "e" / f"labels.{fmt}"
    assert main(["labels", "export", "--study", str(study), "--format", fmt, "--out", str(out)]) == 0
    assert out.is_file() and _modes(tmp_path / "e") == (set(), set())


# --- a read-only study folder ------------------------------------------------------------------------


def _read_only_run(study: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """``accord ARGV`` with ``study`` bind-mounted read-only in a private mount namespace (nothing else sees it)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root to make a read-only bind mount")
    script = f'mount --bind -o ro "{study}" "{study}" && exec "{sys.executable}" -m apps "$@"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture(scope="module")
def blinded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ro")
    plan = root / "plan.toml"
    plan.write_text('name = "p"\nkinds = ["identify_turn"]\nstrata = ["split"]\nallocation = "fixed"\n'
                    'n_per_stratum = 2\none_per_trajectory = true\n')
    study = root / "study"
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    assert main(["sample", str(study), "--plan", str(plan)]) == 0
    assert main(["blind", str(study), "--annotators", "a,b"]) == 0
    return root


@pytest.mark.parametrize("argv", [
    ["ingest", "{data}", "--adapter", "ise", "--study", "{study}"],
    ["sample", "{study}", "--plan", "{root}/plan.toml", "--seed", "3"],
    ["blind", "{study}", "--annotators", "a,b", "--seed", "5", "--replace"],
    ["annotators", "add", "c", "--study", "{study}"],
    ["import", "judge-labels", "{root}/j.csv", "--study", "{study}", "--judge", "j", "--unit-column", "id",
     "--output-column", "v"],
    ["judge", "run", "--study", "{study}", "--judge", "rule:ehq"],
    ["labels", "export", "--study", "{study}"],
], ids=lambda a: "-".join(a[:2]))
def test_a_read_only_study_folder_is_one_line_and_exit_2(blinded: Path, argv: list[str]) -> None:
    study = blinded / "study"
    unit = json.loads((study / "units.jsonl").read_text().splitlines()[0])["unit_id"]
    (blinded / "j.csv").write_text(f"id,v\n{unit},yes\n")
    before = {p.relative_to(study).as_posix(): p.read_bytes() for p in study.rglob("*") if p.is_file()}
    args = [a.format(data=REPO / "data" / "ise_example.jsonl", study=study, root=blinded) for a in argv]
    done = _read_only_run(study, args)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "Read-only file system" in lines[0] or "cannot write" in lines[0], lines[0]
    after = {p.relative_to(study).as_posix(): p.read_bytes() for p in study.rglob("*") if p.is_file()}
    assert after == before


# --- passwords, shared: paths, ids ------------------------------------------------------------------


@pytest.mark.parametrize("url", ["postgresql://db.example/accord?password=hunter2",
                                 "postgresql://db.example/accord?sslmode=require&PassWord=hunter2",
                                 "postgresql://me:hunter2@db.example/accord"])
def test_a_password_in_a_store_url_is_refused_and_never_printed(blinded: Path, url: str, monkeypatch, capsys):
    from annotate.store import STORE_URL_ENV

    monkeypatch.setenv(STORE_URL_ENV, url)
    for argv in (["store", "status", "--study", str(blinded / "study")],
                 ["annotators", "list", "--study", str(blinded / "study")],
                 ["store", "copy", "--study", str(blinded / "study"), "--to", url]):
        capsys.readouterr()
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert "holds a password" in err and "hunter2" not in out + err and err.count("\n") == 1, err


def test_shared_paths_cannot_leave_the_shared_folder(tmp_path, monkeypatch, capsys):
    shared = tmp_path / "shared"
    (shared / "data").mkdir(parents=True)
    table = _table(shared / "data" / "t.csv")
    outside = _table(tmp_path / "secret.csv")
    (shared / "data" / "link.csv").symlink_to(outside)
    monkeypatch.setenv("ACCORD_SHARED", str(shared))
    for path in ("shared:../secret.csv", f"shared:{outside}", "shared:data/link.csv"):
        study = tmp_path / "study.toml"
        study.write_text(STUDY.format(output=tmp_path / "out", table=path, policy=POLICY))
        capsys.readouterr()
        assert main(["run", str(study)]) == 2
        err = capsys.readouterr().err
        assert "leads outside the shared folder" in err and err.count("\n") == 1, err
    study.write_text(STUDY.format(output=tmp_path / "out", table="shared:data/t.csv", policy=POLICY))
    assert main(["run", str(study), "--quiet"]) in (0, 1) and table.is_file()


def test_unit_ids_differing_by_surrounding_whitespace_are_one_unit(tmp_path, capsys):
    units = tmp_path / "units.csv"
    units.write_text("id,family\nu1,a\nu2,b\n")
    study = tmp_path / "s"
    assert main(["import", "units", str(units), "--study", str(study), "--unit-column", "id",
                 "--kind", "identify_trajectory"]) == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": " u1", "v": "yes"}\n{"id": "u2\\t", "v": "no"}\n')
    assert main(["import", "judge-labels", str(labels), "--study", str(study), "--judge", "j",
                 "--unit-column", "id", "--output-column", "v", "--json"]) == 0
    rows = [json.loads(line) for line in (study / "judges" / "imported" / "j.jsonl").read_text().splitlines()]
    assert sorted(row["unit_id"] for row in rows) == ["u1", "u2"]
    again = tmp_path / "dup.csv"
    again.write_text("id,family\nu1,a\n u1 ,a\n")
    capsys.readouterr()
    assert main(["import", "units", str(again), "--study", str(tmp_path / "t"), "--unit-column", "id",
                 "--kind", "identify_trajectory"]) == 2
    assert "exact duplicate row" in capsys.readouterr().err  # the same unit twice, as a reader sees it
    blank = tmp_path / "blank.csv"
    blank.write_text('id,family\nu1,a\n"  ",b\n')
    assert main(["import", "units", str(blank), "--study", str(tmp_path / "b"), "--unit-column", "id",
                 "--kind", "identify_trajectory"]) == 2
    assert f"{blank}:3: column 'id' holds only whitespace" in capsys.readouterr().err
