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

from samples import ConfidenceInterval, check_level, check_resamples, held_interval

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

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The interval this estimate was computed with (it keeps bounds, not resamples)."""
        held = ConfidenceInterval(low=self.ci_low, high=self.ci_high, level=self.level, method=self.method)
        return held_interval(held, level, method, what=f"the estimate ({self.method or 'unnamed'})")

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
    """Share of successes with a percentile bootstrap interval (iid items); Clopper-Pearson at 0/n and n/n."""
    level = check_level(level)
    if n == 0:
        return undefined(empty_reason, level=level, method="percentile bootstrap")
    if successes in (0, n):
        lo, hi = zero_one_interval(successes / n, n, level)
        return Estimate(statistic=successes / n, n=int(n), ci_low=lo, ci_high=hi, level=level,
                        method="Clopper-Pearson (a share of 0 or 1)", details={"successes": int(successes)})
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


def cluster_totals(values: np.ndarray, n_resamples: int, rng: np.random.Generator,
                   strata: np.ndarray | None = None):
    """Yield chunks of bootstrap totals (resamples x columns) of per-cluster ``values`` (clusters x columns).

    Clusters with equal rows are interchangeable, so resampling C clusters is
    Multinomial(C, share of each distinct row) over the distinct rows: the same law
    at a cost that grows with the distinct rows instead of the clusters (0/1 labels
    in small clusters have a handful: a 100,000-unit audit draws 12 numbers per
    resample instead of 100,000). With many distinct rows the uniform cluster picks
    of ``cluster_weights`` are cheaper. ``strata`` (one per cluster): a stratified
    sample is resampled within each stratum, keeping its clusters' count.
    """
    if strata is None:
        yield from _totals(values, n_resamples, rng)
        return
    streams = [_totals(values[strata == s], n_resamples, rng) for s in np.unique(strata)]
    for parts in zip(*streams):
        yield sum(parts)


def _totals(values: np.ndarray, n_resamples: int, rng: np.random.Generator):
    n_clusters = values.shape[0]
    key = np.zeros(n_clusters, dtype=np.int64)
    for column in values.T:  # one integer key per distinct row (np.unique(axis=0) sorts rows as bytes, slowly)
        levels, codes = np.unique(column, return_inverse=True)
        key = key * levels.size + codes
    keys, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if keys.size * 8 > n_clusters:
        for block in cluster_weights(n_clusters, n_resamples, rng):
            yield block @ values
        return
    distinct = values[first]
    shares = np.bincount(inverse.ravel(), minlength=keys.size) / n_clusters
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        yield rng.multinomial(n_clusters, shares, size=size).astype(float) @ distinct


def zero_one_interval(statistic: float, n_effective: float, level: float) -> tuple[float, float]:
    """Clopper-Pearson interval of a share observed at 0 or 1 on ``n_effective`` independent items.

    At x = 0 the exact upper bound solves P(X = 0) = (1 - level) / 2, i.e.
    1 - ((1 - level) / 2) ** (1 / n); at x = n the mirror image. A bootstrap of an
    all-0 or all-1 sample has no spread and would claim certainty.
    """
    tail = (1.0 - level) / 2.0
    edge = 1.0 - tail ** (1.0 / n_effective)
    return (0.0, edge) if statistic == 0.0 else (1.0 - edge, 1.0)


def share_interval(num_c: np.ndarray, den_c: np.ndarray, n_items: int, level: float,
                   strata: np.ndarray | None = None) -> tuple[float, float, dict]:
    """Interval of the share sum(num_c) / sum(den_c) over independent clusters, and what it used.

    Wilson's score interval on the effective sample size n / design effect, the
    design effect being the clustered (linearised, with-replacement) variance of the
    ratio over the binomial one, C/(C-1) sum_c (num_c - p den_c)^2 / (sum den_c)^2
    (with ``strata``, one per cluster: that sum within each stratum around its own
    mean, C_s/(C_s-1) per stratum); the effective size is capped at the items. At a share of 0 or 1 that variance is
    0 and says nothing about clustering, so the interval is Clopper-Pearson on the
    effective number of clusters (Kish, from the clusters' denominators): clusters
    are the independent draws, the design effect at its largest. Neither collapses.
    Measured in benchmarks/coverage.md (shares near 0): it covers where the cluster
    percentile bootstrap, which it replaces for shares, fell to 0.87-0.89.
    """
    from agreement.quantiles import normal_quantile

    total = den_c.sum()
    p = float(num_c.sum() / total)
    if p in (0.0, 1.0):
        n_effective = float(total ** 2 / (den_c ** 2).sum())
        lo, hi = zero_one_interval(p, n_effective, level)
        return lo, hi, {"n_effective": n_effective, "interval": "Clopper-Pearson on the effective number of clusters"}
    residual = num_c - p * den_c
    groups = [np.ones(num_c.size, dtype=bool)] if strata is None else [strata == s for s in np.unique(strata)]
    variance = sum(int(g.sum()) / max(int(g.sum()) - 1, 1) * float(((residual[g] - residual[g].mean()) ** 2).sum())
                   for g in groups) / total ** 2
    n_effective = min(float(n_items), p * (1 - p) / variance) if variance > 0 else float(n_items)
    z = normal_quantile(1.0 - (1.0 - level) / 2.0)
    centre = (p + z * z / (2 * n_effective)) / (1 + z * z / n_effective)
    half = z * math.sqrt(p * (1 - p) / n_effective + z * z / (4 * n_effective ** 2)) / (1 + z * z / n_effective)
    return centre - half, centre + half, {"n_effective": n_effective, "design_effect": n_items / n_effective,
                                          "interval": "Wilson on the effective sample size"}


def cluster_ratio_estimate(numerator: np.ndarray, denominator: np.ndarray, clusters: np.ndarray, *,
                           n_resamples: int, seed: int, level: float, empty_reason: str,
                           weights: np.ndarray | None = None, difference: bool = False,
                           strata: np.ndarray | None = None) -> Estimate:
    """Ratio sum(w*num)/sum(w*den) over items nested in clusters, with an interval that follows the design.

    Items are e.g. turns (denominator 1 when the turn counts, numerator its 0/1
    label); clusters are trajectories. ``weights`` are design weights (1/inclusion
    probability). A share (0 <= num <= den per item) gets ``share_interval``
    (Wilson on the effective sample size; Clopper-Pearson on the effective clusters
    at 0 and 1), which never has zero width; any other ratio a percentile bootstrap
    over whole clusters. ``difference``: the ratio is a difference of two shares
    (|num| <= den per item, e.g. judge - human), never a share; 0 on every item gives
    +/- the Clopper-Pearson bound of a discordant share of 0. ``strata`` (one per
    item): a stratified sample's variance and resamples stay within each stratum
    (when clusters are nested in strata; otherwise the method says they were not
    used). The method names the clusters and strata used.
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
    statistic = float(num_c.sum() / total)
    cluster_strata, design = None, f"clusters: {codes.size}"
    if strata is not None:
        item_strata = np.asarray(strata).astype(str)
        first = np.zeros(codes.size, dtype=np.intp)
        first[inverse[::-1]] = np.arange(inverse.size)[::-1]  # each cluster's first item
        if np.any(item_strata[first][inverse] != item_strata):
            design += ", strata not used: a cluster spans several strata"
        else:
            cluster_strata = item_strata[first]
            design += f", within {np.unique(cluster_strata).size} strata"
    n_strata = 1 if cluster_strata is None else int(np.unique(cluster_strata).size)
    details = {"n_clusters": int(codes.size), "n_strata": n_strata}
    if not difference and bool(np.all((num >= 0) & (num <= den))):
        lo, hi, used = share_interval(num_c, den_c, n_items, level, strata=cluster_strata)
        return Estimate(statistic=statistic, n=n_items, ci_low=lo, ci_high=hi, level=level,
                        method=f"{used.pop('interval')} ({design})", details={**details, **used})
    if difference and not num.any():
        # A difference (|num| <= den, e.g. judge - human) that is 0 on every item: no discordant item, so
        # |difference| <= the discordant share, whose Clopper-Pearson upper bound at 0 bounds it both ways.
        n_effective = float(total ** 2 / (den_c ** 2).sum())
        edge = zero_one_interval(0.0, n_effective, level)[1]
        return Estimate(statistic=0.0, n=n_items, ci_low=-edge, ci_high=edge, level=level,
                        method=f"+/- the Clopper-Pearson bound of a discordant share of 0 ({design})",
                        details={**details, "n_effective": n_effective})
    rng = np.random.default_rng(seed)
    parts = []
    for block in cluster_totals(np.column_stack([num_c, den_c]), check_resamples(n_resamples), rng,
                                strata=cluster_strata):
        with np.errstate(invalid="ignore", divide="ignore"):
            parts.append(np.where(block[:, 1] > 0, block[:, 0] / block[:, 1], np.nan))
    replicates = np.concatenate(parts)
    lo, hi, dropped = percentile_interval(replicates, level)
    return Estimate(statistic=statistic, n=n_items, ci_low=lo, ci_high=hi, level=level,
                    method=f"cluster percentile bootstrap ({design})",
                    details={**details, "n_resamples": int(n_resamples), "undefined_resamples": dropped})
