"""`accord ingest`, `accord sample` and `accord blind` end to end, in process."""

from __future__ import annotations

import json
from pathlib import Path

from apps.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_ingest_sample_blind_json(tmp_path: Path, capsys) -> None:
    study = tmp_path / "study"
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study), "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["trajectories"] == 3 and manifest["units_by_kind"]["escalate_final"] == 2
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "p"\nkinds = ["identify_turn"]\nstrata = ["split"]\nallocation = "fixed"\n'
                    'n_per_stratum = 2\none_per_trajectory = true\n')
    assert main(["sample", str(study), "--plan", str(plan), "--json"]) == 0
    sampled = json.loads(capsys.readouterr().out)
    # conflict: two runs (2 + 2 turns); control: one run (1 turn) -> shortfall 1, not padded
    assert [(s["stratum"], s["frame_size"], s["sampled"], s["shortfall"]) for s in sampled["strata"]] == [
        ("split=conflict", 2, 2, 0), ("split=control", 1, 1, 1)]
    assert main(["blind", str(study), "--annotators", "a,b", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] is True and summary["tasks"] == 3


def test_tables_and_input_errors(tmp_path: Path, capsys) -> None:
    study = tmp_path / "study"
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    assert "trajectories" in capsys.readouterr().out
    assert main(["sample", str(study), "--plan", str(REPO / "data" / "plans" / "proportional_escalate.toml")]) == 0
    out = capsys.readouterr()
    assert "shortfall" in out.out and "smaller than requested" in out.err
    assert main(["blind", str(tmp_path / "nowhere"), "--annotators", "a"]) == 2
    assert "sample not found" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "missing.jsonl"), "--adapter", "ise", "--study", str(study)]) == 2
    assert main(["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "nope", "--study", str(study)]) == 2
    assert "unknown adapter 'nope'" in capsys.readouterr().err
    assert main(["sample", str(study), "--plan", str(REPO / "data" / "plans" / "ise_identify.toml")]) == 2
    assert "pass --labels" in capsys.readouterr().err
