"""Properties every coefficient must have, on generated tables (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agreement import RatingData, compute, compute_pairs, prevalence_bias_indices

NOMINAL = ["percent_agreement", "fleiss_kappa", "gwet_ac1", "brennan_prediger", "conger_kappa", "krippendorff_alpha"]
CHANCE_CORRECTED = ["fleiss_kappa", "gwet_ac1", "brennan_prediger", "conger_kappa", "krippendorff_alpha"]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tables(draw, min_raters=2, max_raters=5, missing=True):
    q = draw(st.integers(2, 4))
    r = draw(st.integers(min_raters, max_raters))
    n = draw(st.integers(2, 25))
    cells = st.one_of(st.none(), st.integers(0, q - 1)) if missing else st.integers(0, q - 1)
    rows = draw(st.lists(st.lists(cells, min_size=r, max_size=r), min_size=n, max_size=n))
    return rows, q


def as_data(rows, q, **kwargs) -> RatingData:
    return RatingData.from_matrix(rows, categories=list(range(q)), **kwargs)


def same(a: float, b: float, tol: float = 1e-10) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def assert_same_results(left, right):
    for name in left:
        a, b = left[name], right[name]
        assert a.undefined_reason == b.undefined_reason, name
        assert same(a.statistic, b.statistic), (name, a.statistic, b.statistic)
        assert same(a.se, b.se), (name, a.se, b.se)


@SETTINGS
@given(tables(), st.randoms(use_true_random=False))
def test_invariant_to_rater_order(table, random):
    rows, q = table
    order = list(range(len(rows[0])))
    random.shuffle(order)
    shuffled = [[row[j] for j in order] for row in rows]
    assert_same_results(
        compute(as_data(rows, q), NOMINAL, n_resamples=0), compute(as_data(shuffled, q), NOMINAL, n_resamples=0)
    )


@SETTINGS
@given(tables(max_raters=2, min_raters=2))
def test_cohen_kappa_symmetric_in_its_two_raters(table):
    rows, q = table
    swapped = [[b, a] for a, b in rows]
    names = ["cohen_kappa", "scott_pi"]
    assert_same_results(compute(as_data(rows, q), names, n_resamples=0), compute(as_data(swapped, q), names, n_resamples=0))


@SETTINGS
@given(tables(), st.randoms(use_true_random=False))
def test_invariant_to_unit_order(table, random):
    rows, q = table
    shuffled = list(rows)
    random.shuffle(shuffled)
    assert_same_results(
        compute(as_data(rows, q), NOMINAL, n_resamples=0), compute(as_data(shuffled, q), NOMINAL, n_resamples=0)
    )


@SETTINGS
@given(tables(), st.permutations(["alpha", "beta", "gamma", "delta"]))
def test_invariant_to_label_renaming(table, names):
    rows, q = table
    renamed = [[None if x is None else names[x] for x in row] for row in rows]
    original = compute(as_data(rows, q), NOMINAL, n_resamples=0)
    relabelled = compute(RatingData.from_matrix(renamed, categories=names[:q]), NOMINAL, n_resamples=0)
    assert_same_results(original, relabelled)


@SETTINGS
@given(
    st.integers(2, 6),
    st.lists(st.integers(0, 3), min_size=2, max_size=30),
)
def test_perfect_agreement(raters, labels):
    rows = [[label] * raters for label in labels]
    data = as_data(rows, 4)
    results = compute(data, NOMINAL, n_resamples=0)
    assert results["percent_agreement"].statistic == 1.0
    assert results["brennan_prediger"].statistic == pytest.approx(1.0)
    for name in ["fleiss_kappa", "gwet_ac1", "conger_kappa", "krippendorff_alpha"]:
        result = results[name]
        if len(set(labels)) >= 2:
            assert result.statistic == pytest.approx(1.0, abs=1e-12), name
        elif name == "gwet_ac1":
            # AC1's pe = sum pi(1-pi)/(q-1) = 0 when one category: defined, equal to 1.
            assert result.statistic == pytest.approx(1.0)
        else:
            assert math.isnan(result.statistic) and result.undefined_reason, name
            ci = result.confidence_interval()
            assert (ci.low, ci.high) == (pytest.approx(math.nan, nan_ok=True),) * 2


@SETTINGS
@given(tables())
def test_bounds(table):
    rows, q = table
    results = compute(as_data(rows, q), NOMINAL + ["gwet_ac2"], weights="quadratic", n_resamples=0)
    pa = results["percent_agreement"]
    if pa.undefined_reason is None:
        assert 0.0 <= pa.statistic <= 1.0
    for name in CHANCE_CORRECTED + ["gwet_ac2"]:
        result = results[name]
        if result.undefined_reason is None:
            assert result.statistic <= 1.0 + 1e-12, name
            assert 0.0 <= result.pa <= 1.0 + 1e-12 and result.pe <= 1.0 + 1e-12
            high = result.confidence_interval().high
            assert high <= 1.0 or math.isnan(high)
        else:
            assert math.isnan(result.statistic)


@SETTINGS
@given(tables(min_raters=2, max_raters=2, missing=False))
def test_prevalence_bias_identity_for_two_by_two(table):
    """Byrt, Bishop & Carlin (1993): kappa = (PABAK - PI^2 + BI^2) / (1 - PI^2 + BI^2)."""
    rows, _ = table
    rows = [[x % 2, y % 2] for x, y in rows]
    result = compute(as_data(rows, 2), ["cohen_kappa"], n_resamples=0)["cohen_kappa"]
    pi, bi = result.prevalence_index, result.bias_index
    pabak = 2 * result.pa - 1
    denominator = 1 - pi**2 + bi**2
    assume(denominator > 1e-9)
    if result.undefined_reason is None:
        assert result.statistic == pytest.approx((pabak - pi**2 + bi**2) / denominator, abs=1e-10)
    assert result.details["pabak"] == pytest.approx(pabak)


@SETTINGS
@given(tables(min_raters=3, max_raters=4))
def test_pairs_on_shared_resamples_equal_each_pair_alone(table):
    rows, q = table
    data = as_data(rows, q)
    for names in (["percent_agreement", "cohen_kappa", "gwet_ac1"], ["gwet_ac1"]):
        pairs = compute_pairs(data, names, n_resamples=50)
        for (a, b), results in pairs.items():
            alone = compute(data.select_raters([a, b]), names, n_resamples=0)
            assert_same_results(results, alone)
            if q == 2:
                indices = prevalence_bias_indices(data, [a, b])
                for result in results.values():
                    assert same(result.prevalence_index, indices.prevalence_index)
                    assert same(result.bias_index, indices.bias_index)


@settings(max_examples=20, deadline=None)
@given(tables(), st.integers(0, 2**31))
def test_same_seed_gives_byte_identical_bootstrap(table, seed):
    rows, q = table
    clusters = [f"t{i // 3}" for i in range(len(rows))]
    first = compute(as_data(rows, q, clusters=clusters), NOMINAL, n_resamples=300, seed=seed)
    second = compute(as_data(rows, q, clusters=clusters), NOMINAL, n_resamples=300, seed=seed)
    for name in NOMINAL:
        assert first[name].bootstrap.tobytes() == second[name].bootstrap.tobytes()
        a, b = first[name].confidence_interval(method="percentile"), second[name].confidence_interval(method="percentile")
        assert np.array_equal((a.low, a.high), (b.low, b.high), equal_nan=True)


@SETTINGS
@given(tables(min_raters=2, max_raters=2))
def test_bias_index_keeps_rater_orientation_for_exchangeable_coefficients(table):
    """Units (yes, no) and (no, yes) share a count pattern; the bias index must still tell them apart."""
    rows, _ = table
    rows = [[None if x is None else x % 2 for x in row] for row in rows]
    data = as_data(rows, 2)
    indices = prevalence_bias_indices(data)
    for result in compute(data, ["percent_agreement", "gwet_ac1", "fleiss_kappa"], n_resamples=0).values():
        assert same(result.bias_index, indices.bias_index) and same(result.prevalence_index, indices.prevalence_index)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 11, 29, 99, 500, 999, 1000, 5000, 10**6, 2.5])
def test_t_and_normal_quantiles_match_scipy(df):
    """agreement.quantiles replaces scipy.special at CLI start-up; scipy.stats is the reference."""
    from scipy import stats

    from agreement.quantiles import normal_cdf, normal_quantile, t_quantile

    for p in (0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.025):
        assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-12)
        assert normal_quantile(p) == pytest.approx(stats.norm.ppf(p), rel=1e-12)
        assert normal_cdf(normal_quantile(p)) == pytest.approx(p, rel=1e-13)
