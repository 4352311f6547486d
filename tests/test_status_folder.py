"""`accord status` on a study folder built command by command (no study file), as an import leaves it."""

from __future__ import annotations

import json

from apps.cli import main


def test_status_reads_a_folder_built_by_import(tmp_path, capsys):
    table = tmp_path / "verdicts.csv"
    rows = ["id,ann_1,ann_2,judge_good"] + [f"item{i},{'yes' if i % 3 else 'no'},{'yes' if i % 4 else 'no'},yes"
                                          for i in range(12)]
    table.write_text("\n".join(rows) + "\n")
    study = tmp_path / "study"
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "id", "--kind", "escalate_final",
                 "--annotator-columns", "ann_1,ann_2", "--judge-columns", "judge_good"]) == 0
    capsys.readouterr()
    assert main(["status", str(study), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    # 12 units registered by the import, each in the sealed key with inclusion probability 1: all "sampled"
    assert status["sample"] == {"sampled": 12, "by_kind": {"escalate_final": 12}, "source": "sealed/key.jsonl"}
    assert {name: row["labelled"] for name, row in status["labels"]["annotators"].items()} == {"ann_1": 12, "ann_2": 12}
    assert status["judges"]["imported"] == 1 and status["judges"]["runs"] == 0
    assert status["judges"]["labels"]["judge_good"] == {"rows": 12, "ok": 12, "unscored": 0, "origin": "imported"}
    assert status["verdict"] is None
    # the text names where the sample and the judge came from
    assert main(["status", str(study)]) == 0
    text = capsys.readouterr().out
    assert "sampled: 12 (from sealed/key.jsonl)" in text and "1 imported" in text
    code = main(["status", str(tmp_path / "nowhere")])
    assert code == 2


def test_an_imported_study_shows_sample_and_blind_as_not_needed(tmp_path, capsys):
    """Issue #25: an import-built folder showed sample and blind as pending, a step the user cannot take."""
    table = tmp_path / "verdicts.csv"
    table.write_text("id,ann_1,ann_2,judge\n" + "".join(f"item{i},yes,no,yes\n" for i in range(5)))
    study = tmp_path / "study"
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "id", "--kind", "escalate_final",
                 "--annotator-columns", "ann_1,ann_2", "--judge-columns", "judge"]) == 0
    capsys.readouterr()
    assert main(["status", str(study), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert {row["stage"]: row["state"] for row in status["stages"]} == {
        "units": "done", "sample": "not needed", "blind": "not needed", "sealed key": "done"}
    assert status["note"].endswith(f"next: accord gate {study} --policy POLICY.toml")
    assert main(["status", str(study)]) == 0
    text = capsys.readouterr().out
    assert "pending" not in text and text.count("not needed") >= 2 and "next: accord gate" in text


def test_a_folder_that_was_only_ingested_still_has_sample_pending(tmp_path, capsys):
    from samples.layout import StudyLayout

    layout = StudyLayout(tmp_path / "study")
    layout.root.mkdir()
    layout.units.write_text('{"unit_id":"u1","trajectory_id":"t1","kind":"escalate_final","text":"x","turns":null,'
                            '"focus_turn":null,"strata":{},"reference":{}}\n')
    assert main(["status", str(layout.root), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [row["state"] for row in status["stages"]] == ["done", "pending", "pending", "pending"]
    assert status["note"] is None
