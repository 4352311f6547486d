"""One estimate with its interval, and the resampling schemes the benchmark tables share.

Every rate in validation, audit, gate and scoring is an ``Estimate``: a number (or
NaN plus the reason it is undefined), its denominator, and a percentile interval.
The resamplers draw *counts* instead of index arrays: resampling n Bernoulli items
with replacement is exactly Binomial(n, p_hat) for their sum, and resampling n
categorised items is Multinomial(n, cell shares) for the cell counts, so a
10,000-resample bootstrap of a rate or an F1 costs one vectorised draw, whatever n.
Clustered data (turns nested in trajectories) resample whole clusters through
multinomial cluster weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
# Rows of the cluster-weight matrix drawn at once: bounds memory at about
# _CHUNK * n_clusters * 8 bytes whatever n_resamples is.
_CHUNK = 2_000


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """A point estimate, its denominator and interval; NaN statistic means undefined (see reason)."""

    statistic: float
    n: int
    ci_low: float = math.nan
    ci_high: float = math.nan
    level: float = 0.95
    method: str = ""
    undefined_reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def defined(self) -> bool:
        return self.undefined_reason is None and math.isfinite(self.statistic)

    def confidence_interval(self) -> tuple[float, float]:
        return (self.ci_low, self.ci_high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": None if not math.isfinite(self.statistic) else self.statistic,
            "n": self.n,
            "ci_low": None if not math.isfinite(self.ci_low) else self.ci_low,
            "ci_high": None if not math.isfinite(self.ci_high) else self.ci_high,
            "level": self.level,
            "method": self.method,
            "undefined_reason": self.undefined_reason,
            "details": self.details,
        }

    def format(self, *, percent: bool = False, digits: int = 3) -> str:
        """Table text: '--' for undefined, the value and interval otherwise."""
        if not self.defined:
            return "--"
        scale, d = (100.0, 1) if percent else (1.0, digits)
        value = f"{self.statistic * scale:.{d}f}"
        if math.isfinite(self.ci_low) and math.isfinite(self.ci_high):
            return f"{value} [{self.ci_low * scale:.{d}f}, {self.ci_high * scale:.{d}f}]"
        return value


def undefined(reason: str, *, n: int = 0, level: float = 0.95, method: str = "", **details: Any) -> Estimate:
    return Estimate(statistic=math.nan, n=n, level=level, method=method, undefined_reason=reason, details=details)


def check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level!r}: expected a confidence level strictly between 0 and 1")
    return float(level)


MIN_RESAMPLES = 100
MAX_RESAMPLES = 1_000_000
"""Resample and permutation counts accepted everywhere (CLI, study files, policies): 100x the default
bounds the time and memory a typo (``--n-resamples 10000000000``) could ask for."""


def check_resamples(n_resamples: int) -> int:
    if int(n_resamples) != n_resamples or not MIN_RESAMPLES <= n_resamples <= MAX_RESAMPLES:
        raise ValueError(f"n_resamples={n_resamples!r}: expected an integer from {MIN_RESAMPLES} to {MAX_RESAMPLES}")
    return int(n_resamples)


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float, int]:
    """Percentile interval over the finite replicates; also returns how many were undefined."""
    finite = replicates[np.isfinite(replicates)]
    dropped = int(replicates.size - finite.size)
    if finite.size == 0:
        return math.nan, math.nan, dropped
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(lo), float(hi), dropped


def proportion_estimate(successes: int, n: int, *, n_resamples: int, seed: int, level: float,
                        empty_reason: str) -> Estimate:
    """Share of successes with a percentile bootstrap interval (iid items)."""
    level = check_level(level)
    if n == 0:
        return undefined(empty_reason, level=level, method="percentile bootstrap")
    rng = np.random.default_rng(seed)
    p = successes / n
    replicates = rng.binomial(n, p, size=check_resamples(n_resamples)) / n
    lo, hi, _ = percentile_interval(replicates, level)
    return Estimate(statistic=p, n=int(n), ci_low=lo, ci_high=hi, level=level, method="percentile bootstrap",
                    details={"successes": int(successes), "n_resamples": int(n_resamples)})


def mean_estimate(values: np.ndarray, *, n_resamples: int, seed: int, level: float, empty_reason: str) -> Estimate:
    """Mean of continuous scores with a percentile bootstrap interval (iid items)."""
    level = check_level(level)
    values = np.asarray(values, dtype=float)
    n = values.size
    if n == 0:
        return undefined(empty_reason, level=level, method="percentile bootstrap")
    rng = np.random.default_rng(seed)
    replicates = np.empty(check_resamples(n_resamples))
    probs = np.full(n, 1.0 / n)
    for start in range(0, replicates.size, _CHUNK):
        stop = min(start + _CHUNK, replicates.size)
        counts = rng.multinomial(n, probs, size=stop - start)
        replicates[start:stop] = counts @ values / n
    lo, hi, _ = percentile_interval(replicates, level)
    return Estimate(statistic=float(values.mean()), n=int(n), ci_low=lo, ci_high=hi, level=level,
                    method="percentile bootstrap", details={"n_resamples": int(n_resamples)})


def cluster_weights(n_clusters: int, n_resamples: int, rng: np.random.Generator):
    """Yield chunks of bootstrap cluster multiplicities (rows sum to n_clusters).

    Drawn as uniform cluster indices binned per resample: the same Multinomial law
    as ``rng.multinomial`` at a tenth of its cost per element (agreement/bootstrap.py
    measured the two on these machines).
    """
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        picks = rng.integers(0, n_clusters, size=(size, n_clusters))
        flat = (picks + np.arange(size)[:, None] * n_clusters).ravel()
        yield np.bincount(flat, minlength=size * n_clusters).reshape(size, n_clusters).astype(float)


def cluster_ratio_estimate(numerator: np.ndarray, denominator: np.ndarray, clusters: np.ndarray, *,
                           n_resamples: int, seed: int, level: float, empty_reason: str,
                           weights: np.ndarray | None = None) -> Estimate:
    """Ratio sum(w*num)/sum(w*den) over items nested in clusters, with a cluster percentile bootstrap.

    Items are e.g. turns (denominator 1 when the turn counts, numerator its 0/1
    label); clusters are trajectories. ``weights`` are design weights (1/inclusion
    probability); resampling is over whole clusters.
    """
    level = check_level(level)
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    w = np.ones_like(num) if weights is None else np.asarray(weights, dtype=float)
    codes, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    num_c = np.bincount(inverse, weights=w * num, minlength=codes.size)
    den_c = np.bincount(inverse, weights=w * den, minlength=codes.size)
    total = den_c.sum()
    n_items = int(np.count_nonzero(den))
    if total <= 0:
        return undefined(empty_reason, level=level, method="cluster percentile bootstrap")
    rng = np.random.default_rng(seed)
    parts = []
    for block in cluster_weights(codes.size, check_resamples(n_resamples), rng):
        d = block @ den_c
        with np.errstate(invalid="ignore", divide="ignore"):
            parts.append(np.where(d > 0, (block @ num_c) / d, np.nan))
    replicates = np.concatenate(parts)
    lo, hi, dropped = percentile_interval(replicates, level)
    return Estimate(statistic=float(num_c.sum() / total), n=n_items, ci_low=lo, ci_high=hi, level=level,
                    method="cluster percentile bootstrap",
                    details={"n_clusters": int(codes.size), "n_resamples": int(n_resamples),
                             "undefined_resamples": dropped})
