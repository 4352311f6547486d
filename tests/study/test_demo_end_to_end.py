"""The demo study end to end on the real local models (reduced for CI: tests/support/demo.py).

Runs `accord run data/demo/study.toml` with real llama-server models, the simulated
panel through the coding app's store, validation, audit, gate, score and report;
checks every artefact against a recomputation from the stored tables; then runs it
again against a dead model-server address: every stage is skipped, so no model or
judge call is made and no file changes.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from apps.study import load_study_file
from tests.study.helpers import human_labels_match_store, recompute_matches, run_json, snapshot, statuses
from tests.support.demo import AGENT_CATEGORIES

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_demo_study_end_to_end_then_nothing_to_redo(capsys, demo_study) -> None:
    study_file, out, code, result = demo_study.study_file, demo_study.output, demo_study.exit_code, demo_study.result
    study = load_study_file(study_file, output=out)
    assert set(statuses(result).values()) == {"ran"}, result
    # The tiny local judges do not track their input: the gate must reject them (exit 1).
    assert code == 1 and result["verdict"] == "REJECT"

    # Model outputs: one item per agent category -> 2 conflict + 2 control instances per model; one closed-book
    # item per EHQ category, answered by both models.
    agent, closed = _rows(out / "sources" / "agent.jsonl"), _rows(out / "sources" / "closed-book.jsonl")
    assert len(agent) == 2 * 2 * len(AGENT_CATEGORIES)
    assert Counter(r["server_model"] for r in agent) == {"smollm2": 4, "gemma3-270m": 4}
    assert Counter(r["split"] for r in agent) == {"conflict": 4, "control": 4}
    assert {r["category"] for r in agent} == set(AGENT_CATEGORIES)
    assert len(closed) == 8 and len({r["category"] for r in closed}) == 4
    trajectories, units = _rows(out / "trajectories.jsonl"), _rows(out / "units.jsonl")
    assert len(trajectories) == 16 and {t["family"] for t in trajectories} == {"huggingface", "google"}

    # Judges: every judge labelled every population unit of its kinds, once; unscored rows are kept.
    labels = _rows(out / "judges" / "labels.jsonl")
    kinds = Counter(u["kind"] for u in units)
    for spec in study.judge_specs():
        mine = [r for r in labels if r["judge"] == spec.name]
        assert len(mine) == sum(kinds[k] for k in spec.unit_kinds), spec.name
        assert all((r["label"] is None) == (r["parse_status"] == "unscored") for r in mine)
    ends = [json.loads(line) for line in (out / "judges" / "runs.jsonl").read_text().splitlines()
            if json.loads(line)["event"] == "end"]
    assert len(ends) == 1

    # Sample and blinding: every sampled unit is a population unit; the sealed key maps every task.
    sample = _rows(out / "sample" / "sample.jsonl")
    unit_ids = {u["unit_id"] for u in units}
    assert sample and {r["unit_id"] for r in sample} <= unit_ids
    key, tasks = _rows(out / "sealed" / "key.jsonl"), _rows(out / "blind" / "tasks.jsonl")
    assert sorted(k["unit_id"] for k in key) == sorted(r["unit_id"] for r in sample)
    assert sorted(k["task_id"] for k in key) == sorted(t["task_id"] for t in tasks)

    # Simulated panel: every label is stored as simulated and is exactly the documented noise model's draw.
    from apps.demo.panel import SimulatedAnnotator, simulate_label
    from samples.records import BlindTask

    human = human_labels_match_store(out)
    assert len(human) == len(tasks) * 3 and {r["backend"] for r in human} == {"simulated"}
    by_id = {t["task_id"]: BlindTask.model_validate(t) for t in tasks}
    for row in human:
        annotator = SimulatedAnnotator(name=row["annotator"], flip_prob=study.annotation.simulated_panel[row["annotator"]])
        given, _ = simulate_label(by_id[row["task_id"]], annotator, seed=study.annotation.panel_seed)
        assert (row["label"], row["first_turn"]) == (given.label, given.first_turn)

    # Validation and the gate equal a recomputation from the stored tables; both say the labels are simulated.
    recompute_matches(out, study)
    verdict = json.loads((out / "gate" / "verdict.json").read_text())
    assert verdict["simulated"] and set(verdict["judges"]) == set(study.gate.judges)
    # Two evaluated models cannot give an interval for a family contrast: the criterion fails as
    # unmeasurable and says what it needs, instead of passing on no evidence.
    for body in verdict["judges"].values():
        (family,) = [c for c in body["criteria"] if c["type"] == "family_contrast"]
        assert not family["passed"] and family["reason"].startswith("cannot be measured")
        assert "needs at least 3 models" in family["reason"]
    assert json.loads((out / "audit" / "audit.json").read_text())["simulated"] is True

    # The judge-scored benchmark was forced for the rejected judges and is stamped so.
    from agreement.scoring import score_study
    from agreement.study_io import jsonable

    s = study.score
    score = json.loads((out / "score" / "score.json").read_text())
    assert score == jsonable(score_study(out, identify_judge=s.identify_judge, escalate_judge=s.escalate_judge,
                                         correctness_judge=s.correctness_judge, force=True, n_resamples=s.n_resamples,
                                         seed=s.seed, level=s.level))
    assert score["accepted"] is False and any(n.startswith("UNACCEPTED") for n in score["notes"])
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "SIMULATED" in html and "REJECT" in html
    # The report says for every gated judge whether its verdicts track the input (the tiny judges' mostly do not).
    markdown = (out / "report" / "report.md").read_text(encoding="utf-8")
    findings = [line for line in markdown.splitlines()
                if "does not track the input" in line or "more accurate than every constant answer" in line]
    assert all(any(f"| {judge} |" in line for line in findings) for judge in study.gate.judges)
    assert any("does not track the input" in line for line in findings)

    # Second run against a dead model-server address: nothing to redo, so no call is attempted.
    before = snapshot(out)
    code, again = run_json(capsys, str(study_file), "--output", str(out), "--base-url", "http://127.0.0.1:9")
    assert code == 1 and set(statuses(again).values()) == {"skipped"}
    assert snapshot(out) == before
