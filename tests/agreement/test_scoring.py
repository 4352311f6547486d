"""ISE Eq. 1-3 on hand-computed cases, the Table 5 '--' vs 0.0 rule, bootstrap and tests."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportions_ztest
from statsmodels.stats.weightstats import ttest_ind

from agreement.scoring import (
    identify_estimates,
    instance_table,
    score_table,
    solve_indicator,
    tool_facts,
    two_proportion_z,
)
from apps.cli import main
from samples.errors import InputError
from samples.records import Step, ToolCall, Trajectory
from tests.agreement.test_study_io import write_ise_study


def traj(calls_by_turn, *, truncated=False):
    """A trajectory: user prompt, one assistant turn per entry (its tool calls), then a final answer."""
    steps = [Step(index=0, role="user", text="q")]
    for calls in calls_by_turn:
        steps.append(Step(index=len(steps), role="assistant", text="t",
                          tool_calls=[ToolCall(name=n, arguments=a) for n, a in calls]))
        if calls:
            steps.append(Step(index=len(steps), role="tool", text="result"))
    if not truncated:
        steps.append(Step(index=len(steps), role="assistant", text="answer", is_final=True))
    return Trajectory(id="t", agent="A", backbone="b", family="f", dataset="D", steps=steps, truncated=truncated,
                      final_answer=None if truncated else "answer")


def test_tool_facts_numbers_turns_as_the_identify_judge_sees_them():
    # turn 0: no call; turn 1: search(q=1); turn 2: search(q=2) -> last call at turn 2 (tool steps are not turns).
    facts = tool_facts(traj([[], [("search", {"q": 1})], [("search", {"q": 2})]]))
    assert (facts.last_tool_turn, facts.n_tool_calls, facts.n_distinct_calls) == (2, 2, 2)
    assert facts.duplicate_free and not facts.truncated


def test_exact_duplicate_is_name_and_arguments():
    same = tool_facts(traj([[("search", {"q": 1, "k": 2})], [("search", {"k": 2, "q": 1})]]))
    assert not same.duplicate_free  # key order does not make a call new
    other = tool_facts(traj([[("search", {"q": 1})], [("fetch", {"q": 1})]]))
    assert other.duplicate_free
    none = tool_facts(traj([[], []]))
    assert none.last_tool_turn == -2 and none.duplicate_free


def test_solve_indicator_hand_cases():
    # (t*, last tool turn, duplicate-free, truncated) -> b
    cases = [
        (1, 1, True, False, False),   # call at t* is not after recognition
        (0, 1, True, False, True),    # call after recognition, clean end
        (0, 3, False, False, False),  # a duplicate call anywhere disqualifies
        (0, 3, True, True, False),    # truncated: no clean termination
        (-1, -2, True, False, False),  # no tool call at all
    ]
    t, last, dup_free, trunc, expected = map(np.array, zip(*cases))
    assert (solve_indicator(t, last, dup_free, trunc) == expected).all()


def instance(**kw):
    base = dict(trajectory_id="x", agent="A", backbone="b", family="f", dataset="D", setting="controlled",
                split="conflict", flag=0.0, first_turn=-1.0, last_tool_turn=-2.0, duplicate_free=True,
                truncated=False, correct=1.0, escalate=0.0)
    base.update(kw)
    return base


def rows_for(cell):
    return {r.key["split"]: r for r in cell}


def test_eq1_identify_precision_recall_f1_hand_computed():
    # Conflict: 3 flagged (TP), 2 not flagged (FN). Control: 1 flagged (FP), 4 not (TN).
    # P = 3/4, R = 3/5, F1 = 2*3 / (2*3 + 1 + 2) = 6/9.
    data = ([instance(split="conflict", flag=1.0, first_turn=0.0) for _ in range(3)]
            + [instance(split="conflict", flag=0.0) for _ in range(2)]
            + [instance(split="control", flag=1.0, first_turn=0.0)]
            + [instance(split="control", flag=0.0) for _ in range(4)])
    rows = rows_for(score_table(pd.DataFrame(data), n_resamples=500))
    conflict = rows["conflict"]
    assert conflict.identify_precision.statistic == pytest.approx(3 / 4)
    assert conflict.identify_recall.statistic == pytest.approx(3 / 5)
    assert conflict.identify_f1.statistic == pytest.approx(6 / 9)
    assert not rows["control"].identify_f1.defined  # reported once, on the conflict row
    assert "jointly" in rows["control"].identify_f1.undefined_reason


def test_eq2_solve_over_flagged_conflict_instances():
    data = [
        instance(flag=1.0, first_turn=0.0, last_tool_turn=2.0),                        # b = 1
        instance(flag=1.0, first_turn=2.0, last_tool_turn=2.0),                        # call not after t*
        instance(flag=1.0, first_turn=0.0, last_tool_turn=2.0, duplicate_free=False),  # duplicate
        instance(flag=1.0, first_turn=0.0, last_tool_turn=2.0, truncated=True),        # truncated
        instance(flag=0.0, last_tool_turn=5.0),                                        # not flagged: not counted
        instance(split="control", flag=1.0, first_turn=0.0, last_tool_turn=3.0),       # control: not counted
    ]
    rows = rows_for(score_table(pd.DataFrame(data), n_resamples=500))
    assert rows["conflict"].first_turn.statistic == pytest.approx((0 + 2 + 0 + 0) / 4)
    assert rows["conflict"].solve.statistic == pytest.approx(1 / 4)
    assert rows["conflict"].solve.n == 4
    assert not rows["control"].solve.defined


def test_eq3_escalate_conditions_on_wrong_answers_not_on_identify():
    data = [
        instance(flag=0.0, correct=0.0, escalate=1.0),   # escalates without identifying: counted as 1
        instance(flag=1.0, first_turn=0.0, correct=0.0, escalate=0.0),
        instance(flag=1.0, first_turn=0.0, correct=1.0, escalate=1.0),   # correct: not in denominator
        instance(flag=0.0, correct=0.0, escalate=math.nan, truncated=True),  # truncated: a = 0, c = 0
        instance(split="control", correct=0.0, escalate=1.0),          # control: not counted
    ]
    rows = rows_for(score_table(pd.DataFrame(data), n_resamples=500))
    assert rows["conflict"].escalate.statistic == pytest.approx(1 / 3)
    assert rows["conflict"].escalate.n == 3


def test_table5_rule_dash_for_empty_zero_for_empirical_zero():
    # Flagged but never solved -> Solve 0.0; all answers correct -> Escalate has no denominator -> "--".
    data = [instance(flag=1.0, first_turn=3.0, last_tool_turn=1.0, correct=1.0), instance(split="control")]
    rows = rows_for(score_table(pd.DataFrame(data), n_resamples=500))
    # 0 of 1: the Clopper-Pearson interval [0, 1 - 0.025^(1/1)] = [0, 0.975], never a zero-width [0, 0].
    assert rows["conflict"].solve.statistic == 0.0 and rows["conflict"].solve.format() == "0.000 [0.000, 0.975]"
    assert rows["conflict"].escalate.format() == "--"
    assert "denominator is 0" in rows["conflict"].escalate.undefined_reason
    # Nothing flagged at all -> Solve "--"; Identify F1 is an empirical 0.0 (recall 0 with conflict present).
    data = [instance(flag=0.0), instance(split="control")]
    rows = rows_for(score_table(pd.DataFrame(data), n_resamples=500))
    assert not rows["conflict"].solve.defined
    assert rows["conflict"].identify_f1.statistic == 0.0
    assert not rows["conflict"].identify_precision.defined


def test_unscored_labels_leave_denominators_and_are_counted():
    data = [instance(flag=math.nan), instance(flag=1.0, first_turn=0.0, last_tool_turn=1.0),
            instance(correct=0.0, escalate=math.nan), instance(correct=0.0, escalate=1.0), instance(split="control")]
    rows = rows_for(score_table(pd.DataFrame(data), n_resamples=500))
    conflict = rows["conflict"]
    assert conflict.unscored == {"identify": 1, "correctness": 0, "escalate": 1}
    assert conflict.escalate.statistic == 1.0 and conflict.escalate.n == 1
    assert conflict.identify_recall.n == 3  # the unscored conflict instance is not a "no"


def test_percentile_bootstrap_matches_scipy_bootstrap():
    # The binomial draw is the exact law of a resampled 0/1 mean: intervals agree with
    # scipy.stats.bootstrap(percentile) up to Monte Carlo error.
    correct = np.array([1.0] * 37 + [0.0] * 63)
    data = [instance(correct=c) for c in correct] + [instance(split="control")]
    ours = rows_for(score_table(pd.DataFrame(data), n_resamples=10_000))["conflict"].accuracy
    ref = stats.bootstrap((correct,), np.mean, n_resamples=10_000, method="percentile",
                          random_state=np.random.default_rng(1)).confidence_interval
    assert ours.statistic == pytest.approx(0.37)
    assert ours.ci_low == pytest.approx(ref.low, abs=0.011) and ours.ci_high == pytest.approx(ref.high, abs=0.011)


def test_conflict_vs_control_tests_match_statsmodels():
    z = two_proportion_z(12, 40, 25, 45)
    stat, p = proportions_ztest([12, 25], [40, 45])
    assert z.statistic == pytest.approx(stat) and z.p_value == pytest.approx(p)
    scores = np.linspace(0, 1, 30)
    data = ([instance(correct=s) for s in scores[:12]] + [instance(split="control", correct=s) for s in scores[8:]])
    contrast = rows_for(score_table(pd.DataFrame(data), n_resamples=500))["conflict"].contrast
    t, p, _ = ttest_ind(scores[:12], scores[8:], usevar="unequal")
    assert contrast.test == "Welch t" and contrast.statistic == pytest.approx(t) and contrast.p_value == pytest.approx(p)


def test_same_seed_same_bytes_and_cells_independent():
    data = [instance(flag=float(i % 2), first_turn=0.0 if i % 2 else -1.0, last_tool_turn=1.0, correct=float(i % 3 == 0),
                     escalate=float(i % 4 == 0)) for i in range(40)] + [instance(split="control", flag=float(i % 5 == 0))
                                                                       for i in range(30)]
    first = [r.to_dict() for r in score_table(pd.DataFrame(data), n_resamples=1000)]
    again = [r.to_dict() for r in score_table(pd.DataFrame(data), n_resamples=1000)]
    assert first == again
    other_cell = [instance(agent="Z", split=s) for s in ("conflict", "control")]
    with_more = [r.to_dict() for r in score_table(pd.DataFrame(data + other_cell), n_resamples=1000)
                 if r.key["agent"] == "A"]
    assert with_more == first


def test_identify_bootstrap_interval_contains_point():
    flag = np.array([1, 1, 0, 1, 0, 0, 1, 0] * 10, float)
    conflict = np.array([1, 1, 1, 0, 0, 0, 1, 1] * 10, bool)
    est = identify_estimates(flag, conflict, n_resamples=2000, seed=3, level=0.95)
    for e in est.values():
        assert e.ci_low <= e.statistic <= e.ci_high


def test_bad_split_is_rejected():
    with pytest.raises(ValueError, match="split"):
        score_table(pd.DataFrame([instance(split="none")]), n_resamples=500)


# --- the study-level benchmark (accord score) ---------------------------------------------------

LENIENT = """[policy]
name = "lenient"
description = "test: accept any judge with an AC1 lower bound above -1"
level = 0.95
tie_policy = "exclude"
n_resamples = 200
seed = 20261129

