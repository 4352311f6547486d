"""Built-in baseline criteria: a constant judge is REJECTED by every shipped policy, a good one is not."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agreement import RatingData
from agreement.bootstrap import DEFAULT_SEED
from agreement.criteria import BUILT_IN
from agreement.gate import evaluate, load_policy
from agreement.panels import PanelSettings, baseline_differences
from agreement.validation import BaselineComparison
from apps.cli import main
from samples.errors import InputError

HEAD = """[policy]
name = "test"
description = "test policy"
level = 0.95
tie_policy = "exclude"
n_resamples = 2000
seed = 20261129
"""


def write_policy(tmp_path: Path, *criteria: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(HEAD + "".join(f"\n[[criteria]]\n{c.strip()}\n" for c in criteria))
    return path


def issue_table(path: Path, *, seed: int = DEFAULT_SEED) -> Path:
    """The issue's case: 300 units, 36 positives (12%), three annotators each wrong on 36 units (12%),
    a judge answering "no" to everything, a good judge wrong on 15 units (5%) and a copy of it."""
    rng = np.random.default_rng(seed)
    n = 300
    truth = np.zeros(n, dtype=int)
    truth[rng.choice(n, 36, replace=False)] = 1

    def wrong_on(count: int) -> list[str]:
        out = truth.copy()
        flip = rng.choice(n, count, replace=False)
        out[flip] = 1 - out[flip]
        return ["yes" if x else "no" for x in out]

    frame = pd.DataFrame({"unit": [f"u{i:03d}" for i in range(n)], "a1": wrong_on(36), "a2": wrong_on(36),
                          "a3": wrong_on(36), "constant_no": ["no"] * n, "good": wrong_on(15)})
    frame["good_copy"] = frame["good"]
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def issue_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("issue22")
    table = issue_table(root / "table.csv")
    study = root / "study"
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "unit", "--kind",
                 "identify_turn", "--annotator-columns", "a1,a2,a3",
                 "--judge-columns", "constant_no,good,good_copy"]) == 0
    return study


def gate_json(study: Path, policy: Path, judge: str, capsys) -> tuple[int, dict]:
    code = main(["gate", str(study), "--policy", str(policy), "--judge", judge, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["screening.toml", "strict.toml"])
def test_a_constant_judge_is_rejected_by_every_shipped_policy(issue_study, repo, name, capsys):
    assert sorted(p.name for p in (repo / "data" / "policies").glob("*.toml")) == ["screening.toml", "strict.toml"]
    code, body = gate_json(issue_study, repo / "data" / "policies" / name, "constant_no", capsys)
    assert code == 1 and body["verdict"] == "REJECT"
    criteria = {c["type"]: c for c in body["judges"]["constant_no"]["criteria"]}
    floor = next(c for c in body["judges"]["constant_no"]["criteria"] if c["name"].startswith("gwet_ac1 vs"))
    # The case the issue reports: the AC1 floor passes a judge that says "no" to everything.
    assert floor["passed"] and floor["value"] > 0.8
    baseline = criteria["beats_baselines"]
    assert not baseline["passed"] and "always no (majority class)" in baseline["reason"]
    # Judge and baseline give the same label on every unit: the difference is 0 in every resample.
    always_no = [r for r in baseline["details"]["baselines"] if r["baseline"] == "always no (majority class)"]
    assert {r["coefficient"] for r in always_no} >= {"gwet_ac1", "percent_agreement"}
    assert all(r["difference"] == 0 and r["ci_low"] == 0 and r["n_units"] > 250 for r in always_no)
    kappa = criteria["tracks_input"]
    assert not kappa["passed"] and kappa["value"] == 0  # a constant's kappa is 0 by definition


def test_a_good_judge_is_still_accepted_by_screening(issue_study, repo, capsys):
    code, body = gate_json(issue_study, repo / "data" / "policies" / "screening.toml", "good", capsys)
    assert code == 0 and body["verdict"] == "ACCEPT"
    criteria = {c["type"]: c for c in body["judges"]["good"]["criteria"]}
    assert criteria["beats_baselines"]["passed"] and criteria["beats_baselines"]["ci_low"] > 0
    assert criteria["tracks_input"]["passed"]


def test_a_named_baseline_judge_must_be_beaten_too(issue_study, tmp_path, capsys):
    floor = 'type = "agreement_floor"\ncoefficient = "gwet_ac1"\nreference = "human_majority"\nmin_lower_bound = 0.3'
    named = write_policy(tmp_path, floor, 'type = "beats_baselines"\njudges = ["good_copy"]')
    code, body = gate_json(issue_study, named, "good", capsys)
    result = {c["type"]: c for c in body["judges"]["good"]["criteria"]}["beats_baselines"]
    assert code == 1 and not result["passed"] and "judge good_copy" in result["reason"]
    assert len(body["judges"]["good"]["criteria"]) == 3  # the floor, this table and the built-in kappa: no duplicate
    missing = write_policy(tmp_path, floor, 'type = "beats_baselines"\njudges = ["lexical"]')
    code, body = gate_json(issue_study, missing, "good", capsys)
    result = {c["type"]: c for c in body["judges"]["good"]["criteria"]}["beats_baselines"]
    assert code == 1 and "'lexical'" in result["reason"] and "good_copy" in result["reason"]


def test_built_ins_are_in_every_policy_and_cannot_be_loosened(tmp_path):
    only = load_policy(write_policy(tmp_path, 'type = "unscored_share"\nmax_share = 0.1'))
    assert [c.type_name for c in only.criteria] == ["unscored_share", *BUILT_IN]
    assert only.criteria[1].coefficients == ("percent_agreement",) and only.criteria[1].reference == "human_majority"
    tightened = load_policy(write_policy(
        tmp_path, 'type = "beats_baselines"\ncoefficients = ["cohen_kappa"]\nmin_lower_bound = 0.05',
        'type = "agreement_floor"\ncoefficient = "gwet_ac1"\nreference = "resolved"\nmin_lower_bound = 0.5'))
    beats = tightened.criteria[0]
    assert set(beats.coefficients) == {"cohen_kappa", "gwet_ac1", "percent_agreement"} and beats.bound == 0.05
    assert beats.reference == "resolved" and tightened.criteria[2].reference == "resolved"
    for table in ('type = "beats_baselines"\nmin_lower_bound = -0.1', 'type = "tracks_input"\nmin_lower_bound = -1',
                  'type = "beats_baselines"\ncoefficients = "gwet_ac1"'):
        with pytest.raises(InputError, match="criterion #1"):
            load_policy(write_policy(tmp_path, table))


class HandEvidence:
    """Evidence whose baselines run the real paired bootstrap on a constructed table."""

    judge = "judge"
    level = 0.95

    def __init__(self, data):
        self.data = data

    def baselines(self, coefficients, reference, judges):
        codes = self.data.codes
        constants = {"always 0": np.zeros(len(codes), int), "always 1 (majority class)": np.ones(len(codes), int)}
        return BaselineComparison(differences=tuple(baseline_differences(
            self.data, codes[:, 0], codes[:, 1], constants, list(coefficients),
            settings=PanelSettings(n_resamples=4000, seed=3))))


def test_baseline_differences_by_hand(tmp_path):
    # 100 units, reference "1" on 70 and "0" on 30; the judge is right on every "0" and wrong on 5 of the "1".
    # Accuracy: judge 0.95, always-1 0.70, always-0 0.30. Per unit, judge minus always-1 is +1 on the 30
    # zeros, -1 on the 5 misses, 0 elsewhere: mean 0.25, variance 0.35 - 0.25^2 = 0.2875. The bootstrap
    # SD of the mean is sqrt(0.2875 / 100) = 0.053619; the small-sample t interval (the human ceiling's
    # method) is 0.25 -/+ t(0.975, 99) 1.984217 x 0.053619 x sqrt(100/99): lower bound 0.14307.
    # Gwet's AC1 (two raters, q = 2): pe = 2 pi (1 - pi), pi = mean share of "0" over both raters.
    # judge: pi = (0.35 + 0.30) / 2 = 0.325, pe = 0.43875, AC1 = (0.95 - 0.43875) / 0.56125 = 0.910913;
    # always-1: pi = 0.15, pe = 0.255, AC1 = (0.70 - 0.255) / 0.745 = 0.597315.
    # Cohen's kappa: judge pe = 0.35 x 0.30 + 0.65 x 0.70 = 0.56, kappa = 0.39 / 0.44 = 0.886364; a constant's is 0.
    reference = (np.arange(100) >= 30).astype(int)
    judge = reference.copy()
    judge[30:35] = 0
    data = RatingData.from_matrix(np.column_stack([judge, reference]), raters=("judge", "reference"),
                                  categories=(0, 1))
    found = {(d.baseline, d.coefficient): d for d in HandEvidence(data).baselines(
        ("gwet_ac1", "cohen_kappa", "percent_agreement"), "human_majority", ()).differences}
    acc = found[("always 1 (majority class)", "percent_agreement")]
    assert acc.statistic == pytest.approx(0.25) and acc.baseline_value == pytest.approx(0.70) and acc.n == 100
    assert found[("always 0", "percent_agreement")].statistic == pytest.approx(0.65)
    assert float(np.std(acc.bootstrap)) == pytest.approx(0.053619, rel=0.04)
    assert acc.confidence_interval(0.95, "t_boot").low == pytest.approx(0.14307, abs=0.006)
    ac1 = found[("always 1 (majority class)", "gwet_ac1")]
    assert ac1.judge_value == pytest.approx(0.910913, abs=1e-6) and ac1.baseline_value == pytest.approx(0.597315,
                                                                                                        abs=1e-6)
    kappa = found[("always 0", "cohen_kappa")]
    assert kappa.judge_value == pytest.approx(0.886364, abs=1e-6) and kappa.baseline_value == pytest.approx(0.0)
    pol = load_policy(write_policy(tmp_path, 'type = "beats_baselines"'))
    result = evaluate(replace(pol, criteria=pol.criteria[:1]), HandEvidence(data), fingerprints={},
                      simulated=False).results[0]
    assert result.passed and result.value == pytest.approx(0.25) and result.ci_low == pytest.approx(0.14307, abs=0.006)
    strict = load_policy(write_policy(tmp_path, 'type = "beats_baselines"\nmin_lower_bound = 0.2'))
    result = strict.criteria[0].evaluate(HandEvidence(data))
    assert not result.passed and "always 1 (majority class) on percent_agreement" in result.reason
    # Below the paired difference's minimum size the reason names what is compared, not the human ceiling
    # whose coverage result it borrows.
    few = RatingData.from_matrix(np.column_stack([judge, reference])[:50], raters=("judge", "reference"),
                                 categories=(0, 1))
    result = pol.criteria[0].evaluate(HandEvidence(few))
    assert not result.passed and "50 units is too small" in result.reason
    assert "interval for a paired difference like the human ceiling's" in result.reason
    assert "for human_ceiling" not in result.reason
