"""Intervals of bounded statistics stay in their range (issue #25: percent agreement printed [0.825, 1.003]).

Percent agreement is a share and chance-corrected agreement is at most 1, but the gate's t intervals
(``t_boot``, and the analytic ``t`` without resamples) were est +/- t x SE and left the range near
perfect agreement. They are now built on the logit scale of the range (``agreement.intervals.bounded_t``).
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from scipy import stats

from agreement import RatingData, compute
from agreement.intervals import RANGE, bootstrap_interval, bounded_t
from apps.cli import main
from tests.agreement.test_coverage import agreement_truth
from tests.agreement.test_interval_coverage import copy, latent, tolerance


def test_bounded_t_by_hand():
    # Percent agreement 0.9, SE 0.05, 39 df: logit 0.9 = ln 9 = 2.197225; delta-method SE on the logit
    # scale 0.05 / (0.9 x 0.1) = 0.555556; t(0.975, 39) = 2.022691; 2.197225 -/+ 1.123717 back through
    # 1 / (1 + e^-x): [0.745263, 0.965140] (the plain t interval would be [0.798865, 1.001135]).
    low, high = bounded_t(0.9, 0.05, 39, 0.95, (0.0, 1.0))
    assert (low, high) == pytest.approx((0.745263, 0.965140), abs=1e-6)
    # AC1 0.8 on [-1, 1] with SE 0.1: the logit scale of [-1, 1] is Fisher's z (2 atanh x), so the
    # interval is tanh(atanh 0.8 -/+ t x 0.1 / (1 - 0.8^2)), computed here by scipy and numpy.
    tq = stats.t.ppf(0.975, 39)
    expected = tuple(np.tanh(np.arctanh(0.8) + sign * tq * 0.1 / (1 - 0.64)) for sign in (-1, 1))
    assert bounded_t(0.8, 0.1, 39, 0.95, (-1.0, 1.0)) == pytest.approx(expected, abs=1e-12)
    # At the edge the logit scale has no SE: Clopper-Pearson on the 40 clusters, 1 - 0.025^(1/40) = 0.088097
    # below 1, mapped to the range; never the zero-width [1, 1].
    assert bounded_t(1.0, 0.0, 39, 0.95, (0.0, 1.0)) == pytest.approx((1 - 0.088097, 1.0), abs=1e-6)
    assert bounded_t(1.0, 0.0, 39, 0.95, (-1.0, 1.0)) == pytest.approx((1 - 2 * 0.088097, 1.0), abs=1e-6)


def _near_perfect_csv(path) -> None:
    """150 units in 50 trajectories; two annotators and a judge agree except on three units."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["unit", "rater", "label", "trajectory"])
        for i in range(150):
            truth = "yes" if i % 3 == 0 else "no"
            for rater in ("ann_1", "ann_2", "judge"):
                flipped = (rater == "judge" and i in (7, 100)) or (rater == "ann_2" and i == 55)
                writer.writerow([f"u{i:03d}", rater, "yes" if flipped else truth, f"t{i // 3:02d}"])


def _intervals(node):
    if isinstance(node, dict):
        if "ci_method" in node and "coefficient" in node:
            yield node
        for value in node.values():
            yield from _intervals(value)
    elif isinstance(node, list):
        for value in node:
            yield from _intervals(value)


