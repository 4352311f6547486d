"""Study folder reading and the join; also the study builders other test files reuse."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agreement.study_io import SIMULATED_NOTE, labels_table, load_study
from samples.canonical import sha256_hex
from samples.errors import InputError
from samples.jsonl import write_jsonl
from samples.layout import StudyLayout
from samples.records import Step, ToolCall, Trajectory
from samples.units import cut_units

STAMP = "2026-11-29T00:00:00Z"


def human_label(task_id, annotator, label, *, backend="app", role="independent"):
    return dict(task_id=task_id, annotator=annotator, label=label, created_at=STAMP, updated_at=STAMP,
                backend=backend, role=role)


def judge_label(unit_id, judge, label, *, first_turn=None, reason=None):
    return dict(unit_id=unit_id, judge=judge, label=label, parse_status="ok" if label is not None else "unscored",
                unscored_reason=reason if label is None else None, first_turn=first_turn, fingerprint="fp")


def write_mad_study(root: Path, shared: Path) -> int:
    """The MAD slice of MAST as a study: trace x failure mode units, 3 annotators, the mast-lint judge.

    Real human labels (backend 'app' is the closest record value for an imported panel)."""
    data = json.loads((shared / "data" / "mad_mast_lint" / "evals" / "raw_findings.json").read_text())
    key, human, judge = [], [], []
    for trace in data:
        gold, fired = trace["gold"], set(trace["report"]["modes_fired"])
        for mode, votes in sorted(gold["votes"].items()):
            unit, task = f"u_{gold['trace_id']}_{mode}", f"t_{gold['trace_id']}_{mode}"
            key.append(dict(task_id=task, unit_id=unit, trajectory_id=gold["trace_id"], kind="identify_trajectory",
                            strata=dict(agent=gold["mas_name"], backbone="unknown", family="unknown",
                                        dataset=gold["benchmark"], setting="other", split="none"),
                            stratum=f"dataset={gold['benchmark']}", inclusion_prob=1.0))
            human += [human_label(task, f"annotator{a + 1}", "yes" if v else "no") for a, v in enumerate(votes)]
            judge.append(judge_label(unit, "mast-lint", "yes" if mode in fired else "no"))
    write_jsonl(root / "sealed" / "key.jsonl", key)
    write_jsonl(root / "labels" / "human.jsonl", human)
    write_jsonl(root / "judges" / "labels.jsonl", judge)
    return len(key)


def make_trajectory(tid, agent, backbone, family, split, rng, *, truncated=False):
    n_turns = int(rng.integers(2, 5))
    steps = [Step(index=0, role="user", text="question")]
    for t in range(n_turns):
        calls = [ToolCall(name="search", arguments={"q": f"{tid}-{t}"})] if rng.random() < 0.7 else []
        steps.append(Step(index=len(steps), role="assistant", text=f"turn {t}", tool_calls=calls))
        if calls:
            steps.append(Step(index=len(steps), role="tool", text="result"))
    if not truncated:
        steps.append(Step(index=len(steps), role="assistant", text="final answer", is_final=True))
    return Trajectory(id=tid, agent=agent, backbone=backbone, family=family, dataset="GAIA", setting="controlled",
                      split=split, references=["x"], steps=steps, truncated=truncated,
                      final_answer=None if truncated else "final answer")


def write_ise_study(root: Path, *, seed: int = 7, per_cell: int = 40, judge_accuracy: float = 0.92,
                    human_accuracy: float = 0.9, backend: str = "app", unscored: int = 0,
                    sample_share: float = 0.5) -> dict:
    """A synthetic ISE study: 2 agents x conflict/control, identify/escalate/correctness units,
    a random sample (share ``sample_share`` of every kind) with 3 annotators each and three
    judges. Truth is latent; every rater errs at random."""
    rng = np.random.default_rng(seed)
    trajectories, units, key, human, judge = [], [], [], [], []
    truth = {}
    for agent, backbone, family in (("AgentA", "gpt-x", "openai"), ("AgentB", "qwen-y", "qwen")):
        for split in ("conflict", "control"):
            for i in range(per_cell):
                tid = f"{agent}-{split}-{i}"
                traj = make_trajectory(tid, agent, backbone, family, split, rng, truncated=(i % 17 == 16))
                trajectories.append(traj)
                cut, _ = cut_units(traj, ["identify_trajectory", "escalate_final", "correctness"])
                units += cut
                recognised = rng.random() < (0.6 if split == "conflict" else 0.15)
                truth[tid] = {"identify_trajectory": "yes" if recognised else "no",
                              "escalate_final": "yes" if rng.random() < 0.3 else "no",
                              "correctness": "correct" if rng.random() < 0.5 else "incorrect"}
    flip = {"yes": "no", "no": "yes", "correct": "incorrect", "incorrect": "correct"}
    judges = {"identify_trajectory": "identify@j", "escalate_final": "escalate@j", "correctness": "correct@j"}
    unscored_left = unscored
    for unit in units:
        true = truth[unit.trajectory_id][unit.kind]
        label = true if rng.random() < judge_accuracy else flip[true]
        if unscored_left and unit.kind == "identify_trajectory":
            label, unscored_left = None, unscored_left - 1
        first = (0 if label == "yes" else -1) if unit.kind == "identify_trajectory" else None
        judge.append(judge_label(unit.unit_id, judges[unit.kind], label, first_turn=first, reason="wrong_format: x"))
        if rng.random() < sample_share:
            task = "t_" + sha256_hex(["task", unit.unit_id])[:16]
            key.append(dict(task_id=task, unit_id=unit.unit_id, trajectory_id=unit.trajectory_id, kind=unit.kind,
                            strata=unit.strata, stratum=f"agent={unit.strata['agent']}|split={unit.strata['split']}",
                            inclusion_prob=sample_share))
            for a in range(3):
                h = true if rng.random() < human_accuracy else flip[true]
                human.append(human_label(task, f"ann{a + 1}", h, backend=backend))
    write_jsonl(root / "trajectories.jsonl", trajectories)
    write_jsonl(root / "units.jsonl", units)
    write_jsonl(root / "sealed" / "key.jsonl", key)
    write_jsonl(root / "labels" / "human.jsonl", human)
    write_jsonl(root / "judges" / "labels.jsonl", judge)
    return {"truth": truth, "n_units": len(units), "n_sampled": len(key)}


def test_join_maps_tasks_to_units_and_keeps_unscored_rows(tmp_path):
    info = write_ise_study(tmp_path, unscored=3)
    study = load_study(tmp_path)
    table = labels_table(study)
    assert set(table["source"]) == {"human", "judge"}
    humans = table[table["source"] == "human"]
    assert len(humans) == 3 * info["n_sampled"]
    assert humans["unit"].isin(set(study.key["unit_id"])).all()
    judged = table[table["source"] == "judge"]
    assert set(judged["unit"]) == set(study.key["unit_id"])  # judge rows only on sampled units
    assert (table["weight"] == 2.0).all() and table["cluster"].notna().all()
    assert set(study.fingerprints) >= {"sealed/key.jsonl", "labels/human.jsonl", "judges/labels.jsonl"}
    assert not study.simulated


def test_simulated_labels_are_flagged(tmp_path):
    write_ise_study(tmp_path, backend="simulated")
    study = load_study(tmp_path)
    assert study.simulated and "SIMULATED" in SIMULATED_NOTE


def test_adjudications_kept_apart(tmp_path):
    write_ise_study(tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "labels" / "human.jsonl").read_text().splitlines()]
    rows.append(human_label(rows[0]["task_id"], "adjudicator", "yes", role="adjudication"))
    write_jsonl(tmp_path / "labels" / "human.jsonl", rows)
    table = labels_table(load_study(tmp_path))
    assert "adjudicator" not in set(table["rater"])


@pytest.mark.parametrize("problem,match", [
    ("unknown_task", "labels/human.jsonl:.*not in the sealed key"),
    ("bad_json", "human.jsonl:2: invalid JSON"),
    ("missing_field", "missing field"),
    ("ok_without_label", "parse_status 'ok' but label is null"),
    ("missing_judges", "judges/labels.jsonl: missing; validation needs"),
    ("bad_role", "human.jsonl:1: role 'final'"),
])
def test_bad_input_names_file_and_line(tmp_path, problem, match):
    write_ise_study(tmp_path)
    human = tmp_path / "labels" / "human.jsonl"
    lines = human.read_text().splitlines()
    if problem == "unknown_task":
        row = json.loads(lines[0])
        row["task_id"] = "t_nope"
        lines.append(json.dumps(row))
    elif problem == "bad_json":
        lines[1] = "{not json"
    elif problem == "missing_field":
        row = json.loads(lines[0])
        del row["annotator"]
        lines[0] = json.dumps(row)
    elif problem == "ok_without_label":
        judge = tmp_path / "judges" / "labels.jsonl"
        jl = judge.read_text().splitlines()
        row = json.loads(jl[0])
        row["label"] = None
        jl[0] = json.dumps(row)
        judge.write_text("\n".join(jl) + "\n")
    elif problem == "missing_judges":
        (tmp_path / "judges" / "labels.jsonl").unlink()
    elif problem == "bad_role":
        lines[0] = json.dumps(json.loads(lines[0]) | {"role": "final"})
    human.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=match):
        load_study(tmp_path)


def test_mad_study_join(tmp_path, shared):
    n = write_mad_study(tmp_path, shared)
    table = labels_table(load_study(tmp_path))
    assert n == 184
    counts = table.groupby("source")["rater"].count().to_dict()
    assert counts == {"human": 3 * 184, "judge": 184}
    assert not math.isnan(table["weight"].sum())
    assert isinstance(table, pd.DataFrame)


def split_backends(root: Path) -> list[dict]:
    """Move ann3's labels of an ISE study to the Label Studio pull file; returns them."""
    layout = StudyLayout.of(root)
    rows = [json.loads(line) for line in layout.app_labels.read_text().splitlines()]
    pulled = [r | {"backend": "labelstudio"} for r in rows if r["annotator"] == "ann3"]
    write_jsonl(layout.app_labels, [r for r in rows if r["annotator"] != "ann3"])
    write_jsonl(layout.labelstudio_labels, pulled)
    return pulled


