"""Preregistration round trip: registered before labels -> said in the verdict; versions beyond the cap -> REJECT."""

from __future__ import annotations

import json

from apps.cli import main
from samples.layout import StudyLayout
from tests.agreement.test_gate_baselines import HEAD, issue_table

CAPPED = HEAD + """
[[criteria]]
type = "agreement_floor"
coefficient = "gwet_ac1"
reference = "human_majority"
min_lower_bound = 0.3

[[criteria]]
type = "preregistration"
required = true
max_versions_per_sample = 2
"""


def imported(tmp_path, judges: str):
    """The issue's units, people's labels imported after the judges' (the order a registered study follows)."""
    table = issue_table(tmp_path / "t.csv")
    study = tmp_path / "study"
    assert main(["import", "units", str(table), "--study", str(study), "--unit-column", "unit", "--kind",
                 "identify_turn"]) == 0
    for judge in judges.split(","):
        assert main(["import", "judge-labels", str(table), "--study", str(study), "--judge", judge,
                     "--unit-column", "unit", "--output-column", judge]) == 0
    return study, table


def add_people(study, table):
    assert main(["import", "human-labels", str(table), "--study", str(study), "--unit-column", "unit",
                 "--annotator-columns", "a1,a2,a3"]) == 0


def verdict_of(study, policy, judge, capsys):
    capsys.readouterr()
    code = main(["gate", str(study), "--policy", str(policy), "--judge", judge, "--json"])
    body = json.loads(capsys.readouterr().out)["judges"][judge]
    return code, body, {c["type"]: c for c in body["criteria"]}


def test_registered_before_labels_is_stated_and_versions_are_capped(tmp_path, capsys):
    study, table = imported(tmp_path, "good,good_copy,constant_no")
    policy = tmp_path / "capped.toml"
    policy.write_text(CAPPED)
    assert main(["preregister", str(study), "--policy", str(policy), "--judge", "good"]) == 0
    assert "before the first human label" in capsys.readouterr().out
    add_people(study, table)

    code, body, criteria = verdict_of(study, policy, "good", capsys)
    status = body["preregistration"]
    assert status["policy_registered_before_labels"] and status["judge_registered_before_labels"]
    assert status["versions_gated_on_sample"] == 1 and criteria["preregistration"]["passed"] and code == 0
    # Gating the same call again is not a new version.
    assert verdict_of(study, policy, "good", capsys)[1]["preregistration"]["versions_gated_on_sample"] == 1

    # A judge nobody registered: stated, and the policy that requires registration rejects it.
    code, body, criteria = verdict_of(study, policy, "good_copy", capsys)
    assert body["preregistration"]["policy_registered_before_labels"]
    assert not body["preregistration"]["judge_registered_before_labels"]
    assert code == 1 and "'good_copy''s calls were not registered" in criteria["preregistration"]["reason"]

    # Revised versions of "good" gated on the same human sample: each import is a new call (its file's hash).
    for version, column in ((2, "good_copy"), (3, "constant_no")):
        assert main(["import", "judge-labels", str(table), "--study", str(study), "--judge", "good", "--unit-column",
                     "unit", "--output-column", column]) == 0
        capsys.readouterr()
        code, body, criteria = verdict_of(study, policy, "good", capsys)
        assert body["preregistration"]["versions_gated_on_sample"] == version
    result = criteria["preregistration"]
    assert code == 1 and not result["passed"] and result["value"] == 3
    assert "above the policy's cap of 2 (max_versions_per_sample)" in result["reason"]
    assert "accord sample --exclude-labelled" in result["reason"]
    history = StudyLayout.of(study).gate_history.read_text().splitlines()
    assert len(history) == 4  # good x 3 versions, good_copy x 1


def test_registered_after_labels_is_not_before(tmp_path, capsys):
    study, table = imported(tmp_path, "good")
    add_people(study, table)
    policy = tmp_path / "capped.toml"
    policy.write_text(CAPPED)
    assert main(["preregister", str(study), "--policy", str(policy), "--judge", "good"]) == 0
    assert "AFTER 900 human labels" in capsys.readouterr().out
    code, body, criteria = verdict_of(study, policy, "good", capsys)
    assert not body["preregistration"]["policy_registered_before_labels"] and code == 1
    assert "policy was not registered before the human labels" in criteria["preregistration"]["reason"]
    assert main(["preregister", str(study), "--policy", str(policy), "--judge", "nobody"]) == 2


def test_a_fresh_sample_leaves_out_the_units_people_labelled(tmp_path, repo, capsys):
    from samples.jsonl import write_jsonl
    from tests.agreement.test_study_io import human_label

    plan = tmp_path / "plan.toml"
    plan.write_text('name = "all"\nkinds = ["identify_turn"]\nstrata = ["split"]\nallocation = "fixed"\n'
                    'n_per_stratum = 50\none_per_trajectory = false\n')
    first, fresh = tmp_path / "first", tmp_path / "fresh"
    for study in (first, fresh):
        assert main(["ingest", str(repo / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    assert main(["sample", str(first), "--plan", str(plan)]) == 0
    assert main(["blind", str(first), "--annotators", "a,b"]) == 0
    key = [json.loads(x) for x in (first / "sealed" / "key.jsonl").read_text().splitlines()]
    labelled = key[:2]
    write_jsonl(first / "labels" / "human.jsonl", [human_label(k["task_id"], "a", "yes") for k in labelled])
    capsys.readouterr()
    assert main(["sample", str(fresh), "--plan", str(plan), "--exclude-labelled", str(first), "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    sampled = {json.loads(x)["unit_id"] for x in (fresh / "sample" / "sample.jsonl").read_text().splitlines()}
    assert manifest["excluded_labelled"] == {"study": str(first), "units": 2}
    assert sampled == {k["unit_id"] for k in key} - {k["unit_id"] for k in labelled} and len(sampled) == len(key) - 2
    assert main(["sample", str(fresh), "--plan", str(plan), "--exclude-labelled", str(tmp_path / "nowhere")]) == 2
