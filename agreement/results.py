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

from agreement.intervals import METHOD_NAMES, RANGE, bootstrap_interval, bounded_t, method_for
from agreement.quantiles import normal_quantile, t_quantile
from samples import DEFAULT_LEVEL, ConfidenceInterval, InputError, check_level

CI_METHODS = ("t", "normal", "percentile", "bca", "t_boot")


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

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The interval at ``level`` (None: ``DEFAULT_LEVEL``; the study and policy pass theirs) by ``method``.

        None: the method the gate, the report and the documents use for this coefficient
        (``agreement.intervals.method_for``; the analytic t without bootstrap resamples).
        ``t``: est +/- t(1-a/2, df) se, upper bound capped at 1 (irrCAC); ``normal``:
        est +/- z se (SAS/statsmodels/vcd, uncapped); ``percentile``: bootstrap
        quantiles; ``bca``: bias-corrected and accelerated bootstrap (Efron 1987) with
        the jackknife over the resampled units/clusters; ``t_boot``: small-sample t on
        the bootstrap SE. ``method`` of the result names the procedure and what it drew.
        """
        level = DEFAULT_LEVEL if level is None else check_level(level)
        statistic_range = None
        if method is None:
            method = method_for(self.coefficient) if self.bootstrap is not None else "t"
            # The chosen t interval of a coefficient with a natural range is on that range's logit scale
            # (``agreement.intervals.bounded_t``): no view shows an interval such as [0.825, 1.003].
            statistic_range = RANGE.get(self.coefficient) if method in ("t", "t_boot") else None
        if method not in CI_METHODS:
            raise InputError(f"method={method!r}: expected one of {list(CI_METHODS)}")
        over = self.details.get("se_over" if method in ("t", "normal") else "resampling")
        scale = f" (logit scale of [{statistic_range[0]:g}, {statistic_range[1]:g}])" if statistic_range else ""
        name = METHOD_NAMES[method] + scale + (f" over {over}" if over else "")
        low, high = self._bounds(level, method, statistic_range)
        return ConfidenceInterval(low=low, high=high, level=level, method=name)

    def _bounds(self, level: float, method: str, statistic_range: tuple[float, float] | None = None
                ) -> tuple[float, float]:
        nan = (math.nan, math.nan)
        if not math.isfinite(self.statistic):
            return nan
        tail = (1.0 - level) / 2.0
        if method in ("t", "normal"):
            if not math.isfinite(self.se):
                return nan
            if statistic_range is not None:
                return bounded_t(self.statistic, self.se, self.df, level, statistic_range) if self.df >= 1 else nan
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
        return bootstrap_interval(self.statistic, self.bootstrap, self.details.get("jackknife"), level, method,
                                  df=self.df, bounds=statistic_range)
