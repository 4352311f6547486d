"""Which interval the gate trusts for each statistic, and from how many units.

The choices are measured, not assumed: tests/agreement/test_interval_coverage.py
simulates studies with turns clustered in trajectories at 30, 50, 100 and 300 units
and positive rates 0.1, 0.3 and 0.5, and records how often each candidate interval
covers the analytic truth (table in benchmarks/coverage.md). ``METHOD`` is, per
statistic, the candidate that covered 94-96% at the most sizes; ``MIN_UNITS`` the
smallest measured size from which it covered at least 94% at every positive rate.
Below that size the gate says the sample is too small instead of reading an
interval that is too narrow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agreement.quantiles import t_quantile

# Statistic -> interval method (see the module docstring for how each was chosen).
METHOD: dict[str, str] = {
    "percent_agreement": "percentile",
    "cohen_kappa": "percentile",
    "gwet_ac1": "percentile",
    "human_ceiling": "percentile",
    "family_contrast": "pooled_t",
}
# Statistic -> smallest number of units at which METHOD covered >= 94% at every measured positive rate.
MIN_UNITS: dict[str, int] = {
    "percent_agreement": 30,
    "cohen_kappa": 30,
    "gwet_ac1": 30,
    "human_ceiling": 30,
    "family_contrast": 30,
}
COVERAGE_TABLE = "benchmarks/coverage.md"


def method_for(statistic: str) -> str:
    """The interval method the gate (and ``accord validate``) uses for ``statistic``."""
    return METHOD.get(statistic, "percentile")


def too_small(statistic: str, n_units: int) -> str | None:
    """A reason when ``n_units`` is below the size at which the chosen interval was seen to cover, else None."""
    minimum = MIN_UNITS.get(statistic)
    if minimum is None or n_units >= minimum:
        return None
    return (f"{n_units} units is too small: the {method_for(statistic)} interval for {statistic} covered less than "
            f"94% below {minimum} units in the coverage study ({COVERAGE_TABLE}); needs >= {minimum} units")


def bootstrap_interval(statistic: float, draws: np.ndarray, jackknife: Any, level: float,
                       method: str) -> tuple[float, float]:
    """Percentile or BCa interval of any bootstrapped statistic (NaN draws are undefined resamples, dropped)."""
    from agreement.results import _bca

    draws = np.asarray(draws, dtype=float)
    draws = draws[~np.isnan(draws)]
    if not math.isfinite(statistic) or draws.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0
    if method == "percentile":
        low, high = np.quantile(draws, [tail, 1.0 - tail])
        return (float(low), float(high))
    if method == "bca":
        return _bca(statistic, draws, jackknife, tail)
    raise ValueError(f"method={method!r}: expected 'percentile' or 'bca'")


def pooled_t_contrast(values: np.ndarray, in_group: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """Difference of group means with a pooled-variance t interval: (difference, low, high, df).

    The values are per-model biases, so the interval counts models as the replicates
    (their spread holds both the between-model variation and each model's sampling
    error). It needs a variance estimate: at least 3 models with at least one on each
    side (df = models - 2 >= 1); otherwise the bounds are NaN.
    """
    values = np.asarray(values, dtype=float)
    mask = np.asarray(in_group, dtype=bool)
    k, m = int(mask.sum()), int(values.size)
    if k == 0 or k == m:
        return (math.nan, math.nan, math.nan, math.nan)
    inside, outside = values[mask], values[~mask]
    difference = float(inside.mean() - outside.mean())
    df = m - 2
    if df < 1:
        return (difference, math.nan, math.nan, math.nan)
    pooled = (((inside - inside.mean()) ** 2).sum() + ((outside - outside.mean()) ** 2).sum()) / df
    half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * math.sqrt(pooled * (1.0 / k + 1.0 / (m - k)))
    return (difference, difference - half, difference + half, float(df))
