"""Which interval the gate trusts for each statistic, and from how many units.

The choices are measured, not assumed: tests/agreement/test_interval_coverage.py
simulates studies with turns clustered in trajectories at 30, 50, 100 and 300 units
and positive rates 0.1, 0.3 and 0.5, and records how often each candidate interval
covers the analytic truth, and how often its lower bound lies above the truth (the
gate's error when it reads a lower bound); the table is benchmarks/coverage.md.
``METHOD`` is, per statistic, the candidate that covered (94-96% within Monte Carlo
error, lower bound above the truth at most 5%) at every positive rate from the
smallest size on; ``MIN_UNITS`` is that size. Measured (1,000 studies per cell at 30
and 50 units, 3,000 at 100 and 300): at 30 and 50 units no candidate covers
(percentile intervals 84-93%, lower bounds above the truth 5-13% of the time),
so below ``MIN_UNITS`` the gate says the sample is too small instead of reading
an interval that is too narrow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agreement.quantiles import t_quantile

# Statistic -> interval method (see the module docstring for how each was chosen).
METHOD: dict[str, str] = {
    "percent_agreement": "t_boot",
    "cohen_kappa": "bca",
    "gwet_ac1": "t_boot",
    "human_ceiling": "t_boot",
    "family_contrast": "pooled_t",
}
# Statistic -> smallest measured number of units from which METHOD covered at every positive rate.
MIN_UNITS: dict[str, int] = {
    "percent_agreement": 100,
    "cohen_kappa": 100,
    "gwet_ac1": 100,
    "human_ceiling": 100,
    "family_contrast": 100,
}
METHOD_NAMES = {"t": "t interval on the analytic (linearised, clustered) SE", "percentile": "percentile bootstrap",
                "bca": "BCa bootstrap", "t_boot": "small-sample t on the bootstrap SE",
                "pooled_t": "pooled-variance t over models"}
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


def bootstrap_interval(statistic: float, draws: np.ndarray, jackknife: Any, level: float, method: str, *,
                       df: float = math.nan) -> tuple[float, float]:
    """Percentile, BCa or small-sample t interval of any bootstrapped statistic.

    NaN draws are undefined resamples, dropped. ``t_boot`` is est +/- t(df) x bootstrap
    SD x sqrt((df + 1) / df), df = resampled clusters (or units) - 1: the bootstrap
    variance divides by C where the unbiased one divides by C - 1.
    """
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
    if method == "t_boot":
        if not df >= 1 or draws.size < 2:
            return (math.nan, math.nan)
        half = t_quantile(1.0 - tail, df) * float(draws.std(ddof=1)) * math.sqrt((df + 1) / df)
        return (statistic - half, statistic + half)
    raise ValueError(f"method={method!r}: expected 'percentile', 'bca' or 't_boot'")


def agreement_interval(result: Any, level: float) -> tuple[tuple[float, float], str]:
    """An ``AgreementResult``'s interval by the method chosen for its coefficient, and the method's name.

    Without bootstrap resamples only the analytic t interval exists, whatever the choice.
    """
    method = method_for(result.coefficient) if result.bootstrap is not None else "t"
    if method in ("percentile", "bca", "t_boot"):
        bounds = bootstrap_interval(result.statistic, result.bootstrap, result.details.get("jackknife"), level,
                                    method, df=result.df)
    else:
        bounds = result.confidence_interval(level, method)
    return bounds, METHOD_NAMES.get(method, method)


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
