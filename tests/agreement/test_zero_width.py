"""Intervals that never collapse (issue #22): 0/n and n/n keep their width; the type-aggregated bootstrap
draws from the same law as resampling clusters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta

from agreement.estimate import cluster_ratio_estimate, cluster_totals, cluster_weights, proportion_estimate


@pytest.mark.parametrize("n", [20, 40, 100])
def test_zero_and_all_have_clopper_pearson_width(n):
    # Clopper-Pearson from scipy's beta quantiles: x = 0 -> [0, Beta(0.975; 1, n)], x = n -> [Beta(0.025; n, 1), 1].
    zero = proportion_estimate(0, n, n_resamples=500, seed=1, level=0.95, empty_reason="-")
    full = proportion_estimate(n, n, n_resamples=500, seed=1, level=0.95, empty_reason="-")
    assert zero.statistic == 0.0 and zero.ci_low == 0.0
    assert zero.ci_high == pytest.approx(beta.ppf(0.975, 1, n), rel=1e-12)
    assert full.ci_low == pytest.approx(beta.ppf(0.025, n, 1), rel=1e-12) and full.ci_high == 1.0
    assert "Clopper-Pearson" in zero.method
    if n == 40:  # the case: 0/40 was [0, 0]; the published CP upper bound is 0.0881
        assert zero.ci_high == pytest.approx(0.0881, abs=5e-5)


def test_clustered_zero_uses_the_effective_number_of_clusters():
    # 90 turns in 30 trajectories of 3, none positive: the clusters are the independent draws, so the
    # interval is Clopper-Pearson on 30 (Kish n_eff = (sum W_c)^2 / sum W_c^2 = 90^2 / (30 * 9) = 30).
    clusters = np.repeat(np.arange(30), 3)
    est = cluster_ratio_estimate(np.zeros(90), np.ones(90), clusters, n_resamples=200, seed=1, level=0.95,
                                 empty_reason="-")
    assert est.statistic == 0.0 and est.n == 90 and est.details["n_effective"] == pytest.approx(30.0)
    assert (est.ci_low, est.ci_high) == pytest.approx((0.0, beta.ppf(0.975, 1, 30)), rel=1e-12)
    # A rate that is not a share (a difference in [-1, 1]) is bootstrapped, not given a share's interval.
    signed = cluster_ratio_estimate(np.r_[np.zeros(89), -1.0], np.ones(90), clusters, n_resamples=200, seed=1,
                                    level=0.95, empty_reason="-", difference=True)
    assert signed.method == "cluster percentile bootstrap (clusters: 30)"


def test_type_aggregated_bootstrap_has_the_cluster_bootstrap_law():
    # 3,000 clusters of 1-3 items with 0/1 labels: few distinct (successes, size) rows, so cluster_totals
    # draws multinomially over them. Its replicates must match resampling clusters (cluster_weights):
    # same mean (the estimate) and the same SD to Monte Carlo error, and the analytic linearised SE
    # sqrt(sum (y_c - p m_c)^2) / sum m_c (with-replacement resampling of C clusters, no C/(C-1)).
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 4, 3000)
    successes = rng.binomial(sizes, 0.3)
    values = np.column_stack([successes, sizes]).astype(float)
    draws = 20_000

    def ratios(blocks):
        return np.concatenate([b[:, 0] / b[:, 1] for b in blocks])

    aggregated = ratios(cluster_totals(values, draws, np.random.default_rng(1)))
    direct = ratios(block @ values for block in cluster_weights(values.shape[0], draws, np.random.default_rng(2)))
    p = successes.sum() / sizes.sum()
    analytic = math.sqrt(((successes - p * sizes) ** 2).sum()) / sizes.sum()
    for replicates in (aggregated, direct):
        assert replicates.mean() == pytest.approx(p, abs=3 * analytic / math.sqrt(draws))
        assert replicates.std() == pytest.approx(analytic, rel=0.03)  # SD of an SD estimate ~ 1/sqrt(2 draws)


def test_identify_precision_recall_f1_at_0_and_1_keep_their_width():
    from agreement.scoring import identify_estimates

    # A judge that flags nothing: 10 conflict instances (tp 0, fn 10), 10 controls (tn 10). Recall 0/10:
    # Clopper-Pearson [0, 1 - 0.025^(1/10)] = [0, 0.30850]; precision 0/0 undefined; F1 = 0 = 2q/(1+q) at
    # q = tp / (tp + fp + fn) = 0/10, so its upper bound is 2(0.308497)/(1.308497) = 0.471529.
    none = identify_estimates(np.zeros(20), np.r_[np.ones(10), np.zeros(10)].astype(bool), n_resamples=500, seed=1,
                              level=0.95)
    assert none["recall"].statistic == 0.0
    assert (none["recall"].ci_low, none["recall"].ci_high) == pytest.approx((0.0, 0.308497), abs=1e-6)
    assert (none["f1"].ci_low, none["f1"].ci_high) == pytest.approx((0.0, 0.471529), abs=1e-6)
    assert not none["precision"].defined
    # A perfect judge on the same instances: precision 10/10, recall 10/10, F1 1: lower bounds 0.025^(1/10) = 0.69150,
    # F1's 2(0.69150)/(1.69150) = 0.81762.
    perfect = identify_estimates(np.r_[np.ones(10), np.zeros(10)], np.r_[np.ones(10), np.zeros(10)].astype(bool),
                                 n_resamples=500, seed=1, level=0.95)
    assert perfect["precision"].ci_low == pytest.approx(0.691503, abs=1e-6) and perfect["precision"].ci_high == 1.0
    assert perfect["f1"].ci_low == pytest.approx(0.817619, abs=1e-6) and perfect["f1"].ci_high == 1.0


def test_a_difference_that_is_zero_everywhere_keeps_its_width():
    # judge - human on 40 singleton units, all 0 (the judge agrees everywhere): no discordant unit, the
    # discordant share's Clopper-Pearson upper bound is 1 - 0.025^(1/40) = 0.088097, and |bias| <= it.
    est = cluster_ratio_estimate(np.zeros(40), np.ones(40), np.arange(40), n_resamples=200, seed=1, level=0.95,
                                 empty_reason="-", difference=True)
    assert est.statistic == 0.0
    assert (est.ci_low, est.ci_high) == pytest.approx((-0.088097, 0.088097), abs=1e-6)


def test_a_stratified_sample_is_resampled_within_its_strata():
    # Two strata of 50 singleton units: judge - human is +1 on every unit of stratum A and 0 on B. Resampled
    # within strata every replicate keeps 50 A units: the pooled difference is 0.5 in every resample (no
    # sampling variance: the strata's sizes are fixed by the design). Resampled ignoring the strata, the count
    # of A units is Binomial(100, 1/2): SD sqrt(0.25 / 100) = 0.05, a 95% interval of about +/- 0.098.
    values = np.r_[np.ones(50), np.zeros(50)]
    strata = np.r_[np.full(50, "A"), np.full(50, "B")]
    args = dict(n_resamples=2000, seed=3, level=0.95, empty_reason="-", difference=True)
    within = cluster_ratio_estimate(values, np.ones(100), np.arange(100), strata=strata, **args)
    ignored = cluster_ratio_estimate(values, np.ones(100), np.arange(100), **args)
    assert (within.ci_low, within.ci_high) == (0.5, 0.5) and "within 2 strata" in within.method
    assert within.details["n_strata"] == 2
    assert ignored.ci_high - ignored.ci_low == pytest.approx(2 * 0.098, abs=0.03)
    # A share's design effect is computed within strata too: the same 0/1 values as a share (50 of 100),
    # stratified: no within-stratum variance, so the effective size is capped at the 100 units (Wilson on 100).
    share = cluster_ratio_estimate(values, np.ones(100), np.arange(100), strata=strata, **{**args, "difference": False})
    assert share.details["n_effective"] == 100.0 and "within 2 strata" in share.method
    # Clusters that span strata cannot be resampled within them: the method says the strata were not used.
    spanning = cluster_ratio_estimate(values, np.ones(100), np.arange(100) % 10, strata=strata, **args)
    assert "strata not used: a cluster spans several strata" in spanning.method


def test_the_audit_resamples_a_stratified_sample_within_its_strata():
    from agreement.audit import audit
    from tests.agreement.test_audit import simulate

    frame = simulate(4)
    frame["stratum"] = np.where(frame["family"].isin(["a", "b"]), "s1", "s2")  # clusters (model-u//3) nest in them
    result = audit(frame, positive=["yes"], n_resamples=200)
    assert "within 2 strata" in result.pooled_difference.method
    assert result.pooled_difference.details["n_strata"] == 2
    assert all("clusters:" in m.judge_score.method for m in result.models)
