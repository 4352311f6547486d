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
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement.quantiles import normal_cdf, normal_quantile, t_quantile
from samples import ConfidenceInterval, held_interval

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
# Coefficient -> its natural range (a share; chance-corrected agreement is at most 1 and, for these, at
# least -1). A t interval (``t_boot``, or the analytic ``t`` without resamples) of one of these is built on
# the logit scale of its range (``bounded_t``), so no view shows an interval such as [0.825, 1.003].
RANGE: dict[str, tuple[float, float]] = {
    "percent_agreement": (0.0, 1.0),
    **dict.fromkeys(("gwet_ac1", "gwet_ac2", "cohen_kappa", "fleiss_kappa", "scott_pi", "brennan_prediger",
                     "conger_kappa", "light_kappa"), (-1.0, 1.0)),
}
METHOD_NAMES = {"t": "t interval on the analytic (linearised, clustered) SE",
                "normal": "normal interval on the analytic (linearised, clustered) SE", "percentile": "percentile bootstrap",
                "bca": "BCa bootstrap", "t_boot": "small-sample t on the bootstrap SE",
                "pooled_t": "pooled-variance t over models"}
COVERAGE_TABLE = "benchmarks/coverage.md"


def method_for(statistic: str) -> str:
    """The interval method the gate (and ``accord validate``) uses for ``statistic``."""
    return METHOD.get(statistic, "percentile")


def too_small(statistic: str, n_units: int, *, called: str | None = None) -> str | None:
    """A reason when ``n_units`` is below the size at which the chosen interval was seen to cover, else None.

    ``called``: what the message calls the estimate when it borrows another statistic's coverage result
    (a baseline difference is sized as the human ceiling, the same kind of paired difference)."""
    minimum = MIN_UNITS.get(statistic)
    if minimum is None or n_units >= minimum:
        return None
    name = called or statistic
    return (f"{n_units} units is too small: the {method_for(statistic)} interval for {name} covered less than "
            f"94% below {minimum} units in the coverage study ({COVERAGE_TABLE}); needs >= {minimum} units")


def bootstrap_interval(statistic: float, draws: np.ndarray, jackknife: Any, level: float, method: str, *,
                       df: float = math.nan, bounds: tuple[float, float] | None = None) -> tuple[float, float]:
    """Percentile, BCa or small-sample t interval of any bootstrapped statistic.

    NaN draws are undefined resamples, dropped. ``t_boot`` is est +/- t(df) x bootstrap
    SD x sqrt((df + 1) / df), df = resampled clusters (or units) - 1: the bootstrap
    variance divides by C where the unbiased one divides by C - 1. With ``bounds`` (the
    statistic's natural range, ``RANGE``) it is that t interval on the logit scale of the
    range (``bounded_t``). Percentile and BCa bounds are resampled values, inside the range already.
    """
    draws = np.asarray(draws, dtype=float)
    draws = draws[~np.isnan(draws)]
    if not math.isfinite(statistic) or draws.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0
    if method == "percentile":
        low, high = np.quantile(draws, [tail, 1.0 - tail])
        return (float(low), float(high))
    if method == "bca":
        return bca_bounds(statistic, draws, jackknife, tail)
    if method == "t_boot":
        if not df >= 1 or draws.size < 2:
            return (math.nan, math.nan)
        se = float(draws.std(ddof=1)) * math.sqrt((df + 1) / df)
        if bounds is not None:
            return bounded_t(statistic, se, df, level, bounds)
        half = t_quantile(1.0 - tail, df) * se
        return (statistic - half, statistic + half)
    raise ValueError(f"method={method!r}: expected 'percentile', 'bca' or 't_boot'")


def bca_bounds(estimate: float, draws: np.ndarray, jackknife: Any, tail: float) -> tuple[float, float]:
    """BCa bounds (Efron 1987) from the defined draws and the jackknife (values, counts) of the resampled units."""
    if jackknife is None:
        return (math.nan, math.nan)
    values, counts = jackknife
    keep = ~np.isnan(values)
    values, counts = values[keep], counts[keep]
    below = (np.count_nonzero(draws < estimate) + 0.5 * np.count_nonzero(draws == estimate)) / draws.size
    if not 0.0 < below < 1.0 or counts.sum() == 0:
        return (math.nan, math.nan)
    z0 = normal_quantile(below)
    centre = np.sum(counts * values) / counts.sum()
    diff = centre - values
    denominator = np.sum(counts * diff**2) ** 1.5
    acceleration = float(np.sum(counts * diff**3) / (6.0 * denominator)) if denominator > 0 else 0.0
    adjusted = [
        normal_cdf(z0 + (z0 + z) / (1.0 - acceleration * (z0 + z)))
        for z in (normal_quantile(tail), normal_quantile(1.0 - tail))
    ]
    low, high = np.quantile(draws, adjusted)
    return (float(low), float(high))


