"""``AgreementResult``: one coefficient with its analytic SE, bootstrap draws and intervals.

Undefined is a state: when a coefficient cannot be computed (e.g. pe = 1 because
every rating falls in one category) ``statistic`` is NaN and ``undefined_reason``
says why; intervals are then (NaN, NaN). Bootstrap resamples where the coefficient
is undefined are NaN in ``bootstrap`` and counted in ``bootstrap_undefined``;
percentile/BCa intervals use the defined resamples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agreement.quantiles import normal_cdf, normal_quantile, t_quantile
from samples.errors import InputError

CI_METHODS = ("t", "normal", "percentile", "bca")


def _check_level(level: float) -> float:
    if not isinstance(level, (int, float)) or not 0.0 < float(level) < 1.0:
        raise InputError(f"level={level!r}: expected a confidence level strictly between 0 and 1")
    return float(level)


@dataclass(frozen=True, kw_only=True)
class AgreementResult:
    """A chance-corrected (or raw) agreement coefficient with its uncertainty.

    ``pa``/``pe`` are the observed and chance agreement the formula uses; ``se`` is the
    analytic standard error named by ``se_method`` (NaN when none exists, reason in
    ``details['se_undefined_reason']``); ``df`` the t degrees of freedom (n - 1, or
    clusters - 1). ``prevalence_index``/``bias_index`` (Byrt, Bishop & Carlin 1993)
    are set for two raters and two categories. ``details`` holds conventions,
    per-category kappas, null SEs and z, counts of dropped units.
    """

    coefficient: str
    statistic: float
    pa: float
    pe: float
    se: float
    se_method: str
    n_units: int
    n_raters: int
    undefined_reason: str | None = None
    df: float = math.nan
    details: Mapping[str, Any] = field(default_factory=dict, compare=False)
    bootstrap: np.ndarray | None = field(default=None, repr=False, compare=False)
    prevalence_index: float | None = None
    bias_index: float | None = None

    @property
    def n(self) -> int:
        return self.n_units

    @property
    def defined(self) -> bool:
        return self.undefined_reason is None

    @property
    def bootstrap_undefined(self) -> int:
        """Resamples where the coefficient was undefined (NaN in ``bootstrap``)."""
        return 0 if self.bootstrap is None else int(np.isnan(self.bootstrap).sum())

    def confidence_interval(self, level: float = 0.95, method: str = "t") -> tuple[float, float]:
        """(low, high) at ``level``.

        ``t``: est +/- t(1-a/2, df) se, upper bound capped at 1 (irrCAC); ``normal``:
        est +/- z se (SAS/statsmodels/vcd, uncapped); ``percentile``: bootstrap
        quantiles; ``bca``: bias-corrected and accelerated bootstrap (Efron 1987) with
        the jackknife over the resampled units/clusters.
        """
        level = _check_level(level)
        if method not in CI_METHODS:
            raise InputError(f"method={method!r}: expected one of {list(CI_METHODS)}")
        nan = (math.nan, math.nan)
        if not math.isfinite(self.statistic):
            return nan
        tail = (1.0 - level) / 2.0
        if method in ("t", "normal"):
            if not math.isfinite(self.se):
                return nan
            if method == "normal":
                half = normal_quantile(1.0 - tail) * self.se
                return (self.statistic - half, self.statistic + half)
            if not self.df >= 1:
                return nan
            half = t_quantile(1.0 - tail, self.df) * self.se
            return (self.statistic - half, min(1.0, self.statistic + half))
        if self.bootstrap is None:
            raise InputError(
                f"method={method!r}: {self.coefficient} was computed without bootstrap resamples (n_resamples=0)"
            )
        draws = self.bootstrap[~np.isnan(self.bootstrap)]
        if draws.size == 0:
            return nan
        if method == "percentile":
            low, high = np.quantile(draws, [tail, 1.0 - tail])
            return (float(low), float(high))
        return _bca(self.statistic, draws, self.details.get("jackknife"), tail)


def _bca(estimate: float, draws: np.ndarray, jackknife: Any, tail: float) -> tuple[float, float]:
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
