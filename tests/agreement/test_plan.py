"""The planner: published kappa sample sizes, the OC curve at the floor, and brute-force runs of the real gate."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from agreement.gate import evaluate, load_policy
from agreement.plan import (
    SIMULATED_UNITS,
    Design,
    Simulator,
    judge_accuracy_for,
    operating_point,
    plan,
    planned_criteria,
    true_agreement,
)
from agreement.validation import GateEvidence
from apps.cli import main
from samples.errors import InputError
from tests.agreement.test_coverage import agreement_truth


def write_policy(tmp_path: Path, *criteria: str, level: float = 0.95, resamples: int = 1000) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(f'[policy]\nname = "plan-test"\ndescription = "x"\nlevel = {level}\ntie_policy = "exclude"\n'
                    f'n_resamples = {resamples}\nseed = 20261129\n'
                    + "".join(f"\n[[criteria]]\n{c}\n" for c in criteria))
    return path


def floor(coefficient: str, value: float) -> str:
    return f'type = "agreement_floor"\ncoefficient = "{coefficient}"\nreference = "human_majority"\n' \
           f'min_lower_bound = {value}'


def cantor_n(rate1: float, rate2: float, k1: float, k0: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Cantor (1996) one-sided sample size, transcribed from R irr 0.84.1 ``N.cohen.kappa``."""
    pie = rate1 * rate2 + (1 - rate1) * (1 - rate2)

    def q(kappa: float) -> float:
        pi0 = kappa * (1 - pie) + pie
        pi22 = (pi0 - rate1 + 1 - rate2) / 2
        pi11 = pi0 - pi22
        pi12, pi21 = rate1 - pi11, rate2 - pi11
        return (1 - pie) ** -4 * (pi11 * (1 - pie - (rate2 + rate1) * (1 - pi0)) ** 2
                                  + pi22 * (1 - pie - (2 - rate2 - rate1) * (1 - pi0)) ** 2
                                  + (1 - pi0) ** 2 * (pi12 * (rate2 + 1 - rate1) ** 2 + pi21 * (1 - rate2 + rate1) ** 2)
                                  - (pi0 * pie - 2 * pie + pi0) ** 2)

    z = NormalDist().inv_cdf
    return math.ceil(((z(1 - alpha) * math.sqrt(q(k0)) + z(power) * math.sqrt(q(k1))) / (k1 - k0)) ** 2)


def test_kappa_sample_size_against_cantor_1996(tmp_path):
    # R irr's documented example: N.cohen.kappa(0.5, 0.5, 0.7, 0.85) prints 96 (Cantor 1996, Psychological
    # Methods 1, 150-153; irr 0.84.1 manual). It evaluates the null variance at k0 = 0.85: the n to show
    # kappa < 0.85 when it is 0.7. The gate's question is the other side: show kappa > 0.7 when it is 0.85,
    # whose Cantor n (null variance at 0.7) is 117. The gate's lower bound is a Wald bound (variance at the
    # estimate), whose n with the variance at the alternative 0.85 on both terms is 76; a bound read at the
    # estimate sits between the two, so the planner's n must fall in [76, 117] (10% Monte Carlo slack).
    assert cantor_n(0.5, 0.5, 0.7, 0.85) == 96  # the published number: the transcription is right
    assert cantor_n(0.5, 0.5, 0.85, 0.7) == 117
    pol = load_policy(write_policy(tmp_path, floor("cohen_kappa", 0.7), level=0.90))  # one-sided alpha 0.05
    # One annotator who is always right (raw agreement 1): the majority is the truth, so the judge's kappa
    # vs it is the two-rater kappa of the example; both raters' positive rate is 0.5 at prevalence 0.5.
    design = Design(positive_rate=0.5, judge_agreement=0.85, human_agreement=1.0, annotators=1,
                    turns_per_trajectory=1, icc=0.0, coefficient="cohen_kappa")
    needed = plan(pol, design, power=0.8, studies=2000).units_needed["policy"]
    assert 76 * 0.9 <= needed <= 117 * 1.1, needed