[[criteria]]
type = "agreement_floor"
coefficient = "gwet_ac1"
reference = "human_majority"
min_lower_bound = -1.0
"""
SCORE = ["--identify-judge", "identify@j", "--escalate-judge", "escalate@j", "--correctness-judge", "correct@j",
         "--n-resamples", "500"]


@pytest.fixture()
def ise(tmp_path):
    write_ise_study(tmp_path, sample_share=0.8)  # >= 100 validated units (MIN_UNITS)
    (tmp_path / "lenient.toml").write_text(LENIENT)
    return tmp_path


def test_instance_table_joins_judges_and_tool_facts(ise):
    frame, notes = instance_table(ise, identify_judge="identify@j", escalate_judge="escalate@j",
                                  correctness_judge="correct@j")
    assert len(frame) == 160 and not notes
    labels = pd.DataFrame([json.loads(x) for x in (ise / "judges" / "labels.jsonl").read_text().splitlines()])
    ident = labels[labels["judge"] == "identify@j"].set_index("unit_id")["label"]
    expected = frame["identify_unit"].map(ident).map({"yes": 1.0, "no": 0.0})
    assert np.array_equal(frame["flag"].to_numpy(), expected.to_numpy(), equal_nan=True)
    truncated = frame[frame["truncated"]]
    assert len(truncated) > 0 and truncated["escalate"].isna().all()  # no final turn, no escalate unit


def test_score_refuses_unaccepted_judges_and_force_stamps(ise, capsys):
    assert main(["score", str(ise), *SCORE]) == 1
    assert "no gate verdict" in capsys.readouterr().err
    assert main(["score", str(ise), *SCORE, "--force", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["accepted"] is False and body["notes"][0].startswith("UNACCEPTED")
    saved = json.loads((ise / "score" / "score.json").read_text())
    assert saved["notes"][0].startswith("UNACCEPTED")


def test_score_on_accepted_judges_cites_the_verdict(ise, capsys):
    assert main(["gate", str(ise), "--policy", str(ise / "lenient.toml")]) == 0
    capsys.readouterr()
    assert main(["score", str(ise), *SCORE, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["accepted"] and body["gate"]["policy"]["name"] == "lenient"
    assert body["gate"]["verdict_file_sha256"]
    conflict = [r for r in body["rows"] if r["key"]["split"] == "conflict"]
    assert len(conflict) == 2
    for row in conflict:
        for metric in ("identify_recall", "escalate", "accuracy"):
            rg, ppi = row["corrected"][metric]["rogan_gladen"], row["corrected"][metric]["ppi"]
            assert rg["statistic"] is not None and ppi["statistic"] is not None
            assert rg["ci_low"] <= rg["statistic"] <= rg["ci_high"]
    for row in body["rows"]:
        # Every judge-scored rate is corrected or says why not; accuracy on the control split too.
        assert row["corrected"]["accuracy"]["rogan_gladen"]["statistic"] is not None
        if row["key"]["split"] == "conflict":
            assert set(row["not_correctable"]) == {"identify_precision", "identify_f1", "first_turn", "solve"}
            assert all(row["not_correctable"].values())
    check_control_accuracy_correction(ise, body)
    # Changing the judge's labels on the sample after the gate invalidates the acceptance.
    path = ise / "judges" / "labels.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    key_units = {json.loads(x)["unit_id"] for x in (ise / "sealed" / "key.jsonl").read_text().splitlines()}
    target = next(r for r in rows if r["judge"] == "identify@j" and r["unit_id"] in key_units)
    target["label"] = "no" if target["label"] == "yes" else "yes"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["score", str(ise), *SCORE]) == 1
    assert "changed since the gate" in capsys.readouterr().err


def check_control_accuracy_correction(root, body):
    """Rogan-Gladen of the control split's accuracy, counted by hand from the study files.

    Se/Sp of correct@j against the 3-annotator majority (no ties with 3 binary votes) over every
    validated correctness unit (equal weights: inclusion_prob 0.8 everywhere); observed = share of
    'correct' among the cell's control correctness units (a truncated run has no correctness unit);
    pi = clip((observed + Sp - 1) / (Se + Sp - 1), 0, 1).
    """
    def rows(name):
        return [json.loads(x) for x in (root / name).read_text().splitlines()]

    task_unit = {k["task_id"]: k["unit_id"] for k in rows("sealed/key.jsonl")}
    votes: dict[str, list[str]] = {}
    for h in rows("labels/human.jsonl"):
        votes.setdefault(task_unit[h["task_id"]], []).append(h["label"])
    majority = {u: max(set(v), key=v.count) for u, v in votes.items()}
    judge = {r["unit_id"]: r["label"] for r in rows("judges/labels.jsonl") if r["judge"] == "correct@j"}
    pairs = [(judge[u], m) for u, m in majority.items() if u in judge]
    se = sum(j == m == "correct" for j, m in pairs) / sum(m == "correct" for _, m in pairs)
    sp = sum(j == m == "incorrect" for j, m in pairs) / sum(m == "incorrect" for _, m in pairs)
    units = rows("units.jsonl")
    checked = 0
    for row in body["rows"]:
        if row["key"]["split"] != "control":
            continue
        mine = [judge[u["unit_id"]] for u in units if u["kind"] == "correctness" and u["unit_id"] in judge
                and u["strata"]["agent"] == row["key"]["agent"] and u["strata"]["split"] == "control"]
        observed = sum(label == "correct" for label in mine) / len(mine)
        rg = row["corrected"]["accuracy"]["rogan_gladen"]
        assert rg["n"] == len(mine)
        assert (rg["details"]["sensitivity"], rg["details"]["specificity"]) == pytest.approx((se, sp))
        assert rg["statistic"] == pytest.approx(min(1.0, max(0.0, (observed + sp - 1) / (se + sp - 1))))
        checked += 1
    assert checked == 2


def test_correctness_from_trajectory_metadata(tmp_path):
    write_ise_study(tmp_path)
    path = tmp_path / "trajectories.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for i, row in enumerate(rows):
        row["metadata"]["em"] = bool(i % 2)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    frame, _ = instance_table(tmp_path, identify_judge="identify@j", escalate_judge="escalate@j",
                              correctness_field="em")
    assert frame["correct"].tolist() == [float(i % 2) for i in range(len(rows))]
    rows[3]["metadata"]["em"] = "yes"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match="metadata\\['em'\\] = 'yes': expected a bool or a number"):
        instance_table(tmp_path, identify_judge="identify@j", escalate_judge="escalate@j", correctness_field="em")
    with pytest.raises(InputError, match="exactly one of"):
        instance_table(tmp_path, identify_judge="identify@j", escalate_judge="escalate@j")
