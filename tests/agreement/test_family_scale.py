"""The family contrast at scale (issue #29): equivalence, not difference, and positive rate is not family.

Simulated study: 12 evaluated models in 4 families, each model with its own true
positive rate (family "a" answers "yes" most often), three annotators who each err
on 10% of units (the reference is their majority), and two judges whose errors
depend on the class, not on the family. Per model the judge's bias against the
majority is then linear in the model's positive rate pi (hand derivation, majority
error e = 3(0.1^2)(0.9) + 0.1^3 = 0.028):

    bias(pi) = E[judge] - E[majority] = (FPR - e) + pi (2e - FNR - FPR)

so judge "skewed" (FNR 0.30, FPR 0.02) has slope 0.056 - 0.32 = -0.264 and intercept
-0.008; judge "mild" (FNR 0.05, FPR 0.12) slope -0.114, intercept 0.092. Family a's
mean rate is 0.65, the others' 0.256 (below), so the raw contrast of family a is
about -0.264 x 0.394 = -0.104 for "skewed" (outside a 0.10 bound, yet no family
bias) and -0.045 for "mild"; adjusted for each model's reference positive rate both
are 0. A planted family bias adds 0.15 to the judge's "yes" rate on family a's units.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agreement.audit import audit
from agreement.gate import evaluate, load_policy
from apps.cli import main

RATES = {"a": (0.55, 0.65, 0.75), "b": (0.10, 0.20, 0.30), "c": (0.15, 0.30, 0.45), "d": (0.05, 0.25, 0.50)}
JUDGES = {"skewed": (0.30, 0.02), "mild": (0.05, 0.12)}  # (false negative rate, false positive rate) vs the truth
ANNOTATOR_ERROR = 0.10
PLANTED = 0.15
BOUND = 0.10
POLICY = f"""[policy]
name = "family-only"
description = "the family criterion alone, as in data/policies/strict.toml"
level = 0.95
tie_policy = "exclude"
n_resamples = 200
seed = 20261129

[[criteria]]
type = "family_contrast"
positive = ["yes"]
max_abs_contrast = {BOUND}
alpha = 0.05
"""


def simulate(n: int, seed: int, *, planted: float = 0.0) -> pd.DataFrame:
    """One row per unit: unit, family, model, truth, three annotators' labels and both judges' labels."""
    rng = np.random.default_rng([n, seed, int(planted * 100)])
    models = [(f, f"{f}{i}", rate) for f, rates in RATES.items() for i, rate in enumerate(rates)]
    pick = rng.integers(0, len(models), n)
    family = np.array([m[0] for m in models])[pick]
    model = np.array([m[1] for m in models])[pick]
    rate = np.array([m[2] for m in models])[pick]
    truth = rng.random(n) < rate
    frame = {"unit": [f"u{i:06d}" for i in range(n)], "family": family, "backbone": model}
    for a in ("ann1", "ann2", "ann3"):
        frame[a] = np.where(truth ^ (rng.random(n) < ANNOTATOR_ERROR), "yes", "no")
    for judge, (fnr, fpr) in JUDGES.items():
        says = np.where(truth, rng.random(n) >= fnr, rng.random(n) < fpr)
        if planted:
            says = plant(says, family, rate, judge, planted, rng)
        frame[judge] = np.where(says, "yes", "no")
    return pd.DataFrame(frame)


def plant(says: np.ndarray, family: np.ndarray, rate: np.ndarray, judge: str, planted: float,
          rng: np.random.Generator) -> np.ndarray:
    """The judge's "yes" (boolean per unit) with a family bias of ``planted`` added on family a."""
    fnr, fpr = JUDGES[judge]
    # P(judge no) on a model of rate pi: pi FNR + (1 - pi)(1 - FPR); flipping "no" to "yes" with
    # probability planted / P(no) adds exactly `planted` to the judge's yes rate on family a.
    p_no = rate * fnr + (1 - rate) * (1 - fpr)
    return says | ((family == "a") & (rng.random(len(says)) < planted / p_no))


def audit_frame(sim: pd.DataFrame, judge: str) -> pd.DataFrame:
    majority = np.where((sim[["ann1", "ann2", "ann3"]] == "yes").sum(axis=1) >= 2, "yes", "no")
    return pd.DataFrame({"unit": sim["unit"], "cluster": sim["unit"], "model": sim["backbone"],
                         "family": sim["family"], "judge": sim[judge], "human": majority})


