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
