"""Coefficients as functions of sums of per-unit statistics.

Each kernel turns the ratings of one unit (a row of codes) into a short vector of
sufficient statistics; the coefficient is a function of their (weighted) sum over
units. The same ``evaluate`` therefore gives the point estimate (one weight vector)
and every bootstrap resample (a matrix of unit or cluster multiplicities times the
per-unit statistics), vectorised over the leading axes.

``linearised`` gives each unit's influence term z_i for the design-based (Taylor
linearisation) standard error of Gwet (2008, 2014) as implemented in R irrCAC 1.4:
var = f * sum_c (sum_{i in c} w_i (z_i - centre))^2 / (sum w_i)^2, with f = N/(N-1)
over the N units (or clusters); for equal weights and no clusters this is irrCAC's
sum (z_i - kappa)^2 / (n (n - 1)).

Missing-data conventions (Gwet 2014; refs README item 4):
- Gwet family (percent agreement, Fleiss/Scott, AC1/AC2, Brennan-Prediger, Conger):
  pa over units with >= 2 ratings; the classification probabilities pi_k over every
  unit with >= 1 rating (a singly-rated unit moves pe); n = units with >= 1 rating.
- Conger: rater g's p_gk over the units rater g rated (irrCAC conger.kappa.raw).
- Krippendorff's alpha (Krippendorff 2011): pairable values only (units with >= 2).
- Cohen's kappa: units rated by both raters (listwise, as irr/SAS/sklearn/statsmodels).
- Light's kappa: units rated by every rater (listwise, as irr kappam.light).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

# 1 - pe below this is "pe = 1": the chance-corrected coefficient is undefined.
PE_ONE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Evaluation:
    """Arrays over the leading axes of the sums: statistic (NaN when undefined), pa, pe, reason codes."""

    statistic: np.ndarray
    pa: np.ndarray
    pe: np.ndarray
    reason: np.ndarray  # int codes into Kernel.reasons; 0 = defined


@dataclass(frozen=True)
class Linearised:
    """Per-unit influence terms for the analytic SE."""

    z: np.ndarray  # (m,) per unit (pattern) influence term
    centre: float
    variance_members: np.ndarray  # (m,) bool: units entering the variance
    df_members: np.ndarray  # (m,) bool: units counted in the t degrees of freedom
    small_sample: bool  # use f = N/(N-1) (Gwet) instead of 1 (FCE 1969)


class Kernel(Protocol):
    """What the engine needs from a coefficient (a registered ``Coefficient`` plans one).

    ``stats`` maps unit rows of codes (m x raters of the subset, -1 missing) to an
    (m, width) array; ``evaluate`` maps sums of those rows (any leading axes) to an
    ``Evaluation`` (reason codes index ``reasons``); ``linearised`` gives the
    influence terms for the analytic SE, or None when there is no analytic SE.
    ``exchangeable`` kernels depend on a unit's category counts only, which lets
    units with the same counts share a pattern.
    """

    width: int
    exchangeable: bool
    reasons: tuple[str, ...]
    unweighted: tuple[int, ...]  # stats columns the engine must not multiply by unit weights

    def stats(self, codes: np.ndarray) -> np.ndarray: ...

    def evaluate(self, sums: np.ndarray) -> Evaluation: ...

    def linearised(self, codes: np.ndarray, sums: np.ndarray, value: Evaluation) -> Linearised | None: ...


def _one_hot_counts(codes: np.ndarray, q: int) -> np.ndarray:
    """(m, q) number of ratings per category for each row of codes (-1 ignored)."""
    m = codes.shape[0]
    counts = np.zeros((m, q), dtype=float)
    rows, cols = np.nonzero(codes >= 0)
    np.add.at(counts, (rows, codes[rows, cols]), 1.0)
    return counts


def _pair_agreement(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_k r_ik (r*_ik - 1): weighted agreeing ordered pairs per unit (irrCAC sum.q)."""
    weighted = counts @ weights.T
    return np.sum(counts * (weighted - 1.0), axis=1)