class Evidence:
    judge = "judge"
    level = 0.95

    def __init__(self, frame):
        self.frame = frame

    def family_audit(self, positive, *, reference):
        return audit(self.frame, positive=positive, n_resamples=100, level=self.level)


def criterion(tmp_path: Path, frame: pd.DataFrame, extra: str = ""):
    path = tmp_path / "policy.toml"
    path.write_text(POLICY + extra)
    # Only the family criterion: the fake evidence measures nothing else (the built-ins need a labels table).
    policy = load_policy(path)
    return evaluate(replace(policy, criteria=policy.criteria[:1]), Evidence(frame), fingerprints={},
                    simulated=False).results[0]


def expected_half_width(n: int) -> float:
    """Rough 95% half width of family a's adjusted contrast (hand formula, not the code under test): the
    per-unit variance of (judge - majority) is at most 0.25 here (P(they differ) <= 0.25), n / 12 units
    per model, so a model's bias has SD sqrt(0.25 * 12 / n); the contrast of 3 vs 9 models has SE
    SD sqrt(1/3 + 1/9); t(0.975, 9) = 2.262. Measured half widths (seeds 0-19): 0.134-0.148 at 300 units,
    0.081-0.089 at 1,000, 0.046-0.058 at 3,000, 0.023-0.028 at 10,000, 0.008-0.012 at 100,000; this gives
    0.151, 0.083, 0.048, 0.026, 0.008."""
    return 2.262 * math.sqrt(0.25 * 12 / n) * math.sqrt(1 / 3 + 1 / 9)


@pytest.mark.parametrize("n,replicates", [(300, 20), (1_000, 20), (3_000, 12), (10_000, 8), (100_000, 2)])
def test_no_family_bias_passes_and_planted_bias_fails_at_every_n(tmp_path, n, replicates):
    passes, covered, measured = 0, 0, 0
    for seed in range(replicates):
        sim = simulate(n, seed)
        for judge in JUDGES:
            result = criterion(tmp_path, audit_frame(sim, judge))
            a = result.details["contrasts"]["a"] if "contrasts" in result.details else None
            if result.passed:
                passes += 1
            else:  # a judge without family bias fails only for want of evidence, never for significance
                assert "significant" not in (result.reason or ""), result.reason
            if a is not None and a["ci_low"] is not None and math.isfinite(a["ci_low"]):
                measured += 1
                covered += a["ci_low"] <= 0.0 <= a["ci_high"]  # the adjusted contrast's truth is 0
        planted = simulate(n, seed, planted=PLANTED)
        for judge in JUDGES:
            result = criterion(tmp_path, audit_frame(planted, judge))
            assert not result.passed, (n, seed, judge, result)
            assert "a:" in result.reason
    runs = 2 * replicates
    if measured:  # the interval covers the true (zero) adjusted contrast at about its level
        assert covered / measured >= 0.95 - 2.6 * math.sqrt(0.05 * 0.95 / measured) - 1 / measured
    # Where the design can show equivalence (a third of the bound left on each side: the estimate would have
    # to stray 4 SEs), it does every time. Measured passes without family bias: 2 and 0 of 20 at 300 units
    # (the interval is wider than the bound), 6-7 of 20 at 1,000, 11-12 of 12 at 3,000, all from 10,000 on;
    # with the planted bias none at any n.
    if expected_half_width(n) < BOUND / 3:
        assert passes == runs, (n, passes, runs)


def test_the_raw_contrast_reads_positive_rate_as_family_bias(tmp_path):
    # At 100,000 units the skewed judge's raw contrast of family a is about -0.104 (module docstring):
    # outside the bound, although no family bias was planted; adjusted, it is about 0 and passes.
    frame = audit_frame(simulate(100_000, 0), "skewed")
    raw = criterion(tmp_path, frame, 'contrast = "raw"\n')
    adjusted = criterion(tmp_path, frame)
    a_raw, a_adj = raw.details["contrasts"]["a"], adjusted.details["contrasts"]["a"]
    assert a_raw["contrast"] == pytest.approx(-0.104, abs=0.015) and not raw.passed
    assert abs(a_adj["contrast"]) < 0.02 and adjusted.passed
    assert a_adj["raw"]["contrast"] == pytest.approx(a_raw["contrast"])  # both are reported
    # The old rule (any significant contrast fails) rejects the mild judge for a contrast far inside the bound.
    mild = audit_frame(simulate(100_000, 0), "mild")
    old = criterion(tmp_path, mild, 'contrast = "raw"\nfail_on_significant = true\n')
    assert not old.passed and "significant (fail_on_significant)" in old.reason
    assert abs(old.details["contrasts"]["a"]["contrast"]) < BOUND / 2