def test_truth_matches_the_coverage_study_truth():
    # Two independent derivations of the same latent-class agreement (tests/agreement/test_coverage.py).
    for name in ("percent_agreement", "cohen_kappa", "gwet_ac1"):
        assert float(true_agreement(name, 0.85, 0.8, 0.4)) == pytest.approx(agreement_truth(0.85, 0.8, 0.4)[name])


@pytest.mark.parametrize("rate,annotators,turns", [(0.1, 3, 3.0), (0.3, 2, 1.0), (0.5, 5, 4.0)])
def test_a_judge_at_the_floor_is_accepted_at_most_5_percent(tmp_path, rate, annotators, turns):
    pol = load_policy(write_policy(tmp_path, floor("gwet_ac1", 0.6)))
    design = Design(positive_rate=rate, judge_agreement=0.6, human_agreement=0.9, annotators=annotators,
                    turns_per_trajectory=turns, coefficient="gwet_ac1")
    simulator = Simulator(design, planned_criteria(pol), level=0.95, studies=2000)
    at_floor = judge_accuracy_for(design, 0.6)
    for n in (100, 150, 300):  # below 100 units the gate (and the planner) say "too small"
        accept = simulator.pass_rates(n, np.array([at_floor]))["policy"][0]
        assert accept <= 0.05, (n, accept)
    # ... and the floor does pass a clearly better judge with enough units.
    better = judge_accuracy_for(design, 0.85)
    rates = simulator.pass_rates(300, np.array([better]))
    assert rates[planned_criteria(pol)[0].name][0] >= 0.8
    # The whole policy carries the built-in baselines: at 10% positives always answering "no" has AC1
    # (0.9 - 0.095) / (1 - 0.095) = 0.89 against a reference with 10% positives (p_o = 0.9, pi = 0.05,
    # p_e = 2 * 0.05 * 0.95), above the judge's 0.85, so no policy can accept that judge there.
    if rate == 0.1:
        assert rates["policy"][0] <= 0.05
    else:
        assert rates["policy"][0] >= 0.8


def gate_table(judge: np.ndarray, humans: np.ndarray, clusters: np.ndarray) -> pd.DataFrame:
    """A labels table (agreement.study_io.labels_table's columns) for one judge and the annotators: the judge's
    rows, then each annotator's, every row with its unit's fields. Built in one DataFrame (a concat and a merge
    per simulated study cost more than the gate's own table work)."""
    n, raters = judge.size, 1 + len(humans)
    return pd.DataFrame({
        "unit": [f"u{i}" for i in range(n)] * raters,
        "rater": np.repeat(["judge@sim", *(f"ann{i}" for i in range(len(humans)))], n).astype(object),
        "label": np.where(np.concatenate([judge, *humans]), "yes", "no"),
        "source": np.repeat(["judge", *["human"] * len(humans)], n).astype(object),
        "backend": np.repeat(["judge", *["app"] * len(humans)], n).astype(object),
        "cluster": [f"t{c}" for c in clusters] * raters, "kind": "identify_trajectory", "inclusion_prob": 1.0,
        "stratum": "all", "agent": "a", "backbone": "b", "family": "f", "dataset": "d", "setting": "s",
        "split": "conflict", "unscored_reason": None, "weight": 1.0})


