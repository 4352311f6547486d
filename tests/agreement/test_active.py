"""Active choice of units (agreement.active): probabilities, unbiasedness, coverage."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.active import MIN_PROBABILITY, active_mean, cross_family_predictor, labelling_probabilities


def test_predictor_by_hand():
    # (agreeing + 1/2) / (voting + 1): 3 of 3 -> 3.5 / 4, 0 of 3 -> 0.5 / 4, 1 of 2 -> 1.5 / 3.
    assert cross_family_predictor(np.array([3, 0, 1]), np.array([3, 3, 2])).tolist() == pytest.approx(
        [0.875, 0.125, 0.5])
    with pytest.raises(ValueError, match="agreeing"):
        cross_family_predictor(np.array([4]), np.array([3]))


def test_probabilities_sum_to_the_budget_within_their_bounds_and_follow_uncertainty():
    f = np.array([0.5, 0.5, 0.9, 0.99, 0.999, 0.6, 0.7, 0.8])
    pi = labelling_probabilities(f, 4.0)
    assert pi.sum() == pytest.approx(4.0)
    assert pi.min() >= MIN_PROBABILITY - 1e-12 and pi.max() <= 1.0 + 1e-12
    # sqrt(f (1 - f)) is largest at 0.5 and falls towards 1: so do the probabilities.
    assert pi[0] == pi[1] >= pi[5] >= pi[6] >= pi[7] >= pi[2] >= pi[3] >= pi[4]
    # A budget of every unit labels every unit.
    assert labelling_probabilities(f, f.size).tolist() == pytest.approx([1.0] * f.size)
    with pytest.raises(ValueError, match="budget"):
        labelling_probabilities(f, 0.1)


def test_estimate_is_unbiased_and_its_interval_covers():
    """A population whose agreement the predictor tracks: over many Poisson draws the mean estimate equals the
    population mean (within Monte Carlo error) and the 95% interval covers it about 95% of the time."""
    rng = np.random.default_rng(4)
    n = 2000
    f = rng.beta(6, 2, size=n)
    y = (rng.random(n) < f).astype(float)
    truth = y.mean()
    pi = labelling_probabilities(f, 400)
    estimates, covered = [], 0
    for _ in range(800):
        est = active_mean(y, f, pi, rng.random(n) < pi)
        estimates.append(est.statistic)
        ci = est.confidence_interval()
        low, high = ci.low, ci.high
        covered += low <= truth <= high
    assert abs(np.mean(estimates) - truth) < 4 * np.std(estimates) / np.sqrt(800)
    assert 0.93 <= covered / 800 <= 0.97


def test_everything_labelled_gives_the_population_mean_exactly():
    rng = np.random.default_rng(2)
    f = rng.random(50)
    y = (rng.random(50) < 0.7).astype(float)
    est = active_mean(y, f, np.ones(50), np.ones(50, dtype=bool))
    assert est.statistic == pytest.approx(y.mean()) and est.standard_error == 0.0 and est.n == 50