def test_every_backend_forms_one_human_table_with_provenance(tmp_path):
    write_ise_study(tmp_path)
    whole = labels_table(load_study(tmp_path))
    pulled = split_backends(tmp_path)
    study = load_study(tmp_path)
    assert study.human_files == ("labels/human.jsonl", "labels/labelstudio.jsonl")
    assert {"labels/human.jsonl", "labels/labelstudio.jsonl"} <= set(study.fingerprints)
    table = labels_table(study)
    humans = table[table["source"] == "human"]
    from_ls = humans[humans["source_file"] == "labels/labelstudio.jsonl"]
    assert len(from_ls) == len(pulled) and set(from_ls["rater"]) == {"ann3"} and set(from_ls["backend"]) == {"labelstudio"}
    # The merged table holds exactly the labels of the one-file study.
    columns = ["unit", "rater", "label"]
    merged = humans[columns].sort_values(columns).reset_index(drop=True)
    assert merged.equals(whole[whole["source"] == "human"][columns].sort_values(columns).reset_index(drop=True))


def test_one_person_labelling_a_unit_in_two_backends_names_both_rows(tmp_path):
    write_ise_study(tmp_path)
    layout = StudyLayout.of(tmp_path)
    split_backends(tmp_path)
    app_rows = layout.app_labels.read_text().splitlines()
    first = json.loads(app_rows[0])  # ann1's label, now also given in Label Studio (line 2 of the pull)
    ls_rows = layout.labelstudio_labels.read_text().splitlines()
    ls_rows.insert(1, json.dumps(first | {"backend": "labelstudio", "label": "yes"}))
    layout.labelstudio_labels.write_text("\n".join(ls_rows) + "\n")
    with pytest.raises(InputError) as excinfo:
        load_study(tmp_path)
    message = str(excinfo.value)
    assert message.startswith(f"{tmp_path}/labels/human.jsonl:1 and {tmp_path}/labels/labelstudio.jsonl:2: "
                              "annotator 'ann1' has two independent labels for unit ")
    assert "in backends ['app', 'labelstudio']" in message and "\n" not in message


def test_a_study_without_human_labels_loads_with_an_empty_table(tmp_path):
    write_ise_study(tmp_path)
    StudyLayout.of(tmp_path).app_labels.unlink()
    study = load_study(tmp_path)
    assert study.human.empty and study.human_files == () and not study.simulated
    table = labels_table(study)
    assert set(table["source"]) == {"judge"} and table["adjudicated"].isna().all()