@pytest.mark.slow
def test_planner_against_brute_force_runs_of_the_gate(tmp_path):
    # The real gate (GateEvidence: engine, cluster percentile bootstrap, the paired ceiling bootstrap) on
    # studies drawn from the planner's own model; its acceptance rate must match the planner's within
    # three combined Monte Carlo standard errors.
    pol = load_policy(write_policy(
        tmp_path, floor("gwet_ac1", 0.6),
        'type = "human_ceiling"\ncoefficient = "percent_agreement"\nmargin = 0.1', resamples=1000))
    design = Design(positive_rate=0.3, judge_agreement=0.75, human_agreement=0.85, annotators=3,
                    turns_per_trajectory=3, coefficient="gwet_ac1")
    simulator = Simulator(design, planned_criteria(pol), level=0.95, studies=2000)
    accuracy = judge_accuracy_for(design, 0.75)
    n, studies = 80, 200
    predicted = simulator.pass_rates(n, np.array([accuracy]))
    rng = np.random.default_rng(5)
    accepted = dict.fromkeys(predicted, 0)
    one = Simulator(design, planned_criteria(pol), level=0.95, studies=1)
    for _ in range(studies):
        cluster, latent, humans, u = one._studies(n, rng)
        judge = np.where(u < accuracy, latent, ~latent)[0]
        table = gate_table(judge, humans[:, 0, :], cluster[0])
        s = pol.settings
        evidence = GateEvidence(table, judge="judge@sim", tie_policy=s["tie_policy"], level=s["level"],
                                n_resamples=s["n_resamples"], seed=int(rng.integers(1 << 31)))
        verdict = evaluate(pol, evidence, fingerprints={}, simulated=True)
        for result in verdict.results:
            if result.name in accepted:  # the built-in criteria are not planned
                accepted[result.name] += result.passed
        accepted["policy"] += verdict.accepted
    for name, rate in predicted.items():
        p = float(rate[0])
        brute = accepted[name] / studies
        se = math.sqrt(max(p * (1 - p), 0.01) * (1 / studies + 1 / 2000))
        assert abs(brute - p) <= 3 * se, (name, brute, p)


