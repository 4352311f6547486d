"""One scheme per comparison: judge and people in different schemes stop with one line unless the study
maps one onto the other; a policy label the scheme does not have stops the gate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from apps.cli import main
from apps.study import LabelMap
from samples.layout import StudyLayout
from tests.agreement.test_gate_baselines import HEAD, issue_table

EHQ = ("ABSTAIN", "HEDGE", "CONFIDENT_CORRECT", "CONFIDENT_WRONG")


@pytest.fixture
def mixed_study(tmp_path) -> Path:
    """120 response units coded by two people in EHQ's four classes; a judge answering in ANSWER/DECLINE
    that declines exactly where the first coder says ABSTAIN."""
    rng = np.random.default_rng(7)
    people = rng.choice(EHQ, size=(120, 2))
    frame = pd.DataFrame({"unit": [f"r{i:03d}" for i in range(120)], "c1": people[:, 0], "c2": people[:, 1],
                          "judge": np.where(people[:, 0] == "ABSTAIN", "DECLINE", "ANSWER")})
    frame.to_csv(tmp_path / "t.csv", index=False)
    study = tmp_path / "study"
    assert main(["import", "table", str(tmp_path / "t.csv"), "--study", str(study), "--unit-column", "unit",
                 "--kind", "response", "--annotator-columns", "c1,c2"]) == 0
    assert main(["import", "judge-labels", str(tmp_path / "t.csv"), "--study", str(study), "--judge", "dec",
                 "--unit-column", "unit", "--output-column", "judge", "--scheme", "decision"]) == 0
    return study


def test_judge_and_people_in_different_schemes_stop_every_path(mixed_study, tmp_path, repo, capsys):
    (tmp_path / "p.toml").write_text(HEAD + '\n[[criteria]]\ntype = "unscored_share"\nmax_share = 0.1\n')
    capsys.readouterr()
    for args in (["validate", str(mixed_study)], ["gate", str(mixed_study), "--policy", str(tmp_path / "p.toml")],
                 ["audit", str(mixed_study), "--positive", "DECLINE", "--judge", "dec"]):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "judge 'dec' labels in scheme 'decision'" in err and "scheme 'ehq4'" in err and "[[label_map]]" in err


def test_a_declared_label_map_compares_them(mixed_study, repo, capsys):
    declared = LabelMap(kind="response", from_scheme="ehq4", to_scheme="decision",
                        labels={"ABSTAIN": "DECLINE", "HEDGE": "ANSWER", "CONFIDENT_CORRECT": "ANSWER",
                                "CONFIDENT_WRONG": "ANSWER"})
    StudyLayout.of(mixed_study).label_map.write_text(json.dumps([declared.model_dump(mode="json")]))
    capsys.readouterr()
    assert main(["validate", str(mixed_study), "--n-resamples", "200", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    section = body["sections"][0]
    assert section["categories"] == ["ANSWER", "CALL_TOOL", "DECLINE"]  # the decision scheme keeps CALL_TOOL
    # The judge copies coder 1 read through the map: its raw agreement with c1 is 1.
    versus = {p["rater_b"]: p for p in section["judges_vs_humans"][0]["vs_annotators"]}
    assert versus["c1"]["results"]["percent_agreement"]["statistic"] == 1.0
    assert "label_map.json" in body["fingerprints"]
    # strict.toml's family contrast counts "yes", a label no one can give on this study: it stops, never passes.
    assert main(["gate", str(mixed_study), "--policy", str(repo / "data" / "policies" / "strict.toml")]) == 2
    assert "label(s) ['yes']" in capsys.readouterr().err
    with pytest.raises(Exception, match="exactly once"):
        LabelMap(kind="response", from_scheme="ehq4", to_scheme="decision", labels={"ABSTAIN": "DECLINE"})


def test_a_policy_label_the_scheme_does_not_have_stops_the_gate(tmp_path, repo, capsys):
    study = tmp_path / "study"
    assert main(["import", "table", str(issue_table(tmp_path / "t.csv")), "--study", str(study), "--unit-column",
                 "unit", "--kind", "identify_turn", "--annotator-columns", "a1,a2,a3", "--judge-columns", "good"]) == 0
    typo = tmp_path / "typo.toml"
    typo.write_text(HEAD + '\n[[criteria]]\ntype = "family_contrast"\npositive = ["Yes"]\nmax_abs_contrast = 0.1\n')
    capsys.readouterr()
    assert main(["gate", str(study), "--policy", str(typo)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "criterion #1 (family contrast): label(s) ['Yes']" in err
    assert "['identify_turn']" in err and "['yes', 'no']" in err
