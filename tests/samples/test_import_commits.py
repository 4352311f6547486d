"""Imports lose nothing and half-write nothing (issues #23, #25), through the CLI as a user meets it.

A typo in a named column is one line naming it and the columns that exist; exact duplicate
unit rows are reported; a failed `accord import table` leaves the study folder byte-identical
and the fixed file then imports; a killed one leaves nothing or everything (one generation);
`import judge-labels --only-sample` takes a population run over a labels-only study.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from apps.cli import main
from samples.generation import check_generation
from samples.layout import StudyLayout
from tests.samples.test_stage_commits import _accord, _in_process, _kill_at, _temps

KILLS = int(os.environ.get("ACCORD_KILLS", "6"))


def _wide(path: Path, n: int, *, bad_row: int | None = None) -> Path:
    lines = ["id,family,ann_1,ann_2,ann_3,judge_good,judge_bad"]
    for i in range(n):
        a = "yes" if i % 3 else "no"
        lines.append(f"u{i},f{i % 4},{'maybe' if i == bad_row else a},{a},{'no' if i % 5 == 0 else a},{a},"
                     f"{'no' if i % 2 else 'yes'}")
    path.write_text("\n".join(lines) + "\n")
    return path


TABLE = ["--unit-column", "id", "--kind", "identify_trajectory", "--strata-columns", "family"]


def _table_args(table: Path, study: Path, annotators: str = "ann_1,ann_2,ann_3",
                judges: str = "judge_good,judge_bad") -> list[str]:
    return ["import", "table", str(table), "--study", str(study), *TABLE, "--annotator-columns", annotators,
            "--judge-columns", judges]


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``root``, hidden ones included (None for a folder)."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("option,value,missing", [
    ("annotators", "ann_1,ann_2,ann3", "ann3"),
    ("judges", "judge_good,judge_pooor", "judge_pooor"),
])
def test_a_typo_in_a_named_column_is_refused_naming_it(tmp_path, capsys, option, value, missing):
    table = _wide(tmp_path / "t.csv", 5)
    study = tmp_path / "s"
    args = _table_args(table, study, **{option: value})
    assert main(args) == 2
    err = _one_line(capsys)
    flag = "--annotator-columns" if option == "annotators" else "--judge-columns"
    assert f"{flag}: no column {missing!r}" in err
    assert "its columns: ['ann_1', 'ann_2', 'ann_3', 'family', 'id', 'judge_bad', 'judge_good']" in err
    assert not study.exists()  # nothing created, not even the folder


def test_a_typo_in_judge_labels_output_column_is_refused(tmp_path, capsys):
    table = _wide(tmp_path / "t.csv", 5)
    assert main(["import", "units", str(table), "--study", str(tmp_path / "s"), *TABLE]) == 0
    capsys.readouterr()
    assert main(["import", "judge-labels", str(table), "--study", str(tmp_path / "s"), "--judge", "j",
                 "--unit-column", "id", "--output-column", "judge_pooor"]) == 2
    assert "--output-column: no column 'judge_pooor'" in _one_line(capsys)
    assert not (tmp_path / "s" / "judges").exists()


def test_exact_duplicate_unit_rows_are_reported(tmp_path, capsys):
    table = tmp_path / "units.csv"
    table.write_text("id,family\nu1,a\nu2,b\nu1,a\nu3,c\n")
    study = tmp_path / "s"
    assert main(["import", "units", str(table), "--study", str(study), "--unit-column", "id",
                 "--kind", "identify_trajectory", "--strata-columns", "family"]) == 2
    err = _one_line(capsys)
    assert f"1 exact duplicate row(s) ({table}:4 repeats {table}:2)" in err
    assert not study.exists()


def test_a_failed_import_leaves_the_folder_byte_identical_and_the_fixed_file_imports(tmp_path, capsys):
    study = tmp_path / "s"
    study.mkdir()
    (study / "notes.txt").write_text("mine\n")
    before = _snapshot(study)
    bad = _wide(tmp_path / "t.csv", 30, bad_row=17)  # 'maybe' is not an identify label
    assert main(_table_args(bad, study)) == 2
    assert "maybe" in capsys.readouterr().err
    assert _snapshot(study) == before  # no units, no key, no lock or generation folder
    dup = _wide(tmp_path / "d.csv", 30)
    dup.write_text(dup.read_text() + dup.read_text().splitlines()[3] + "\n")  # u2's row twice: two labels each
    assert main(_table_args(dup, study)) == 2
    assert _snapshot(study) == before
    good = _wide(tmp_path / "t.csv", 30)
    assert main(_table_args(good, study)) == 0
    layout = StudyLayout.of(study)
    assert len(layout.units.read_text().splitlines()) == 30
    assert len((layout.imported_labels_dir / "t.jsonl").read_text().splitlines()) == 90
    assert sorted(p.name for p in layout.imported_judge_labels_dir.iterdir()) == ["judge_bad.jsonl", "judge_good.jsonl"]
    hashes = check_generation(layout, "import")
    assert set(hashes) == {"units.jsonl", "sealed/key.jsonl", "labels/imported/t.jsonl",
                           "judges/imported/judge_bad.jsonl", "judges/imported/judge_good.jsonl"}
    for name in hashes:
        assert (study / name).stat().st_mode & 0o777 == 0o600


def test_a_later_import_keeps_the_earlier_ones_in_the_record(tmp_path, capsys):
    study = tmp_path / "s"
    table = _wide(tmp_path / "t.csv", 10)
    assert main(_table_args(table, study)) == 0
    assert main(["import", "judge-labels", str(table), "--study", str(study), "--judge", "again",
                 "--unit-column", "id", "--output-column", "judge_good"]) == 0
    hashes = check_generation(study, "import")
    assert "judges/imported/again.jsonl" in hashes and "units.jsonl" in hashes and len(hashes) == 6
    (study / "judges" / "imported" / "again.jsonl").write_text("")  # changed by hand
    capsys.readouterr()
    assert main(["validate", str(study)]) == 2
    assert "again.jsonl: differs from the import generation" in _one_line(capsys)


def test_judge_labels_only_sample_takes_a_population_run(tmp_path, capsys):
    study = tmp_path / "s"
    human = _wide(tmp_path / "human.csv", 12)
    assert main(["import", "units", str(human), "--study", str(study), *TABLE]) == 0
    population = tmp_path / "population.csv"
    population.write_text("id,verdict\n" + "".join(f"u{i},{'yes' if i % 3 else 'no'}\n" for i in range(40)))
    judge = ["import", "judge-labels", str(population), "--study", str(study), "--judge", "j", "--unit-column", "id",
             "--output-column", "verdict"]
    capsys.readouterr()
    assert main(judge) == 2
    err = capsys.readouterr().err
    assert "unit 'u12' is not a unit of the study" in err
    assert err.strip().endswith("--only-sample skips and counts those rows") and err.count("\n") == 1  # the way on
    assert main([*judge, "--only-sample", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rows"] == 12 and report["outside_study"] == 28
    assert main([*judge, "--only-sample"]) == 0
    assert "skipped 28 row(s) about units the study does not have" in capsys.readouterr().out


@pytest.mark.slow  # 9 s on 2 idle cores: make test runs it, make test-fast does not
def test_killed_import_table_leaves_nothing_or_everything(tmp_path):
    """SIGKILL at random points of `accord import table` (6,000 units): the visible files are all absent
    or all of a finished run; after a reader the generation checks and no temporary file is left; a
    rerun of the same file then either imports (nothing was published) or is refused as done."""
    table = _wide(tmp_path / "big.csv", 6000)
    reference = tmp_path / "reference"
    started = time.monotonic()
    process = _accord(*_table_args(table, reference)[0:], cwd=tmp_path)
    assert process.wait(timeout=600) == 0, process.stderr.read().decode()
    duration = time.monotonic() - started
    names = sorted(check_generation(reference, "import"))
    expected = {name: (reference / name).read_bytes() for name in names}
    rng = random.Random("import-kills")
    outcomes = {"nothing": 0, "everything": 0}
    for attempt in range(KILLS):
        study = tmp_path / f"k{attempt}"
        journal = study / ".generations" / "import.pending.json"
        delay = rng.uniform(0.2, duration)
        _kill_at(_table_args(table, study), tmp_path, 2 * duration if attempt % 3 == 2 else delay,
                 journal if attempt % 3 == 2 else None)
        check_generation(study, "import") if study.exists() else None  # a reader rolls forward, cleans up
        state = {name: (study / name).read_bytes() if (study / name).is_file() else None for name in names}
        visible = sorted(p.relative_to(study).as_posix() for p in study.rglob("*")
                         if p.is_file() and not any(part.startswith(".") for part in p.relative_to(study).parts)) \
            if study.exists() else []
        if all(v is None for v in state.values()):
            outcomes["nothing"] += 1
            assert visible == []
            _in_process(*_table_args(table, study), cwd=tmp_path)  # the retry imports (nobody kills it: in process)
        else:
            assert state == expected, f"kill {attempt} at {delay:.2f}s left a mix"
            assert visible == names
            outcomes["everything"] += 1
        assert not _temps(study)
        print(f"import kill {attempt}: at {delay:.2f}s of {duration:.2f}s -> {outcomes}")
    assert sum(outcomes.values()) == KILLS