def bounded_t(statistic: float, se: float, df: float, level: float, bounds: tuple[float, float]
              ) -> tuple[float, float]:
    """t interval of a statistic confined to ``bounds`` = (a, b), built on the logit scale of that range.

    g(x) = log((x - a) / (b - x)) with the delta-method SE se x (b - a) / ((x - a)(b - x)), back-transformed:
    the interval stays inside (a, b) and is nearly the plain t interval away from the edges (the logit
    interval survey software uses for proportions; for (-1, 1) it is Fisher's z, 2 atanh x). At an edge
    the logit scale has no SE, so the interval is Clopper-Pearson on df + 1 independent draws (clusters)
    mapped onto the range: it keeps a width instead of claiming certainty.
    """
    from agreement.estimate import zero_one_interval

    a, b = bounds
    share = (statistic - a) / (b - a)
    if share <= 0.0 or share >= 1.0:
        low, high = zero_one_interval(min(max(share, 0.0), 1.0), df + 1, level)
        return (a + (b - a) * low, a + (b - a) * high)
    centre = math.log(share / (1.0 - share))
    half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * se / ((b - a) * share * (1.0 - share))
    return (a + (b - a) / (1.0 + math.exp(-(centre - half))), a + (b - a) / (1.0 + math.exp(-(centre + half))))


@dataclass(frozen=True, kw_only=True)
class ModelContrast:
    """A family contrast over models (models are the replicates) with its t interval and two-sided p."""

    statistic: float
    ci_low: float
    ci_high: float
    df: float
    p_value: float
    level: float
    adjusted_for: str | None = None
    """The covariate the contrast is conditioned on (None: the raw difference of family means)."""
    undefined_reason: str | None = None

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The t interval over models it was computed with (it keeps bounds, not the models' values)."""
        name = (f"ANCOVA t over models, adjusted for each {self.adjusted_for} (df = models - 3)"
                if self.adjusted_for else "pooled-variance t over models (df = models - 2)")
        held = ConfidenceInterval(low=self.ci_low, high=self.ci_high, level=self.level, method=name)
        return held_interval(held, level, method, what="the model contrast")

    def to_dict(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {"contrast": clean(self.statistic), "ci_low": clean(self.ci_low), "ci_high": clean(self.ci_high),
                "df": clean(self.df), "p_value": clean(self.p_value), "adjusted_for": self.adjusted_for,
                "undefined_reason": self.undefined_reason}


def model_contrast(values: np.ndarray, in_group: np.ndarray, level: float, *,
                   covariate: np.ndarray | None = None, covariate_name: str = "covariate") -> ModelContrast:
    """The group coefficient of OLS ``values ~ 1 + in_group (+ covariate)`` with its t interval.

    The values are per-model biases, so the interval counts models as the replicates
    (their spread holds both the between-model variation and each model's sampling
    error). Without a covariate the coefficient is the difference of group means and
    the interval the pooled-variance two-sample t (df = models - 2). With one
    (ANCOVA, df = models - 3) it is that difference at a common covariate value: a
    bias that follows each model's reference positive rate is not read as a family's.
    A covariate equal on every model adjusts nothing and is dropped (``adjusted_for``
    None). Too few models
    for a variance estimate, or a group collinear with the covariate: NaN bounds and
    the reason.
    """
    from scipy.stats import t as student_t

    y = np.asarray(values, dtype=float)
    x = np.asarray(in_group, dtype=bool).astype(float)
    k, m = int(x.sum()), int(y.size)
    name = covariate_name if covariate is not None else None

    def undefined(reason: str, statistic: float = math.nan, df: float = math.nan) -> ModelContrast:
        return ModelContrast(statistic=statistic, ci_low=math.nan, ci_high=math.nan, df=df, p_value=math.nan,
                             level=level, adjusted_for=name, undefined_reason=reason)

    if k == 0 or k == m:
        return undefined("every audited model is on one side: no other models to contrast with")
    columns = [np.ones(m), x]
    if covariate is not None:
        z = np.asarray(covariate, dtype=float)
        if np.ptp(z) > 1e-12:
            columns.append(z - z.mean())
        else:
            name = None  # every model has the same value: nothing to adjust for
    design = np.column_stack(columns)
    if np.linalg.matrix_rank(design) < design.shape[1]:
        return undefined(f"the family indicator is collinear with the {covariate_name}: the adjusted contrast "
                         f"is not identified")
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    statistic = float(coef[1])
    df = m - design.shape[1]
    if df < 1:
        return undefined(f"{m} models: an interval needs at least {design.shape[1] + 1} (df = models - "
                         f"{design.shape[1]})", statistic)
    residual = y - design @ coef
    se = math.sqrt(float(residual @ residual) / df * float(np.linalg.inv(design.T @ design)[1, 1]))
    half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * se
    if se > 0:
        p = float(2.0 * student_t.sf(abs(statistic) / se, df))
    else:
        p = 0.0 if statistic != 0 else 1.0
    return ModelContrast(statistic=statistic, ci_low=statistic - half, ci_high=statistic + half, df=float(df),
                         p_value=p, level=level, adjusted_for=name)