def _unit_agreement(counts: np.ndarray, ri: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each unit's weighted share of agreeing rater pairs (0 for units with fewer than 2 ratings)."""
    multi = ri >= 2
    agreement = np.zeros_like(ri)
    agreement[multi] = _pair_agreement(counts[multi], weights) / (ri[multi] * (ri[multi] - 1.0))
    return agreement


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


def _chance_corrected(pa: np.ndarray, pe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pe_one = np.abs(1.0 - pe) <= PE_ONE_TOLERANCE
    with np.errstate(invalid="ignore", divide="ignore"):
        statistic = np.where(pe_one, np.nan, (pa - pe) / np.where(pe_one, 1.0, 1.0 - pe))
    return statistic, pe_one


class GwetFamily:
    """Percent agreement, Fleiss' kappa (Scott's pi for 2 raters), Gwet's AC1/AC2, Brennan-Prediger.

    Gwet (2014) generalised to missing ratings and agreement weights, as irrCAC's
    pa.coeff.raw / fleiss.kappa.raw / gwet.ac1.raw / bp.coeff.raw.
    """

    reasons = (
        "",
        "no unit has two or more ratings",
        "chance agreement pe = 1 (every rating in one category), so the coefficient is 0/0",
        "only one category: chance agreement is undefined for one category",
    )

    unweighted: tuple[int, ...] = ()
    exchangeable = True

    def __init__(self, chance: str, weights: np.ndarray, *, small_sample: bool = True) -> None:
        self.chance = chance  # "none" | "fleiss" | "gwet" | "uniform"
        self.weights = weights
        self.small_sample = small_sample  # False: Gwet's 2-rater table variance (divides by n^2)
        self.q = weights.shape[0]
        self.uses_pi = chance in ("fleiss", "gwet")
        self.width = 3 + (self.q if self.uses_pi else 0)

    def stats(self, codes: np.ndarray) -> np.ndarray:
        counts = _one_hot_counts(codes, self.q)
        ri = counts.sum(axis=1)
        multi = ri >= 2
        pa_i = _unit_agreement(counts, ri, self.weights)
        columns = [(ri >= 1).astype(float)[:, None], multi.astype(float)[:, None], pa_i[:, None]]
        if self.uses_pi:
            columns.append(_safe_divide(counts, ri[:, None]) * (ri >= 1)[:, None])
        out = np.concatenate(columns, axis=1)
        return np.nan_to_num(out, nan=0.0)

    def _pe(self, pi: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
        total_w = self.weights.sum()
        q = self.q
        if self.chance == "none":
            return np.zeros(shape)
        if self.chance == "uniform":
            return np.full(shape, total_w / q**2)
        if pi is None:
            raise ValueError(f"chance={self.chance!r} needs the category shares pi (uses_pi)")
        if self.chance == "fleiss":
            return np.einsum("...k,kl,...l->...", pi, self.weights, pi)
        if q < 2:
            return np.full(shape, np.nan)
        return total_w / (q * (q - 1)) * np.sum(pi * (1.0 - pi), axis=-1)

    def evaluate(self, sums: np.ndarray) -> Evaluation:
        n1, n2 = sums[..., 0], sums[..., 1]
        pa = _safe_divide(sums[..., 2], n2)
        pi = _safe_divide(sums[..., 3:], n1[..., None]) if self.uses_pi else None
        pe = self._pe(pi, n1.shape)
        if self.chance == "none":
            statistic, pe_one = pa.copy(), np.zeros(n1.shape, dtype=bool)
        else:
            statistic, pe_one = _chance_corrected(pa, pe)
        reason = np.zeros(n1.shape, dtype=np.int8)
        reason[pe_one] = 2
        if self.chance in ("gwet", "uniform") and self.q < 2:
            reason[...] = 3
        reason[~(n2 > 0)] = 1
        statistic = np.where(reason > 0, np.nan, statistic)
        return Evaluation(statistic, pa, pe, reason)

    def linearised(self, codes: np.ndarray, sums: np.ndarray, value: Evaluation) -> Linearised:
        counts = _one_hot_counts(codes, self.q)
        ri = counts.sum(axis=1)
        rated, multi = ri >= 1, ri >= 2
        n1, n2 = float(sums[0]), float(sums[1])
        pa, pe, kappa = float(value.pa), float(value.pe), float(value.statistic)
        pa_i = _unit_agreement(counts, ri, self.weights)
        if self.chance == "none":
            z = (n1 / n2) * pa_i
            return Linearised(z, pa, rated, rated, self.small_sample)
        kappa_i = (n1 / n2) * (pa_i - pe * multi) / (1.0 - pe)
        if self.chance == "uniform":
            return Linearised(kappa_i, kappa, rated, rated, self.small_sample)
        pi = sums[3:] / n1
        share = _safe_divide(counts, ri[:, None])
        if self.chance == "fleiss":
            pi_w = (self.weights @ pi + self.weights.T @ pi) / 2.0
            pe_i = share @ pi_w
        else:
            pe_i = self.weights.sum() / (self.q * (self.q - 1)) * (share @ (1.0 - pi))
        z = kappa_i - 2.0 * (1.0 - kappa) * (np.nan_to_num(pe_i) - pe) / (1.0 - pe)
        return Linearised(np.where(rated, z, 0.0), kappa, rated, rated, self.small_sample)


class KrippendorffAlpha:
    """Krippendorff's alpha over pairable values (Krippendorff 2011), in Gwet's (2014) form.

    ``weights`` gives nominal (identity), interval (quadratic), ratio (ratio) or any
    Gwet weights; ``ordinal=True`` uses Krippendorff's rank metric, whose distances
    depend on the pairable-value marginals (no analytic SE: bootstrap only).
    alpha = (pa - pe)/(1 - pe) with pa = (1 - 1/n..) pa' + 1/n.., which equals
    1 - (n.. - 1) D_o / D_e on the coincidence matrix.
    """

    reasons: tuple[str, ...] = (
        "",
        "no unit has two or more ratings (no pairable values)",
        "expected disagreement is 0 (all pairable values in one category), so alpha is 0/0",
    )

    exchangeable = True

    def __init__(self, weights: np.ndarray, *, ordinal: bool = False) -> None:
        self.weights = weights
        self.q = weights.shape[0]
        self.ordinal = ordinal
        self.width = 4 + self.q + (self.q * self.q if ordinal else 0)
        # The last column counts pairable values unweighted: Krippendorff's (n.. - 1)/n..
        # small-sample term is about the sample, not the population a unit weight stands for.
        self.unweighted: tuple[int, ...] = (self.width - 1,)

    def stats(self, codes: np.ndarray) -> np.ndarray:
        counts = _one_hot_counts(codes, self.q)
        ri = counts.sum(axis=1)
        multi = ri >= 2
        g = np.zeros_like(ri)
        g[multi] = _pair_agreement(counts[multi], self.weights) / (ri[multi] - 1.0)
        columns = [multi.astype(float)[:, None], (ri * multi)[:, None], g[:, None], counts * multi[:, None]]
        if self.ordinal:
            coincidence = np.zeros((codes.shape[0], self.q, self.q))
            cm = counts[multi]
            coincidence[multi] = (cm[:, :, None] * cm[:, None, :] - cm[:, :, None] * np.eye(self.q)) / (
                ri[multi] - 1.0
            )[:, None, None]
            columns.append(coincidence.reshape(codes.shape[0], self.q * self.q))
        columns.append((ri * multi)[:, None])
        return np.concatenate(columns, axis=1)

    def _ordinal_weights(self, marginals: np.ndarray) -> np.ndarray:
        """Agreement weights 1 - delta/max(delta) from Krippendorff's ordinal metric."""
        cum = np.cumsum(marginals, axis=-1)
        k = np.arange(self.q)
        lo, hi = np.minimum.outer(k, k), np.maximum.outer(k, k)
        delta = (cum[..., hi] - cum[..., lo] + (marginals[..., lo] - marginals[..., hi]) / 2.0) ** 2
        scale = delta.max(axis=(-2, -1), keepdims=True)
        return 1.0 - _safe_divide(delta, np.broadcast_to(scale, delta.shape))

    def evaluate(self, sums: np.ndarray) -> Evaluation:
        units, values = sums[..., 0], sums[..., 1]
        marginals = sums[..., 3 : 3 + self.q]
        pi = _safe_divide(marginals, values[..., None])
        if self.ordinal:
            weights = self._ordinal_weights(marginals)
            coincidence = sums[..., 3 + self.q : -1].reshape(sums.shape[:-1] + (self.q, self.q))
            agreeing = np.sum(weights * coincidence, axis=(-2, -1))
            pe = np.einsum("...k,...kl,...l->...", pi, weights, pi)
        else:
            agreeing = sums[..., 2]
            pe = np.einsum("...k,kl,...l->...", pi, self.weights, pi)
        pa_prime = _safe_divide(agreeing, values)
        epsilon = _safe_divide(np.ones_like(values), sums[..., -1])
        pa = (1.0 - epsilon) * pa_prime + epsilon
        statistic, pe_one = _chance_corrected(pa, pe)
        reason = np.zeros(units.shape, dtype=np.int8)
        reason[pe_one | np.isnan(pe)] = 2
        reason[~(units > 0)] = 1
        statistic = np.where(reason > 0, np.nan, statistic)
        return Evaluation(statistic, pa, pe, reason)

    def linearised(self, codes: np.ndarray, sums: np.ndarray, value: Evaluation) -> Linearised | None:
        if self.ordinal:
            return None
        counts = _one_hot_counts(codes, self.q)
        ri = counts.sum(axis=1)
        multi = ri >= 2
        units, values = float(sums[0]), float(sums[1])
        r_mean = values / units
        pa_prime = float(sums[2]) / values
        pe = float(value.pe)
        alpha_prime = (pa_prime - pe) / (1.0 - pe)
        g = np.zeros_like(ri)
        g[multi] = _pair_agreement(counts[multi], self.weights) / (ri[multi] - 1.0)
        pa_i = g / r_mean - pa_prime * (ri - r_mean) / r_mean
        pi = sums[3 : 3 + self.q] / values
        pi_w = (self.weights @ pi + self.weights.T @ pi) / 2.0
        pe_i = (counts @ pi_w) / r_mean - pe * (ri - r_mean) / r_mean
        z = (pa_i - pe) / (1.0 - pe) - 2.0 * (1.0 - alpha_prime) * (pe_i - pe) / (1.0 - pe)
        return Linearised(np.where(multi, z, 0.0), alpha_prime, multi, ri >= 1, True)


class CongerKappa:
    """Conger's (1980) kappa: chance agreement from each rater's own marginals (irrCAC conger.kappa.raw)."""

    reasons = (
        "",
        "no unit has two or more ratings",
        "chance agreement pe = 1 (every rating in one category), so the coefficient is 0/0",
        "a rater has no ratings, so its classification probabilities are undefined",
    )

    unweighted: tuple[int, ...] = ()
    exchangeable = False

    def __init__(self, weights: np.ndarray, n_raters: int) -> None:
        self.weights = weights
        self.q = weights.shape[0]
        self.r = n_raters
        self.width = 3 + n_raters * self.q
        self._pa = GwetFamily("none", weights)

    def stats(self, codes: np.ndarray) -> np.ndarray:
        base = self._pa.stats(codes)
        one_hot = (codes[:, :, None] == np.arange(self.q)).reshape(codes.shape[0], self.r * self.q).astype(float)
        return np.concatenate([base, one_hot], axis=1)

    def _marginals(self, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        classif = sums[..., 3:].reshape(sums.shape[:-1] + (self.r, self.q))
        rated = classif.sum(axis=-1)
        return _safe_divide(classif, rated[..., None]), rated

    def evaluate(self, sums: np.ndarray) -> Evaluation:
        n2 = sums[..., 1]
        pa = _safe_divide(sums[..., 2], n2)
        p, rated = self._marginals(sums)
        total = p.sum(axis=-2)
        pe = (
            np.einsum("...k,kl,...l->...", total, self.weights, total)
            - np.einsum("...gk,kl,...gl->...", p, self.weights, p)
        ) / (self.r * (self.r - 1))
        statistic, pe_one = _chance_corrected(pa, pe)
        reason = np.zeros(n2.shape, dtype=np.int8)
        reason[pe_one] = 2
        reason[np.any(~(rated > 0), axis=-1)] = 3
        reason[~(n2 > 0)] = 1
        statistic = np.where(reason > 0, np.nan, statistic)
        return Evaluation(statistic, pa, pe, reason)

    def linearised(self, codes: np.ndarray, sums: np.ndarray, value: Evaluation) -> Linearised:
        n1, n2 = float(sums[0]), float(sums[1])
        pe, kappa = float(value.pe), float(value.statistic)
        p, rated = self._marginals(sums)
        r = self.r
        counts = _one_hot_counts(codes, self.q)
        ri = counts.sum(axis=1)
        multi = ri >= 2
        pa_i = _unit_agreement(counts, ri, self.weights)
        delta = (codes[:, :, None] == np.arange(self.q)).astype(float)
        present = (codes >= 0).astype(float)
        centred = delta - (present - rated / n1)[:, :, None] * p[None, :, :]
        lam = np.einsum("igl,kl->igk", centred, self.weights) * (n1 / rated)[None, :, None]
        lam = np.einsum("igk,gk->ig", lam, r * p.mean(axis=0)[None, :] - p)
        pe_i = lam.sum(axis=1) / (r * (r - 1))
        z = (n1 / n2) * (pa_i - pe * multi) / (1.0 - pe) - 2.0 * (1.0 - kappa) * (pe_i - pe) / (1.0 - pe)
        rated_units = ri >= 1
        return Linearised(np.where(rated_units, z, 0.0), kappa, rated_units, rated_units, True)


class CohenKappa:
    """Cohen's (1960, 1968 weighted) kappa on units both raters labelled, with the FCE (1969) ASE."""

    reasons = (
        "",
        "no unit was rated by both raters",
        "chance agreement pe = 1 (both raters put every unit in one category), so kappa is 0/0",
    )

    unweighted: tuple[int, ...] = ()
    exchangeable = False

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights
        self.q = weights.shape[0]
        self.width = self.q * self.q

    def stats(self, codes: np.ndarray) -> np.ndarray:
        both = np.all(codes[:, :2] >= 0, axis=1)
        cell = np.where(both, codes[:, 0] * self.q + codes[:, 1], -1)
        return (cell[:, None] == np.arange(self.q * self.q)).astype(float)

    def table(self, sums: np.ndarray) -> np.ndarray:
        n = sums.sum(axis=-1)
        return _safe_divide(sums, n[..., None]).reshape(sums.shape[:-1] + (self.q, self.q))

    def evaluate(self, sums: np.ndarray) -> Evaluation:
        n = sums.sum(axis=-1)
        p = self.table(sums)
        pa = np.sum(self.weights * p, axis=(-2, -1))
        pe = np.einsum("...k,kl,...l->...", p.sum(axis=-1), self.weights, p.sum(axis=-2))
        statistic, pe_one = _chance_corrected(pa, pe)
        reason = np.zeros(n.shape, dtype=np.int8)
        reason[pe_one] = 2
        reason[~(n > 0)] = 1
        statistic = np.where(reason > 0, np.nan, statistic)
        return Evaluation(statistic, pa, pe, reason)

    def _row_col_means(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows, cols = p.sum(axis=1), p.sum(axis=0)
        return self.weights @ cols, self.weights.T @ rows

    def linearised(self, codes: np.ndarray, sums: np.ndarray, value: Evaluation) -> Linearised:
        p = self.table(sums)
        kappa, pe = float(value.statistic), float(value.pe)
        w_row, w_col = self._row_col_means(p)
        both = np.all(codes[:, :2] >= 0, axis=1)
        i, j = np.where(both, codes[:, 0], 0), np.where(both, codes[:, 1], 0)
        z = (self.weights[i, j] - (w_row[i] + w_col[j]) * (1.0 - kappa)) / (1.0 - pe)
        centre = float(np.sum(p * (self.weights - (w_row[:, None] + w_col[None, :]) * (1.0 - kappa))) / (1.0 - pe))
        return Linearised(np.where(both, z, 0.0), centre, both, both, False)

    def null_se(self, sums: np.ndarray, value: Evaluation) -> float:
        """FCE (1969) SE under H0: kappa = 0 (SAS 'ASE under H0'; statsmodels std_kappa0)."""
        n = float(sums.sum())
        p = self.table(sums)
        rows, cols = p.sum(axis=1), p.sum(axis=0)
        w_row, w_col = self._row_col_means(p)
        pe = float(value.pe)
        spread = np.sum(np.outer(rows, cols) * (self.weights - (w_row[:, None] + w_col[None, :])) ** 2) - pe**2
        return math.sqrt(max(spread, 0.0) / (n * (1.0 - pe) ** 2))


class LightKappa:
    """Light's (1971) kappa: the mean of the pairwise Cohen kappas of the raters.

    Units rated by every rater only (listwise deletion, as irr kappam.light), so every
    pair's kappa is computed on the same units. The statistics are the pairwise
    contingency cells side by side, so one bootstrap draw serves every pair. No
    analytic SE (the pairwise kappas are dependent): use the bootstrap.
    """

    reasons = (
        "",
        "no unit was rated by every rater",
        "a rater pair has chance agreement pe = 1 (both put every unit in one category), so its kappa is 0/0",
    )

    unweighted: tuple[int, ...] = ()
    exchangeable = False

    def __init__(self, weights: np.ndarray, n_raters: int) -> None:
        self.pair = CohenKappa(weights)
        self.pairs = [(a, b) for a in range(n_raters) for b in range(a + 1, n_raters)]
        self.width = len(self.pairs) * self.pair.width

    def stats(self, codes: np.ndarray) -> np.ndarray:
        complete = np.all(codes >= 0, axis=1)
        listwise = np.where(complete[:, None], codes, -1)
        return np.concatenate([self.pair.stats(listwise[:, [a, b]]) for a, b in self.pairs], axis=1)

    def evaluate(self, sums: np.ndarray) -> Evaluation:
        per_pair = sums.reshape(sums.shape[:-1] + (len(self.pairs), self.pair.width))
        value = self.pair.evaluate(per_pair)
        reason = np.max(value.reason, axis=-1)
        statistic = np.where(reason > 0, np.nan, np.mean(value.statistic, axis=-1))
        return Evaluation(statistic, np.mean(value.pa, axis=-1), np.mean(value.pe, axis=-1), reason)

    def linearised(self, codes: np.ndarray, sums: np.ndarray, value: Evaluation) -> None:
        return None
