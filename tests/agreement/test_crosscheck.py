"""Random tables cross-checked against independent libraries.

statsmodels (Cohen's kappa with its ASE and null ASE, Fleiss' kappa, Randolph =
Brennan-Prediger), scikit-learn's cohen_kappa_score and the ``krippendorff``
package (all four levels, with missing ratings). Each library gets the data in its
own input format, built here from the raw matrix, not from our codes.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from agreement import RatingData, compute, krippendorff_alpha

SEEDS = range(12)


def random_matrix(seed: int, *, raters: int, missing: float = 0.0, low: int = 0) -> tuple[np.ndarray, int]:
    """Correlated ratings: each rater copies a latent category with probability 0.6."""
    rng = np.random.default_rng(seed)
    q = int(rng.integers(2, 6))
    n = int(rng.integers(15, 120))
    latent = rng.integers(0, q, n)
    ratings = np.where(rng.random((n, raters)) < 0.6, latent[:, None], rng.integers(0, q, (n, raters))) + low
    ratings = ratings.astype(float)
    ratings[rng.random((n, raters)) < missing] = np.nan
    return ratings, q


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("wt", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_statsmodels_and_sklearn(seed, wt):
    ratings, q = random_matrix(seed, raters=2)
    categories = list(range(q))
    data = RatingData.from_matrix(ratings, categories=categories)
    ours = compute(data, ["cohen_kappa"], weights=wt or "identity", n_resamples=0)["cohen_kappa"]
    table = np.zeros((q, q))
    np.add.at(table, (ratings[:, 0].astype(int), ratings[:, 1].astype(int)), 1)
    reference = cohens_kappa(table, wt=wt)
    assert ours.statistic == pytest.approx(reference.kappa, abs=1e-10)
    assert ours.se == pytest.approx(reference.std_kappa, abs=1e-10)
    assert ours.details["se0_null"] == pytest.approx(reference.std_kappa0, abs=1e-10)
    sk = cohen_kappa_score(ratings[:, 0].astype(int), ratings[:, 1].astype(int), labels=categories, weights=wt)
    assert ours.statistic == pytest.approx(sk, abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_and_randolph_match_statsmodels(seed):
    raters = 3 + seed % 5
    ratings, q = random_matrix(seed, raters=raters)
    data = RatingData.from_matrix(ratings, categories=list(range(q)))
    ours = compute(data, ["fleiss_kappa", "brennan_prediger"], n_resamples=0)
    counts, _ = aggregate_raters(ratings.astype(int), n_cat=q)
    assert ours["fleiss_kappa"].statistic == pytest.approx(sm_fleiss_kappa(counts, method="fleiss"), abs=1e-10)
    assert ours["brennan_prediger"].statistic == pytest.approx(sm_fleiss_kappa(counts, method="randolph"), abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_alpha_matches_the_krippendorff_package_with_missing_data(seed, level):
    raters = 2 + seed % 4
    ratings, q = random_matrix(seed, raters=raters, missing=0.3, low=1)
    domain = list(range(1, q + 1))
    data = RatingData.from_matrix(ratings, categories=domain)
    ours = krippendorff_alpha(data, level, n_resamples=0)
    reference = krippendorff.alpha(reliability_data=ratings.T, value_domain=domain, level_of_measurement=level)
    if np.isnan(reference):
        assert ours.undefined_reason is not None
    else:
        assert ours.statistic == pytest.approx(reference, abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_two_rater_coefficients_agree_with_their_multi_rater_forms(seed):
    """Scott's pi = Fleiss for 2 raters; Conger = Cohen for 2 raters without missing ratings."""
    ratings, q = random_matrix(seed, raters=2)
    data = RatingData.from_matrix(ratings, categories=list(range(q)))
    res = compute(data, ["scott_pi", "fleiss_kappa", "conger_kappa", "cohen_kappa"], n_resamples=0)
    assert res["scott_pi"].statistic == pytest.approx(res["fleiss_kappa"].statistic, abs=1e-12)
    assert res["conger_kappa"].statistic == pytest.approx(res["cohen_kappa"].statistic, abs=1e-12)
    # Scott's pi uses Gwet's 2-rater table variance (/n^2), Fleiss the multi-rater raw one (/n(n-1)).
    n = data.n_units
    assert res["scott_pi"].se == pytest.approx(res["fleiss_kappa"].se * np.sqrt((n - 1) / n), rel=1e-10)
