"""Bias-corrected rates from a human-validated sample: Rogan-Gladen and PPI++.

A judge-scored rate over the full set is biased by the judge's errors. The
validation sample (units with both a judge label and a human reference label)
measures those errors, and two estimators use it:

- Rogan-Gladen (1978): pi = (p_obs + Sp - 1) / (Se + Sp - 1), with the judge's
  sensitivity and specificity against the human reference. Undefined when
  Se + Sp <= 1 (the judge carries no information). The interval resamples the
  full set and the validation sample (by trajectory cluster) together.
- PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453), the mean estimator
  theta = mean_N(lam * f) + mean_n(y - lam * f) with the power-tuning lam chosen
  to minimise variance, clipped to [0, 1]; design weights 1/inclusion_prob enter
  as normalised sample weights (mean 1), exactly as ``ppi-python``'s ``w`` /
  ``w_unlabeled``. Written here rather than imported because ppi-python needs
  numba and pins that do not fit accord's environment (shared NOTES.md); the
  tests compare both on the same data.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from agreement.bootstrap import DEFAULT_SEED
from agreement.estimate import (
    Estimate,
    cluster_weights,
    percentile_interval,
    undefined,
)
from samples import check_level, check_resamples


def _binary(name: str, values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-d array of 0/1 labels, got shape {arr.shape}")
    if not np.isin(arr, (0.0, 1.0)).all():
        bad = sorted(set(arr[~np.isin(arr, (0.0, 1.0))].tolist()))[:5]
        raise ValueError(f"{name}: expected 0/1 labels (unscored rows removed first), found {bad}")
    return arr


def rogan_gladen_point(observed: float, sensitivity: float, specificity: float) -> tuple[float, str | None]:
    """Corrected prevalence clipped to [0, 1], or NaN with the reason it is undefined."""
    youden = sensitivity + specificity - 1.0
    if not (math.isfinite(youden) and math.isfinite(observed)):
        return math.nan, "sensitivity or specificity is undefined (no reference positive or negative)"
    if youden <= 0:
        return math.nan, f"Se + Sp - 1 = {youden:.3f} <= 0: the judge carries no information about the label"
    return min(1.0, max(0.0, (observed + specificity - 1.0) / youden)), None


def _se_sp(judge: np.ndarray, human: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    pos, neg = human == 1, human == 0
    wp, wn = (weight * pos).sum(), (weight * neg).sum()
    se = (weight * pos * judge).sum() / wp if wp > 0 else math.nan
    sp = (weight * neg * (1 - judge)).sum() / wn if wn > 0 else math.nan
    return se, sp


def rogan_gladen(full_judge: np.ndarray, val_judge: np.ndarray, val_human: np.ndarray, *,
                 val_clusters: np.ndarray | None = None, val_weights: np.ndarray | None = None,
                 n_resamples: int = 10_000, seed: int = DEFAULT_SEED, level: float = 0.95) -> Estimate:
    """Rogan-Gladen corrected rate of ``full_judge`` with a percentile bootstrap interval.

    ``full_judge``: judge labels (0/1) over the set the rate is computed on;
    ``val_judge``/``val_human``: the validation sample's judge and human reference
    labels; ``val_weights``: design weights; ``val_clusters``: trajectory ids
    (the validation sample is resampled by cluster).
    """
    level = check_level(level)
    n_resamples = check_resamples(n_resamples)
    full = _binary("full_judge", full_judge)
    vj, vh = _binary("val_judge", val_judge), _binary("val_human", val_human)
    if vj.size != vh.size:
        raise ValueError(f"val_judge has {vj.size} rows but val_human has {vh.size}")
    w = np.ones(vj.size) if val_weights is None else np.asarray(val_weights, dtype=float)
    clusters = np.arange(vj.size) if val_clusters is None else np.asarray(val_clusters)
    method = "Rogan-Gladen, percentile bootstrap"
    if full.size == 0:
        return undefined("no judge-scored unit in this set", level=level, method=method)
    if vj.size == 0:
        return undefined("no validated unit (judge and human label) for this judge", level=level, method=method)
    observed = float(full.mean())
    se, sp = _se_sp(vj, vh, w)
    point, reason = rogan_gladen_point(observed, se, sp)
    details = {"observed": observed, "sensitivity": se, "specificity": sp, "n_validation": int(vj.size),
               "n_resamples": n_resamples}
    if reason:
        return undefined(reason, n=int(full.size), level=level, method=method, **details)

    rng = np.random.default_rng(seed)
    obs_reps = rng.binomial(full.size, observed, size=n_resamples) / full.size
    codes, inverse = np.unique(clusters, return_inverse=True)
    sums = {name: np.bincount(inverse, weights=vals, minlength=codes.size) for name, vals in {
        "tp": w * vh * vj, "p": w * vh, "tn": w * (1 - vh) * (1 - vj), "n": w * (1 - vh)}.items()}
    parts = []
    for block in cluster_weights(codes.size, n_resamples, rng):
        with np.errstate(invalid="ignore", divide="ignore"):
            parts.append(np.stack([(block @ sums["tp"]) / (block @ sums["p"]),
                                   (block @ sums["tn"]) / (block @ sums["n"])], axis=1))
    se_sp = np.concatenate(parts)
    youden = se_sp[:, 0] + se_sp[:, 1] - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.where(youden > 0, np.clip((obs_reps + se_sp[:, 1] - 1.0) / youden, 0.0, 1.0), np.nan)
    lo, hi, dropped = percentile_interval(reps, level)
    return Estimate(statistic=point, n=int(full.size), ci_low=lo, ci_high=hi, level=level, method=method,
                    details={**details, "undefined_resamples": dropped})


def _normalised(weights: np.ndarray | None, n: int, name: str) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"{name}: expected {n} weights, got shape {w.shape}")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError(f"{name}: weights must be finite and > 0 (1 / inclusion probability)")
    return w / w.sum() * n


def ppi_power_tuning(y: np.ndarray, f: np.ndarray, f_unlabeled: np.ndarray, w: np.ndarray,
                     w_unlabeled: np.ndarray) -> float:
    """Variance-minimising lam for the mean (PPI++ eq. for GLMs with identity Hessian), clipped to [0, 1]."""
    n, big_n = y.size, f_unlabeled.size
    theta1 = (w_unlabeled * f_unlabeled).mean() + (w * (y - f)).mean()
    g = w * (y - theta1)
    gh = w * (f - theta1)
    ghu = w_unlabeled * (f_unlabeled - theta1)
    cov = 2.0 / n * np.sum((g - g.mean()) * (gh - gh.mean()))
    var = np.var(np.concatenate([gh, ghu]), ddof=1)
    if var == 0:
        return 0.0
    return float(np.clip(cov / (2.0 * (1.0 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(y: np.ndarray, f: np.ndarray, f_unlabeled: np.ndarray, *, weights: np.ndarray | None = None,
             weights_unlabeled: np.ndarray | None = None, lam: float | None = None,
             level: float = 0.95) -> Estimate:
    """PPI++ estimate of a mean (a rate for 0/1 labels) with its normal interval.

    ``y``/``f``: human reference and judge value on the validation sample;
    ``f_unlabeled``: judge value on the full set; weights as in ppi-python.
    """
    level = check_level(level)
    y, f, fu = (np.asarray(a, dtype=float) for a in (y, f, f_unlabeled))
    method = "PPI++ (power-tuned), normal interval"
    if y.shape != f.shape:
        raise ValueError(f"y has shape {y.shape} but f has {f.shape}")
    if y.size < 2:
        return undefined(f"{y.size} validated unit(s): PPI++ needs at least 2", n=int(fu.size), level=level,
                         method=method)
    if fu.size < 2:
        return undefined(f"{fu.size} judge-scored unit(s): PPI++ needs at least 2", n=int(fu.size), level=level,
                         method=method)
    w = _normalised(weights, y.size, "weights")
    wu = _normalised(weights_unlabeled, fu.size, "weights_unlabeled")
    if lam is None:
        lam = ppi_power_tuning(y, f, fu, w, wu)
    elif not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam={lam!r}: expected a power-tuning value in [0, 1] or None")
    theta = float((wu * lam * fu).mean() + (w * (y - lam * f)).mean())
    se = math.sqrt(np.std(wu * lam * fu) ** 2 / fu.size + np.std(w * (y - lam * f)) ** 2 / y.size)
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    low, high = theta - z * se, theta + z * se
    # A rate (every value in [0, 1]) cannot leave [0, 1]: its normal interval is cut there, and says so.
    if all(((a >= 0) & (a <= 1)).all() for a in (y, f, fu)) and 0.0 <= theta <= 1.0 and (low < 0 or high > 1):
        low, high, method = max(low, 0.0), min(high, 1.0), method + ", clipped to [0, 1]"
    return Estimate(statistic=theta, n=int(fu.size), ci_low=float(low), ci_high=float(high), level=level,
                    method=method, details={"lam": float(lam), "se": se, "n_labeled": int(y.size)})
