"""accord import: tables people already have, into a study, through the CLI; every bad input with its exact line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.cli import main


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


TABLE = "item,family,a1,a2,a3,gpt\ni1,openai,yes,yes,no,YES\ni2,qwen,no,no,no,NO\ni3,openai,yes,yes,yes,maybe\n"


def test_one_table_to_a_verdict_in_two_commands(tmp_path, capsys):
    """Import units, human labels and judge verdicts from one CSV; the gate then gives a verdict (exit 0 or 1)."""
    table = _write(tmp_path / "verdicts.csv", TABLE)
    study = tmp_path / "study"
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "item", "--kind",
                 "escalate_final", "--strata-columns", "family", "--annotator-columns", "a1,a2,a3",
                 "--judge-columns", "gpt", "--output-kind", "yes_no", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["units"] == 3 and report["human_labels"] == 9
    assert report["judges"][0]["ok"] == 2 and report["judges"][0]["unscored"] == {"wrong_format": 1}
    policy = Path(__file__).resolve().parents[2] / "data" / "policies" / "screening.toml"
    code = main(["gate", str(study), "--policy", str(policy), "--json"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == (0 if verdict["verdict"] == "ACCEPT" else 1)
    # Three units cannot show anything: the verdict rejects with reasons instead of failing to run.
    assert verdict["verdict"] == "REJECT"
    rows = [json.loads(line) for line in (study / "judges/imported/gpt.jsonl").read_text().splitlines()]
    assert [(r["unit_id"], r["label"], r["raw_output"], r["parse_status"]) for r in rows] == [
        ("i1", "yes", "YES", "ok"), ("i2", "no", "NO", "ok"), ("i3", None, "maybe", "unscored")]
    labels = [json.loads(line) for line in (study / "labels/imported/verdicts.jsonl").read_text().splitlines()]
    assert {r["backend"] for r in labels} == {"import"} and all(r["source"].startswith("verdicts.csv sha256:") for r in labels)


def test_labels_and_output_kinds_as_people_type_them(tmp_path, capsys):
    """Issue #25: `--output-kind YES_NO` was an unknown kind, and under it (strict, the default) "Yes" and "No"
    were unscored; a human "Yes" in an escalate table was refused; a judge cell "Yes" without an output kind was
    unscored. Case is not format: each reads as the scheme's label. "YES." stays for the lenient parse, which
    the unscored reason names."""
    table = _write(tmp_path / "typed.csv", "item,a1,a2,gpt\ni1,Yes,yes,Yes\ni2,no,NO,YES.\ni3,yes,No ,no\n")
    study = tmp_path / "study"
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "item", "--kind",
                 "escalate_final", "--annotator-columns", "a1,a2", "--judge-columns", "gpt", "--output-kind",
                 "YES_NO", "--json"]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in (study / "judges/imported/gpt.jsonl").read_text().splitlines()]
    assert [(r["raw_output"], r["label"], r["label_lenient"]) for r in rows] == [
        ("Yes", "yes", "yes"), ("YES.", None, "yes"), ("no", "no", "no")]
    assert rows[1]["unscored_reason"] == "wrong_format: expected exactly YES or NO (the lenient parse reads 'yes')"
    labels = [json.loads(line) for line in (study / "labels/imported/typed.jsonl").read_text().splitlines()]
    assert sorted(r["label"] for r in labels) == ["no", "no", "no", "yes", "yes", "yes"]
    verdicts = _write(tmp_path / "verdicts.csv", "item,out\ni1,YES\ni2,No\ni3,maybe\n")
    assert main(["import", "judge-labels", str(verdicts), "--study", str(study), "--judge", "canon", "--unit-column",
                 "item", "--output-column", "out"]) == 0
    rows = [json.loads(line) for line in (study / "judges/imported/canon.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == ["yes", "no", None]
    assert main(["import", "judge-labels", str(table), "--study", str(study), "--judge", "loose", "--unit-column",
                 "item", "--output-column", "gpt", "--output-kind", "yes_no", "--parse-mode", "Lenient"]) == 0
    rows = [json.loads(line) for line in (study / "judges/imported/loose.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == ["yes", "yes", "no"]  # "YES." under the lenient parse


LONG = ("item,rater,label\ni1,a1,yes\ni1,a2,yes\ni1,gpt,yes\ni1,claude,\n"
        "i2,a1,no\ni2,a2,no\ni2,gpt,no\ni2,claude,no\n")


def test_a_judge_no_row_rates_is_named_with_the_raters_and_nothing_is_written(tmp_path, capsys):
    """Found walking "Bringing real data": `--judges gpt,claud` (a typo) in a long table left claude's rows to the
    people, and the error blamed claude's empty verdict as an empty human label ("column 'label' is empty")."""
    table = _write(tmp_path / "long.csv", LONG)
    study = tmp_path / "study"
    argv = ["import", "table", str(table), "--study", str(study), "--unit-column", "item", "--kind", "escalate_final",
            "--rater-column", "rater", "--label-column", "label"]
    assert main([*argv, "--judges", "gpt,claud"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"accord import: error: {table}: --judges: no rater 'claud' in column 'rater'; "
                           "its raters: ['a1', 'a2', 'claude', 'gpt']")
    assert not study.exists()
    assert main([*argv, "--judges", "gpt,claude", "--json"]) == 0  # the fixed command imports, claude's empty one unscored
    report = json.loads(capsys.readouterr().out)
    assert report["human_labels"] == 4 and [j["ok"] for j in report["judges"]] == [2, 1]


@pytest.fixture()
def study(tmp_path) -> Path:
    table = _write(tmp_path / "units.csv", "item,trace,mode\nt1|m1,t1,m1\nt1|m2,t1,m2\nt2|m1,t2,m1\n")
    root = tmp_path / "study"
    assert main(["import", "units", str(table), "--study", str(root), "--unit-column", "item", "--kind",
                 "identify_trajectory", "--cluster-column", "trace", "--strata-columns", "mode"]) == 0
    return root


def test_raw_json_outputs_go_through_the_live_parsers(study, tmp_path):
    outputs = tmp_path / "judge.jsonl"
    outputs.write_text("\n".join(json.dumps(r) for r in [
        {"item": "t1|m1", "out": {"flag": 1, "first_recognition_turn": 3}},
        {"item": "t1|m2", "out": '{"flag": 0, "first_recognition_turn": -1}'},
        {"item": "t2|m1", "out": "I cannot judge this."}]) + "\n")
    assert main(["import", "judge-labels", str(outputs), "--study", str(study), "--judge", "j", "--unit-column",
                 "item", "--output-column", "out", "--output-kind", "identify_json"]) == 0
    rows = {r["unit_id"]: r for r in map(json.loads, (study / "judges/imported/j.jsonl").read_text().splitlines())}
    assert (rows["t1|m1"]["label"], rows["t1|m1"]["first_turn"]) == ("yes", 3)
    assert rows["t1|m2"]["label"] == "no"
    assert rows["t2|m1"]["parse_status"] == "unscored" and rows["t2|m1"]["unscored_reason"]


@pytest.mark.parametrize(("table", "options", "error"), [
    ("item,ann,label\nt1|m1,alice,yes\nt9|m1,alice,no\n", ["--annotator-column", "ann", "--label-column", "label"],
     "{file}:3: unit 't9|m1' is not a unit of the study"),
    ("item,ann,label\nt1|m1,alice,yes\nt1|m1,alice,no\n", ["--annotator-column", "ann", "--label-column", "label"],
     "{file}:3: annotator 'alice' labels the same unit as {file}:2"),
    ("item,ann,label\nt1|m1,alice,perhaps\n", ["--annotator-column", "ann", "--label-column", "label"],
     "{file}:2: label 'perhaps' is not one of ['yes', 'no'] (scheme 'identify')"),
    ("item,ann,label\nt1|m1,alice,yes\n", ["--annotator-column", "who", "--label-column", "label"],
     "{file}: --annotator-column: no column 'who'; its columns: ['ann', 'item', 'label']"),
    ("item,ann,label\nt1|m1,alice\n", ["--annotator-column", "ann", "--label-column", "label"],
     "{file}:2: 2 fields; the header has 3"),
    ('item,ann,label\nt1|m1,"alice,yes\n', ["--annotator-column", "ann", "--label-column", "label"],
     "{file}:2: a quoted field is never closed"),
    ("item,a1,a2\nt1|m1,1,yes\n", ["--annotator-columns", "a1,a2"], "mixes numbers"),
])
def test_bad_human_tables_are_refused_with_their_line_and_nothing_is_written(study, tmp_path, capsys, table, options,
                                                                           error):
    path = _write(tmp_path / "labels.csv", table)
    if "mixes" in error:
        path = tmp_path / "labels.jsonl"
        path.write_text('{"item": "t1|m1", "a1": 1, "a2": "yes"}\n')
    before = _snapshot(study)
    capsys.readouterr()
    code = main(["import", "human-labels", str(path), "--study", str(study), "--unit-column", "item", *options])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert error.format(file=path) in err
    assert _snapshot(study) == before


def test_a_second_verdict_for_a_unit_is_refused(study, tmp_path, capsys):
    path = _write(tmp_path / "j.csv", "item,out\nt1|m1,yes\nt1|m1,no\n")
    assert main(["import", "judge-labels", str(path), "--study", str(study), "--judge", "j", "--unit-column", "item",
                 "--output-column", "out"]) == 2
    assert f"{path}:3: a second verdict for unit 't1|m1' (first at {path}:2)" in capsys.readouterr().err
    assert not (study / "judges/imported").exists()


def test_labels_from_two_backends_by_the_same_person_on_one_unit_name_both_rows(study, tmp_path, capsys):
    first = _write(tmp_path / "one.csv", "item,ann,label\nt1|m1,alice,yes\n")
    second = _write(tmp_path / "two.csv", "item,ann,label\nt1|m1,alice,no\n")
    for path in (first, second):
        assert main(["import", "human-labels", str(path), "--study", str(study), "--unit-column", "item",
                     "--annotator-column", "ann", "--label-column", "label"]) == 0
    _write(tmp_path / "j.csv", "item,out\nt1|m1,yes\nt1|m2,no\nt2|m1,no\n")
    assert main(["import", "judge-labels", str(tmp_path / "j.csv"), "--study", str(study), "--judge", "j",
                 "--unit-column", "item", "--output-column", "out"]) == 0
    capsys.readouterr()
    assert main(["validate", str(study)]) == 2
    err = capsys.readouterr().err
    assert "labels/imported/one.jsonl:1" in err and "labels/imported/two.jsonl:1" in err


def test_units_twice_and_missing_files_are_usage_errors(study, tmp_path, capsys):
    table = _write(tmp_path / "units.csv", "item\nx\n")
    assert main(["import", "units", str(table), "--study", str(study), "--unit-column", "item", "--kind", "response"]) == 2
    assert "already has units" in capsys.readouterr().err
    assert main(["import", "human-labels", str(tmp_path / "nope.csv"), "--study", str(study), "--unit-column", "item",
                 "--annotator-columns", "a"]) == 2
    assert f"{tmp_path / 'nope.csv'}: file not found" in capsys.readouterr().err