def test_accord_agree_keeps_every_interval_in_its_range(tmp_path, capsys):
    source = tmp_path / "near.csv"
    _near_perfect_csv(source)
    assert main(["agree", str(source), "--judge", "judge", "--cluster", "trajectory", "--bootstrap", "1000",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    shown = list(_intervals(report))
    assert {r["coefficient"] for r in shown} >= {"percent_agreement", "gwet_ac1", "cohen_kappa"}
    for result in shown:
        low, high = RANGE.get(result["coefficient"], (-math.inf, 1.0))
        assert low <= result["ci_low"] <= result["statistic"] <= result["ci_high"] <= high, result
        if " t " in f" {result['ci_method']}" or result["ci_method"].startswith("small-sample t"):
            assert "logit scale" in result["ci_method"], result["ci_method"]
    # The same data through the plain small-sample t (what was shown before) leaves [0, 1].
    rows = list(csv.DictReader(source.open()))
    units = sorted({r["unit"] for r in rows})
    label = {(r["unit"], r["rater"]): int(r["label"] == "yes") for r in rows}
    data = RatingData.from_matrix(np.array([[label[u, "ann_1"], label[u, "ann_2"]] for u in units]),
                                  categories=(0, 1), clusters=np.repeat(np.arange(50), 3))
    pa = compute(data, ["percent_agreement"], n_resamples=1000, seed=0, cluster=True)["percent_agreement"]
    assert bootstrap_interval(pa.statistic, pa.bootstrap, None, 0.95, "t_boot", df=pa.df)[1] > 1.0


def test_logit_scale_covers_near_perfect_agreement_where_the_plain_t_did_not():
    # Judge 99% and reference 98% accurate: agreement 0.97 (analytic). 300 simulated studies of 100 turns in
    # trajectories (tests/agreement/test_interval_coverage.py's design). Measured with 1,000 studies per cell
    # at positive rates 0.1 / 0.3 / 0.5: the plain t covered 0.87-0.93 with its lower bound above the truth
    # 7-13% of the time (the gate's error; nominal 2.5%) and left the range in about 70% of studies; the
    # logit-scale interval covered 0.96-0.975, lower bound above the truth 0%.
    n, rate, studies, judge_acc, reference_acc = 100, 0.3, 300, 0.99, 0.98
    truth = agreement_truth(judge_acc, reference_acc, rate)
    tally = {key: np.zeros(3) for key in ("plain", "logit")}
    for seed in range(studies):
        rng = np.random.default_rng([n, 30, seed, 9])
        y, clusters = latent(n, rate, rng)
        data = RatingData.from_matrix(np.column_stack([copy(y, judge_acc, rng), copy(y, reference_acc, rng)]),
                                      categories=(0, 1), clusters=clusters)
        result = compute(data, ["percent_agreement"], n_resamples=300, seed=seed, cluster=True)["percent_agreement"]
        for key, bounds in (("plain", None), ("logit", RANGE["percent_agreement"])):
            low, high = bootstrap_interval(result.statistic, result.bootstrap, None, 0.95, "t_boot",
                                           df=clusters.max(), bounds=bounds)
            tally[key] += (low <= truth["percent_agreement"] <= high, low > truth["percent_agreement"], high > 1)
    coverage, low_miss, outside = tally["logit"] / studies
    assert coverage >= 0.94 - tolerance(studies) and low_miss <= 0.05 and outside == 0.0
    assert tally["plain"][1] / studies > 0.05 and tally["plain"][2] / studies > 0.3


def test_the_planner_simulates_the_gates_bounded_lower_bound():
    """agreement.plan's lower bound of an agreement floor is bounded_t's, inside the range and at its top."""
    from agreement.plan import _Scale
    from agreement.quantiles import t_quantile

    scale = object.__new__(_Scale)  # at the simulated size: no carrying to a larger n
    object.__setattr__(scale, "n", 100)
    object.__setattr__(scale, "simulated", 100)
    values, ses = np.array([[0.9, 0.97, 1.0]]), np.array([[0.05, 0.02, 0.0]])
    tq = np.full((1, 3), t_quantile(0.975, 39))
    low = scale.lower_bound(values, ses, tq, np.array([0.9]), bounds=(-1.0, 1.0),
                            at_edge=np.full((1, 3), 0.025 ** (1 / 40)))
    expected = [bounded_t(v, s, 39, 0.95, (-1.0, 1.0))[0] for v, s in zip(values[0], ses[0], strict=True)]
    assert low[0] == pytest.approx(expected, abs=1e-12)
