"""One mistake, one line (issue #25): a wrong named column, an unknown scheme or a judge missing from a long
table is said once, naming it and what exists, however many rows the table has; rows failing the same way
are counted, not repeated."""

from __future__ import annotations

import pytest

from apps.cli import main
from samples.errors import InputError
from samples.imports import TableRow, select, with_id_groups
from tests.samples.test_import_commits import _one_line, _table_args, _wide

COLUMNS = "['ann_1', 'ann_2', 'ann_3', 'family', 'id', 'judge_bad', 'judge_good']"


def test_a_wrong_unit_column_is_one_line_said_once(tmp_path, capsys):
    table, study = _wide(tmp_path / "t.csv", 40), tmp_path / "study"
    args = _table_args(table, study)
    args[args.index("id")] = "ID"
    assert main(args) == 2
    err = _one_line(capsys)
    assert err.count("no column 'ID'") == 1, err
    assert f"--unit-column: no column 'ID'; its columns: {COLUMNS}" in err
    assert not study.exists()


@pytest.mark.parametrize("command", ["units", "human-labels", "judge-labels"])
def test_every_import_command_names_a_wrong_unit_column_once(tmp_path, capsys, command):
    table, study = _wide(tmp_path / "t.csv", 40), tmp_path / "study"
    if command != "units":
        assert main(["import", "units", str(table), "--study", str(study), "--unit-column", "id",
                     "--kind", "identify_trajectory"]) == 0
        capsys.readouterr()
    extra = {"units": ["--kind", "identify_trajectory"], "human-labels": ["--annotator-columns", "ann_1"],
             "judge-labels": ["--judge", "j", "--output-column", "judge_good"]}[command]
    assert main(["import", command, str(table), "--study", str(study), "--unit-column", "Id", *extra]) == 2
    err = _one_line(capsys)
    assert err.count("no column 'Id'") == 1 and f"its columns: {COLUMNS}" in err, err


def test_a_where_column_that_does_not_exist_is_named(tmp_path, capsys):
    table, study = _wide(tmp_path / "t.csv", 30), tmp_path / "study"
    assert main(["import", "units", str(table), "--study", str(study), "--unit-column", "id",
                 "--kind", "identify_trajectory"]) == 0
    capsys.readouterr()
    assert main(["import", "judge-labels", str(table), "--study", str(study), "--unit-column", "id", "--judge", "j",
                 "--output-column", "judge_good", "--where", "famly=f1"]) == 2
    err = _one_line(capsys)
    assert f"where: no column 'famly'; its columns: {COLUMNS}" in err, err  # was: "no rows with {...}"


def test_an_unknown_scheme_is_said_once(tmp_path, capsys):
    table, study = _wide(tmp_path / "t.csv", 30), tmp_path / "study"
    assert main([*_table_args(table, study), "--scheme", "binary"]) == 2
    err = _one_line(capsys)
    assert err.count("unknown label scheme 'binary'") == 1 and "row(s)" not in err, err
    assert not study.exists()


def test_a_kind_that_is_not_a_unit_kind_is_said_once(tmp_path, capsys):
    table, study = _wide(tmp_path / "t.csv", 30), tmp_path / "study"
    args = _table_args(table, study)
    args[args.index("identify_trajectory")] = "refusal"  # a scheme's name, not a unit kind
    assert main(args) == 2
    err = _one_line(capsys)
    assert "--kind 'refusal': not a unit kind; expected one of ['asa_m0', 'asa_m1'," in err
    assert err.count("refusal") == 1 and not study.exists(), err


def test_a_long_tables_judge_that_is_not_a_rater_is_named(tmp_path, capsys):
    table, study = tmp_path / "long.csv", tmp_path / "study"
    table.write_text("id,rater,label\n" + "".join(f"u{i},{r},yes\n" for i in range(20) for r in ("a1", "a2", "jj")))
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "id", "--kind", "response",
                 "--rater-column", "rater", "--label-column", "label", "--judges", "jx", "--scheme", "any"]) == 2
    err = _one_line(capsys)
    assert "--judges: no rater 'jx' in column 'rater'; its raters: ['a1', 'a2', 'jj']" in err, err
    assert not study.exists()


def test_rows_failing_the_same_way_are_counted_not_repeated(tmp_path, capsys):
    """Every annotator-1 label is 'maybe' (not an identify_trajectory label): the problem is said once with the
    first row's place and the count of the others; a different problem keeps its own entry."""
    lines = ["id,family,ann_1,ann_2,ann_3,judge_good,judge_bad"] + [f"u{i},f1,maybe,yes,no,yes,no" for i in range(30)]
    lines[7] = "u6,f1,perhaps,yes,no,yes,no"
    table, study = tmp_path / "t.csv", tmp_path / "study"
    table.write_text("\n".join(lines) + "\n")
    assert main(_table_args(table, study)) == 2
    err = _one_line(capsys)
    assert err.count("'maybe'") == 1 and err.count("'perhaps'") == 1, err
    assert "30 row(s) could not be imported" in err
    assert "t.csv:2: label 'maybe'" in err and "(and 28 more row(s) the same)" in err
    assert not study.exists()


def test_the_study_files_id_pattern_names_a_missing_unit_column():
    rows = [TableRow(f"t.json[{i}]", {"instance": f"{i}__a__b__1", "label": "tie"}) for i in range(25)]
    with pytest.raises(InputError) as error:
        with_id_groups(rows, "instanc", r"(?P<q>\d+)__.*")
    assert str(error.value) == "t.json: unit_column: no column 'instanc'; its columns: ['instance', 'label']"
    with pytest.raises(InputError, match=r"^t.json: where: no column 'rater'; its columns: \['instance', 'label'\]$"):
        select(rows, {"rater": "gpt-4o"})


def test_a_table_read_again_after_it_changed_is_parsed_again(tmp_path):
    """read_table keeps the last table parsed (a study file names one table per judge); an edited file is new."""
    from samples.imports import read_table

    table = tmp_path / "t.csv"
    table.write_text("id,label\nu1,yes\n")
    first = read_table(table)
    assert read_table(table) == first and read_table(table) is not first  # a copy: callers may extend it
    table.write_text("id,label\nu1,no\nu2,yes\n")
    assert [row.values["label"] for row in read_table(table)] == ["no", "yes"]
