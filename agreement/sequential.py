"""Anytime-valid evidence: confidence sequences and e-processes that stay valid however often one looks.

A fixed-n interval covers at one pre-set sample size; looked at after every label it
misses far more often than its level says. A confidence sequence (CS) covers the
truth at every sample size at once: P(for all t, theta in CS_t) >= 1 - alpha.
Here every CS is a **hedged betting CS** (Waudby-Smith & Ramdas, "Estimating means
of bounded random variables by betting", JRSS-B 2024, section 4.3): for each
candidate mean theta on a grid, a bettor wagers on the observations' deviation from
theta in both directions with predictable plug-in bets; by Ville's inequality her
wealth passes 1/alpha with probability at most alpha when theta is true, so the
candidates whose wealth ever passed 1/alpha are excluded for good (the running
intersection).

Written here rather than taken from ``confseq`` (which needs a C++ build with
scikit-build and ships its betting CS for one unclustered stream): accord's
observations are **clusters** (the turns of one trajectory are labelled together
and are not independent), so the bet is on the ratio estimand
theta = E[sum of scores in a cluster] / E[cluster size], with payoff
(S_c - theta n_c) / n_max, which is bounded in [-theta, 1 - theta] and has mean 0
exactly when theta is the per-unit mean. With every cluster of size 1 it is the
published betting CS; ``tests/agreement/test_sequential.py`` checks it against the
published predictable-mixture empirical-Bernstein CS (Theorem 2 of the same paper)
computed independently, and checks time-uniform coverage by simulation.

The grid has ``GRID`` points on [0, 1]; the reported bounds are widened by one grid
step so that a truth between two grid points is still covered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from samples import ConfidenceInterval, held_interval

GRID = 1001
"""Candidate means on [0, 1] (a step of 0.001)."""
TRUNCATION = 0.5
"""Largest bet as a share of what keeps wealth positive (WSR's c = 1/2)."""
_CHUNK_CELLS = 2_000_000
"""Looks x candidates held in memory at once."""


@dataclass(frozen=True, kw_only=True)
class ConfidenceSequence:
    """A running estimate with its anytime-valid interval after every look.

    ``statistic``, ``low`` and ``high`` hold one value per look (clusters in arrival
    order); ``n`` the units seen so far. ``confidence_interval()`` is the interval
    at the last look. An empty interval (every candidate excluded, which happens
    with probability at most alpha) is NaN with ``undefined_reason``.
    """

    statistic: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray
    level: float
    method: str = "hedged betting confidence sequence (Waudby-Smith & Ramdas 2024), clusters as observations"

    @property
    def looks(self) -> int:
        return int(self.statistic.size)

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The interval at the last look (``low[i]``/``high[i]`` hold the earlier ones)."""
        low, high = (float(self.low[-1]), float(self.high[-1])) if self.looks else (math.nan, math.nan)
        held = ConfidenceInterval(low=low, high=high, level=self.level, method=self.method)
        return held_interval(held, level, method, what="a confidence sequence")


def _predictable_bets(means: np.ndarray, alpha: float) -> np.ndarray:
    """WSR's predictable plug-in bet per look from the cluster means before it (their equation 26).

    A regularised running mean and variance (one pseudo-observation at mean 1/2,
    variance 1/4), so the first bet is defined; each side of the hedge bets at alpha / 2.
    """
    t = np.arange(1, means.size + 1, dtype=float)
    mean = (0.5 + np.cumsum(means)) / (t + 1.0)
    variance = (0.25 + np.cumsum((means - mean) ** 2)) / (t + 1.0)
    previous = np.concatenate([[0.25], variance[:-1]])
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (t * np.log1p(t) * previous))


def betting_cs(sums: np.ndarray, sizes: np.ndarray, *, alpha: float, bound: float | None = None,
               grid: int = GRID) -> ConfidenceSequence:
    """Hedged betting CS for a per-unit mean of scores in [0, 1], observed a cluster at a time.

    ``sums[c]`` is the sum of the cluster's scores, ``sizes[c]`` its number of units,
    in the order the clusters were completed. ``bound`` is an upper bound on cluster
    size fixed before the first look (the largest cluster the sample can hold; by
    default the largest seen, which is fixed when the sample is drawn before labelling).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r}: expected a level in (0, 1)")
    sums, sizes = np.asarray(sums, dtype=float), np.asarray(sizes, dtype=float)
    if sums.shape != sizes.shape or sums.ndim != 1:
        raise ValueError("sums and sizes must be 1-D arrays of one length")
    if sums.size and (np.any(sizes <= 0) or np.any(sums < 0) or np.any(sums > sizes)):
        raise ValueError("every cluster needs size > 0 and a score sum in [0, size]")
    level = 1.0 - alpha
    n = np.cumsum(sizes)
    if not sums.size:
        empty = np.array([], dtype=float)
        return ConfidenceSequence(statistic=empty, low=empty, high=empty, n=n, level=level)
    n_max = float(bound if bound is not None else sizes.max())
    z, w = sums / n_max, sizes / n_max
    bets = _predictable_bets(sums / sizes, alpha)
    theta = np.linspace(0.0, 1.0, grid)
    threshold = math.log(1.0 / alpha)
    excluded = np.zeros((sums.size, grid), dtype=bool)
    step = max(1, _CHUNK_CELLS // sums.size)
    for start in range(0, grid, step):
        th = theta[start:start + step]
        payoff = z[:, None] - th[None, :] * w[:, None]
        up = np.minimum(bets[:, None], TRUNCATION / np.maximum(th, 1e-12)[None, :])
        down = np.minimum(bets[:, None], TRUNCATION / np.maximum(1.0 - th, 1e-12)[None, :])
        excluded[:, start:start + step] = _excluded(payoff, up, down, threshold)
    low, high = _bounds(excluded, theta)
    return ConfidenceSequence(statistic=np.cumsum(sums) / n, low=low, high=high, n=n, level=level)


def _excluded(payoff: np.ndarray, up: np.ndarray, down: np.ndarray, threshold: float) -> np.ndarray:
    """Per look (row) and candidate (column): whether the hedged wealth, the mean of betting ``up`` and
    ``-down`` on ``payoff``, has reached ``threshold`` (log scale) by that look.

    The values of cumsum(log1p(up * payoff)), cumsum(log1p(-down * payoff)) and their logaddexp - log 2,
    computed in place in ``payoff`` and ``down`` (both overwritten; ``down`` has payoff's shape, ``up`` may
    broadcast): fresh looks x candidates arrays for each step cost about a third of a sequence's time.
    """
    log_down = np.multiply(np.negative(down, out=down), payoff, out=down)
    log_up = np.multiply(up, payoff, out=payoff)  # payoff is not needed after this
    log_up = np.cumsum(np.log1p(log_up, out=log_up), axis=0, out=log_up)
    log_down = np.cumsum(np.log1p(log_down, out=log_down), axis=0, out=log_down)
    wealth = np.subtract(np.logaddexp(log_up, log_down, out=log_up), math.log(2.0), out=log_up)
    return np.logical_or.accumulate(wealth >= threshold, axis=0)


def _bounds(excluded: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per look, the smallest and largest candidate never excluded, widened by one grid step (NaN: none left)."""
    kept = ~excluded
    any_kept = kept.any(axis=1)
    first = np.argmax(kept, axis=1)
    last = theta.size - 1 - np.argmax(kept[:, ::-1], axis=1)
    gap = theta[1] - theta[0]
    low = np.where(any_kept, np.clip(theta[first] - gap, theta[0], theta[-1]), np.nan)
    high = np.where(any_kept, np.clip(theta[last] + gap, theta[0], theta[-1]), np.nan)
    return low, high


def e_process(sums: np.ndarray, sizes: np.ndarray, *, shift: float, bound: float | None = None) -> np.ndarray:
    """Wealth of a one-sided bet against H0: the per-unit mean of d (in [-1, 1]) is at most -shift.

    ``sums[c]`` is the sum of d over cluster c. The payoff (sum(d) + shift n_c) / n_max
    has non-positive mean under H0, and the bet (GRAPA's plug-in, WSR section 5.6)
    is never negative and at most TRUNCATION / (1 - shift), so the wealth is a
    non-negative supermartingale: its value at any stopping time is an e-value.
    """
    if not 0 <= shift < 1:
        raise ValueError(f"shift={shift!r}: expected a margin in [0, 1)")
    sums, sizes = np.asarray(sums, dtype=float), np.asarray(sizes, dtype=float)
    if not sums.size:
        return np.array([], dtype=float)
    n_max = float(bound if bound is not None else sizes.max())
    payoff = (sums + shift * sizes) / n_max
    t = np.arange(1, payoff.size + 1, dtype=float)
    mean = np.concatenate([[0.0], np.cumsum(payoff)[:-1]]) / t
    square = (0.25 + np.concatenate([[0.0], np.cumsum(payoff ** 2)[:-1]])) / t
    bet = np.clip(mean / np.maximum(square, 1e-12), 0.0, TRUNCATION / (1.0 - shift))
    return np.exp(np.cumsum(np.log1p(bet * payoff)))


def e_bh(e_values: np.ndarray, q: float) -> np.ndarray:
    """e-BH (Wang & Ramdas 2022): reject the k largest e-values, k the largest with e_(k) >= m / (q k).

    Controls the false discovery rate at ``q`` under any dependence between the e-values.
    """
    e = np.asarray(e_values, dtype=float)
    m = e.size
    if not m:
        return np.zeros(0, dtype=bool)
    order = np.argsort(-e, kind="stable")
    k = np.arange(1, m + 1)
    passing = np.nonzero(e[order] >= m / (q * k))[0]
    rejected = np.zeros(m, dtype=bool)
    if passing.size:
        rejected[order[: passing[-1] + 1]] = True
    return rejected


def labels_to_decision(cs: ConfidenceSequence, floor: float, *, further: int = 0) -> int | None:
    """Further units until the CS's lower bound would clear ``floor``, extrapolated from the last look.

    The half-width of a betting CS shrinks like sqrt(log(n) / n); from the current
    estimate and half-width, the smallest n at which estimate - half-width >= floor.
    None when the estimate is not above the floor (more labels are not expected to help).
    """
    if not cs.looks:
        return None
    estimate, low = float(cs.statistic[-1]), float(cs.low[-1])
    n = float(cs.n[-1])
    if not math.isfinite(low) or estimate <= floor:
        return None
    if low >= floor:
        return further
    scale = (estimate - low) / math.sqrt(math.log(max(n, 3.0)) / max(n, 1.0))
    grid = np.unique(np.round(np.geomspace(max(n, 1.0), max(n, 1.0) * 1e4, 400)))
    half = scale * np.sqrt(np.log(np.maximum(grid, 3.0)) / grid)
    reached = np.nonzero(estimate - half >= floor)[0]
    return int(grid[reached[0]] - n) if reached.size else None


CHANCE_CORRECTED = ("cohen_kappa", "gwet_ac1")


def chance_corrected_cs(judge: np.ndarray, reference: np.ndarray, coefficient: str, *, alpha: float,
                        grid: int = 2 * GRID - 1) -> tuple[ConfidenceSequence, np.ndarray]:
    """Hedged betting CS for Cohen's kappa or Gwet's AC1 of two binary raters over independent units.

    Kappa and AC1 are (p_o - p_e) / (1 - p_e) with p_e a product of marginal shares,
    which no single unit estimates without bias; two independent units a and b do:
    for kappa P(J_a = R_b) = p_J p_R + (1 - p_J)(1 - p_R) = p_e; for AC1
    p_e = 2 pi (1 - pi) = 1 - pi^2 - (1 - pi)^2 with pi the pooled positive share, whose
    square is the mean of J_a J_b, J_a R_b, R_a J_b and R_a R_b. So consecutive
    units are paired, and per pair A = the pair's mean agreement, B = its chance
    term. For a candidate k, h(k) = A - k - (1 - k) B has mean
    p_o - p_e - k (1 - p_e), zero exactly at the true coefficient and decreasing in
    k; h lies in [-1, 1 - k], and a hedged bettor tests mean zero at every k of a grid
    on [-1, 1] as ``betting_cs`` does. Returns the sequence per pair and, per pair,
    the index of its second unit.
    """
    if coefficient not in CHANCE_CORRECTED:
        raise ValueError(f"coefficient={coefficient!r}: expected one of {CHANCE_CORRECTED}")
    j = np.asarray(judge, dtype=float)
    r = np.asarray(reference, dtype=float)
    pairs = j.size // 2
    ja, jb, ra, rb = j[0:2 * pairs:2], j[1:2 * pairs:2], r[0:2 * pairs:2], r[1:2 * pairs:2]
    agree = ((ja == ra).astype(float) + (jb == rb)) / 2
    if coefficient == "cohen_kappa":
        chance = ((ja == rb).astype(float) + (jb == ra)) / 2
    else:
        # p_e = 2 pi (1 - pi) = 1 - pi^2 - (1 - pi)^2, each square from the pair's cross products.
        chance = 1.0 - ((ja + ra) * (jb + rb) + (2 - ja - ra) * (2 - jb - rb)) / 4
    second = np.arange(1, 2 * pairs, 2)
    level = 1.0 - alpha
    if not pairs:
        empty = np.array([], dtype=float)
        return ConfidenceSequence(statistic=empty, low=empty, high=empty, n=empty, level=level,
                                  method=_PAIRED_METHOD), second
    u, v = agree - chance, 1.0 - chance
    bets = _predictable_bets((u + 1.0) / 2.0, alpha)
    theta = np.linspace(-1.0, 1.0, grid)
    threshold = math.log(1.0 / alpha)
    excluded = np.zeros((pairs, grid), dtype=bool)
    step = max(1, _CHUNK_CELLS // pairs)
    for start in range(0, grid, step):
        th = theta[start:start + step]
        payoff = u[:, None] - th[None, :] * v[:, None]  # in [-1, 1 - k]
        up = np.minimum(bets[:, None], TRUNCATION)
        down = np.minimum(bets[:, None], TRUNCATION / np.maximum(1.0 - th, 1e-12)[None, :])
        excluded[:, start:start + step] = _excluded(payoff, up, down, threshold)
    low, high = _bounds(excluded, theta)
    po, pe = np.cumsum(agree), np.cumsum(chance)
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = np.where(pe < np.arange(1, pairs + 1), (po - pe) / (np.arange(1, pairs + 1) - pe), np.nan)
    return ConfidenceSequence(statistic=estimate, low=low, high=high, n=second + 1.0, level=level,
                              method=_PAIRED_METHOD), second


_PAIRED_METHOD = ("hedged betting confidence sequence on consecutive pairs of units (the pair's cross terms estimate "
                  "chance agreement without bias)")