def write_table(sim: pd.DataFrame, path: Path) -> Path:
    sim.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_100000_units_through_accord_gate(tmp_path, capsys):
    """The issue's case through the CLI: import a 100,000-unit table, gate four judges on the family criterion:
    "skewed" and "mild" without family bias, and each again with the planted bias added ("<judge>_planted", the
    same judge's labels with `plant` applied: the same mechanism as simulate(..., planted=PLANTED)). One import
    and one gate of the four (each judge is gated on its own labels against the same reference) instead of one
    of each pair per case: the study's load and import are paid once."""
    n = 100_000
    sim = simulate(n, 7)
    rng = np.random.default_rng([n, 7, int(PLANTED * 100)])
    rate = sim["backbone"].map({f"{f}{i}": r for f, rates in RATES.items() for i, r in enumerate(rates)}).to_numpy()
    for judge in JUDGES:
        says = plant(sim[judge].to_numpy() == "yes", sim["family"].to_numpy(), rate, judge, PLANTED, rng)
        sim[f"{judge}_planted"] = np.where(says, "yes", "no")
    table = write_table(sim, tmp_path / "labels.csv")
    study = tmp_path / "study"
    judges = [*JUDGES, *(f"{judge}_planted" for judge in JUDGES)]
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "unit",
                 "--kind", "identify_trajectory", "--strata-columns", "family,backbone",
                 "--annotator-columns", "ann1,ann2,ann3", "--judge-columns", ",".join(judges), "--json"]) == 0
    capsys.readouterr()
    (tmp_path / "policy.toml").write_text(POLICY)
    start = time.perf_counter()
    code = main(["gate", str(study), "--policy", str(tmp_path / "policy.toml"), "--json"])
    seconds = time.perf_counter() - start
    verdict = json.loads(capsys.readouterr().out)
    criteria = {judge: body["criteria"][0] for judge, body in verdict["judges"].items()}
    assert set(criteria) == set(judges)
    # The planted judges: each is rejected for family a's contrast, so the study's gate exits 1.
    assert code == 1 and verdict["verdict"] == "REJECT"
    for judge in JUDGES:
        result = criteria[f"{judge}_planted"]
        assert verdict["judges"][f"{judge}_planted"]["verdict"] == "REJECT"
        assert not result["passed"] and "a:" in result["reason"] and "not inside the bound" in result["reason"]
    # Without family bias the family criterion passes (the verdict also needs the built-in baselines; printed below).
    unplanted = {judge: criteria[judge] for judge in JUDGES}
    assert all(result["passed"] for result in unplanted.values()), unplanted
    for result in unplanted.values():
        assert result["passed"] and result["details"]["contrast"] == "adjusted"
        assert max(abs(result["ci_low"]), abs(result["ci_high"])) < BOUND
    print(f"accord gate, 100,000 units, 4 judges, family criterion: {seconds:.1f} s, verdicts "
          + ", ".join(f"{judge} {verdict['judges'][judge]['verdict']}" for judge in judges))


def test_adjusted_contrast_matches_statsmodels_ols():
    # The adjusted contrast is the family coefficient of OLS bias ~ 1 + family + reference rate, its interval
    # the coefficient's t interval: statsmodels fits the same model independently.
    import statsmodels.api as sm

    from agreement.intervals import model_contrast

    rng = np.random.default_rng(11)
    bias = rng.normal(0, 0.03, 9)
    rate = rng.uniform(0.1, 0.7, 9)
    family = np.arange(9) < 3
    fit = sm.OLS(bias, sm.add_constant(np.column_stack([family.astype(float), rate]))).fit()
    ours = model_contrast(bias, family, 0.95, covariate=rate, covariate_name="rate")
    assert ours.statistic == pytest.approx(fit.params[1], abs=1e-12)
    assert (ours.ci_low, ours.ci_high) == pytest.approx(tuple(fit.conf_int(0.05)[1]), abs=1e-10)
    assert ours.p_value == pytest.approx(fit.pvalues[1], rel=1e-8) and ours.df == 6
    raw = model_contrast(bias, family, 0.95)  # without the covariate: the pooled two-sample t
    pooled = sm.OLS(bias, sm.add_constant(family.astype(float))).fit()
    assert (raw.ci_low, raw.ci_high) == pytest.approx(tuple(pooled.conf_int(0.05)[1]), abs=1e-10)
    assert raw.adjusted_for is None and ours.adjusted_for == "rate"