def test_cli_plan_json_table_and_plot(tmp_path, repo, capsys):
    png = tmp_path / "oc.png"
    args = ["plan", "--policy", str(repo / "data" / "policies" / "strict.toml"), "--positive-rate", "0.3",
            "--judge-agreement", "0.85", "--human-agreement", "0.85", "--annotators", "3",
            "--turns-per-trajectory", "3", "--studies", "200"]
    assert main([*args, "--json", "--plot", str(png)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    names = set(body["units_needed"])
    assert "policy" in names and "gwet_ac1 vs human majority, lower bound" in names
    # The built-ins every policy carries are planned (their units are part of the policy's answer).
    assert {"beats constant answers (gwet_ac1, cohen_kappa, percent_agreement)",
            "tracks the input (cohen_kappa vs human majority > 0.0)"} <= names
    assert set(body["not_planned"]) == {"alternative annotator test", "family contrast", "units per stratum"}
    curve = body["oc_curve"]["p_accept"]["policy"]
    assert len(curve) == len(body["oc_curve"]["true_agreement"]) and curve[0] <= 0.05
    assert main(args) == 0
    assert "OC curve at" in capsys.readouterr().out
    assert main([*args[:-2], "--studies", "5"]) == 2
    assert main([*args[:3], "--positive-rate", "1.5", *args[5:]]) == 2
    assert "positive_rate=1.5" in capsys.readouterr().err


def test_design_validation_names_the_parameter():
    with pytest.raises(InputError, match="human_agreement=0.4"):
        Design(positive_rate=0.3, judge_agreement=0.8, human_agreement=0.4, annotators=3, turns_per_trajectory=1)
    design = Design(positive_rate=0.3, judge_agreement=0.8, human_agreement=0.7, annotators=1, turns_per_trajectory=1)
    with pytest.raises(InputError, match="even a perfect judge"):
        judge_accuracy_for(design, 0.99)


@pytest.mark.slow
def test_the_real_gate_accepts_a_judge_at_the_floor_at_most_5_percent(tmp_path):
    # Brute force: 300 studies of 100 units (3 annotators, 3 turns per trajectory, positive rate 0.3)
    # whose judge's true AC1 vs the majority is exactly the floor 0.6, each run through the real gate.
    # The lower bound overshoots the truth 4.3-4.7% of the time at 100 units (benchmarks/coverage.md);
    # allow two Monte Carlo SEs of 300 studies around 5%.
    pol = load_policy(write_policy(tmp_path, floor("gwet_ac1", 0.6), resamples=1000))
    design = Design(positive_rate=0.3, judge_agreement=0.6, human_agreement=0.9, annotators=3,
                    turns_per_trajectory=3, coefficient="gwet_ac1")
    accuracy = judge_accuracy_for(design, 0.6)
    one = Simulator(design, planned_criteria(pol), level=0.95, studies=1)
    rng = np.random.default_rng(11)
    studies, accepted = 300, 0
    for _ in range(studies):
        cluster, latent, humans, u = one._studies(100, rng)
        table = gate_table(np.where(u < accuracy, latent, ~latent)[0], humans[:, 0, :], cluster[0])
        evidence = GateEvidence(table, judge="judge@sim", tie_policy="exclude", level=0.95, n_resamples=1000,
                                seed=int(rng.integers(1 << 31)))
        accepted += evaluate(pol, evidence, fingerprints={}, simulated=True).accepted
    assert accepted / studies <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / studies), accepted  # measured: 11 of 300


def test_large_studies_carried_by_the_sqrt_n_law_match_their_full_simulation(tmp_path):
    # Above SIMULATED_UNITS the planner carries 2,000-unit studies to n units (deviation from the truth and
    # SE shrink as 1/sqrt(n)). The reference is the full simulation at n itself (simulated_units=n), on
    # independent draws: each criterion's P(pass) must agree within three combined binomial standard
    # errors (floor 0.01) at true agreements spanning the AC1 floor's transition at 6,000 units.
    pol = load_policy(write_policy(
        tmp_path, floor("gwet_ac1", 0.6), floor("cohen_kappa", 0.4),
        'type = "human_ceiling"\ncoefficient = "percent_agreement"\nmargin = 0.15'))
    design = Design(positive_rate=0.3, judge_agreement=0.65, human_agreement=0.85, annotators=3,
                    turns_per_trajectory=3, coefficient="gwet_ac1")
    n, studies = 6000, 400
    assert SIMULATED_UNITS < n
    accuracies = np.array([judge_accuracy_for(design, x) for x in (0.59, 0.605, 0.615, 0.625, 0.64)])
    carried = Simulator(design, planned_criteria(pol), level=0.95, studies=studies).pass_rates(n, accuracies)
    full = Simulator(design, planned_criteria(pol), level=0.95, studies=studies,
                     simulated_units=n).pass_rates(n, accuracies)
    assert set(carried) == set(full)
    policy = full["policy"]
    assert policy[0] < 0.2 and policy[-1] > 0.8 and np.any((policy > 0.2) & (policy < 0.8))  # spans the transition
    for name in full:
        p = (carried[name] + full[name]) / 2
        se = np.sqrt(np.maximum(p * (1 - p), 0.01) * 2 / studies)
        assert np.all(np.abs(carried[name] - full[name]) <= 3 * se), (name, carried[name], full[name])


def test_the_operating_point_of_a_large_study_is_cheap_and_monotone(tmp_path):
    # 100,000 units: the curve comes from 2,000-unit studies; P(ACCEPT) rises with the true agreement from 0
    # (0.2 below the floor) to 1 at the perfect judge, and the study's estimate well above the floor reads 1.
    pol = load_policy(write_policy(tmp_path, floor("gwet_ac1", 0.6)))
    point = operating_point(pol, units=100_000, annotators=3, positive_rate=0.3, human_agreement=0.9,
                            turns_per_trajectory=3, observed=0.8, coefficient="gwet_ac1", studies=100)
    curve = np.array(point["p_accept"])
    assert curve[0] == 0 and curve[-1] == 1 and np.all(np.diff(curve) >= 0)
    assert point["p_accept_at_estimate"] == 1
