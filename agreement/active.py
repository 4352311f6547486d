"""Active choice of the units people label: more labels where the evidence is weakest, estimates unbiased.

The judge's agreement with people is a mean over the population, theta = mean of y_i
(y_i = 1 when the judge matches the human reference on unit i). Where other judges of
other families agree with the judge, its label is probably right; where they split, it
is uncertain. A predictor f_i in (0, 1) of y_i (``cross_family_predictor``) costs no
human label; active statistical inference (Zrnic & Candes, ICML 2024) labels unit i with
a known probability pi_i, larger where (y - f)^2 is expected larger, and estimates

    theta_hat = (1/N) sum_i [ lam f_i + (y_i - lam f_i) xi_i / pi_i ]

(xi_i = 1 when unit i was labelled): unbiased for any pi and any fixed lam, because
E[xi_i / pi_i] = 1 (prediction-powered inference with the propensities known); lam is
tuned on the labelled units as PPI++ does, which keeps it consistent. Its variance under independent (Poisson) draws is
(1/N^2) sum_i (1 - pi_i) / pi_i (y_i - lam f_i)^2, estimated from the labelled units
with weights 1/pi_i. Uniform labelling is the special case pi_i = n / N, lam = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from samples import ConfidenceInterval, check_level

MIN_PROBABILITY = 0.05
"""No unit's chance of being labelled falls below this: the weights 1/pi stay bounded."""


@dataclass(frozen=True, kw_only=True)
class ActiveEstimate:
    """A mean estimated from actively chosen labels, with its normal-approximation interval."""

    statistic: float
    standard_error: float
    n: int
    """Units labelled."""
    population: int
    lam: float
    level: float = 0.95
    method: str = "active inference (inverse-probability weights, PPI++ lambda), normal interval"

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The normal interval at ``level`` (None: the level it was computed at); only its own ``method``."""
        from scipy.stats import norm

        if method is not None and method != self.method:
            raise ValueError(f"method={method!r}: an active estimate has only its normal interval "
                             f"(allowed: None or {self.method!r})")
        level = self.level if level is None else check_level(level)
        z = float(norm.ppf(0.5 + level / 2))
        return ConfidenceInterval(low=self.statistic - z * self.standard_error,
                                  high=self.statistic + z * self.standard_error, level=level, method=self.method)


def cross_family_predictor(agreeing: np.ndarray, voting: np.ndarray) -> np.ndarray:
    """P(judge matches people) per unit from how many other-family judges give the judge's label.

    ``agreeing[i]`` of ``voting[i]`` other judges gave the judge's label; the smoothed share
    (agreeing + 1/2) / (voting + 1) keeps every prediction strictly inside (0, 1).
    """
    agreeing, voting = np.asarray(agreeing, dtype=float), np.asarray(voting, dtype=float)
    if np.any(agreeing < 0) or np.any(agreeing > voting):
        raise ValueError("agreeing must lie in [0, voting] for every unit")
    return (agreeing + 0.5) / (voting + 1.0)


def labelling_probabilities(predicted: np.ndarray, budget: float) -> np.ndarray:
    """pi_i proportional to sqrt(f_i (1 - f_i)) (the expected |y - f| of a calibrated f), summing to ``budget``,
    each in [MIN_PROBABILITY, 1] (water-filling: units capped at 1 pass their share to the rest)."""
    f = np.asarray(predicted, dtype=float)
    n = f.size
    if not 0 < budget <= n:
        raise ValueError(f"budget={budget!r}: expected a number of labels in (0, {n}]")
    if budget < MIN_PROBABILITY * n:
        raise ValueError(f"budget={budget!r}: below the floor of {MIN_PROBABILITY} per unit ({MIN_PROBABILITY * n})")
    score = np.sqrt(np.clip(f * (1 - f), 1e-12, None))
    pi = np.full(n, MIN_PROBABILITY)
    free = np.ones(n, dtype=bool)
    for _ in range(n):
        remaining = budget - pi[~free].sum()
        scaled = score[free] / score[free].sum() * remaining
        low, high = scaled < MIN_PROBABILITY, scaled > 1.0
        if not low.any() and not high.any():
            pi[free] = scaled
            break
        index = np.nonzero(free)[0]
        pi[index[low]] = MIN_PROBABILITY
        pi[index[high]] = 1.0
        free[index[low | high]] = False
        if not free.any():
            break
    return pi


def active_mean(y: np.ndarray, predicted: np.ndarray, probability: np.ndarray, labelled: np.ndarray, *,
                level: float = 0.95) -> ActiveEstimate:
    """The unbiased active estimate of mean(y) from the labelled units (``y`` is read only where labelled)."""
    f = np.asarray(predicted, dtype=float)
    pi = np.asarray(probability, dtype=float)
    xi = np.asarray(labelled, dtype=bool)
    y = np.where(xi, np.asarray(y, dtype=float), 0.0)
    n_pop = f.size
    weight = xi / pi
    # PPI++ lambda minimising the HT variance, from the labelled units (weights 1/pi carry them to the population).
    w = weight * (1 - pi) / pi
    denominator = float(np.sum(w * f * f))
    lam = float(np.clip(np.sum(w * y * f) / denominator, 0.0, 1.0)) if denominator > 0 else 0.0
    estimate = float(np.mean(lam * f + (y - lam * f) * weight))
    variance = float(np.sum(w * (y - lam * f) ** 2)) / n_pop ** 2
    return ActiveEstimate(statistic=estimate, standard_error=math.sqrt(variance), n=int(xi.sum()),
                          population=n_pop, lam=lam, level=level)
