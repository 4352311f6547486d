"""Planning a validation: a policy's operating characteristic and the units it needs.

A design is what a study plans before any label exists: the positive rate, the
judge's true agreement with the human majority (on the policy's first agreement
coefficient), the annotators' expected pairwise raw agreement, how many annotators
label every unit, and how many turns a trajectory contributes. Under a latent-class
model (a latent label per unit; each annotator and the judge copy it with a fixed
accuracy, errors independent; a trajectory's positive rate ~ Beta with intra-
trajectory correlation ``icc``) the planner simulates whole studies, vectorised over
studies, units and judge accuracies, and applies the policy's criteria as the gate
does: a lower bound of the t interval on the clustered linearised SE (the coverage
study, benchmarks/coverage.md, found it covering like the bootstrap the gate reads),
``agreement.intervals.MIN_UNITS`` included; the unscored-share criterion exactly
(binomial). Each criterion says how it is planned (``plan()``: a check on the
``SimulatedStudies``, built-in or a third party's alike); criteria whose evidence the
design does not describe (the alt-test, the family contrast, units per stratum) give the
reason instead and are listed as not planned: the policy's P(ACCEPT) is then that of the
planned criteria.

Above ``SIMULATED_UNITS`` units a study is not simulated at its own size: its
criteria read an estimate and its clustered SE, whose deviation from the truth and SE
both shrink as 1/sqrt(n) once the CLT holds (hundreds of trajectories). The planner
simulates the design once at ``SIMULATED_UNITS`` and carries each simulated study to
n units by that law: low_n = truth + (estimate - truth) r - t_n SE r with r =
sqrt(SIMULATED_UNITS / n), the truth analytic (the latent-class model's population
value), t_n on the rescaled number of clusters. A gate on 1e5 units then costs what one
on 2,000 does, and up to 2,000 units every number is the full simulation's.

The OC curve is P(ACCEPT) against the judge's true agreement at a number of units;
the units needed are the smallest number whose P(ACCEPT) at the design's agreement
reaches the target power.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agreement.bootstrap import DEFAULT_SEED
from agreement.intervals import MIN_UNITS, RANGE
from samples import InputError

MAX_UNITS = 5_000
SIMULATED_UNITS = 2_000
"""Largest study simulated at its own size; larger ones are this one carried by the 1/sqrt(n) law."""


@dataclass(frozen=True, kw_only=True)
class Design:
    """The assumptions of a planned validation (validated where built)."""

    positive_rate: float
    judge_agreement: float
    """True judge-vs-majority value of ``coefficient`` the study hopes to show."""
    human_agreement: float
    """Expected raw (percent) agreement between two annotators."""
    annotators: int
    turns_per_trajectory: float
    coefficient: str = "gwet_ac1"
    icc: float = 0.2
    unscored_rate: float = 0.0

    def __post_init__(self) -> None:
        checks = [
            ("positive_rate", 0 < self.positive_rate < 1, "a rate strictly between 0 and 1"),
            ("judge_agreement", -1 < self.judge_agreement < 1, "a coefficient value in (-1, 1)"),
            ("human_agreement", 0.5 < self.human_agreement <= 1,
             "a raw agreement in (0.5, 1] (annotators better than coin flips)"),
            ("annotators", isinstance(self.annotators, int) and 1 <= self.annotators <= 50, "an integer in [1, 50]"),
            ("turns_per_trajectory", self.turns_per_trajectory >= 1, "a mean number of turns >= 1"),
            ("coefficient", self.coefficient in _COEFFICIENTS, f"one of {sorted(_COEFFICIENTS)}"),
            ("icc", 0 <= self.icc < 1, "an intra-trajectory correlation in [0, 1)"),
            ("unscored_rate", 0 <= self.unscored_rate < 1, "a rate in [0, 1)"),
        ]
        for name, ok, allowed in checks:
            if not ok:
                raise InputError(f"{name}={getattr(self, name)!r}: expected {allowed}")

    @property
    def human_accuracy(self) -> float:
        """Annotator accuracy a with a^2 + (1 - a)^2 = human_agreement."""
        return (1 + math.sqrt(2 * self.human_agreement - 1)) / 2

    @property
    def majority_accuracy(self) -> float:
        """P(majority = latent label | no tie) for ``annotators`` independent annotators."""
        a, m = self.human_accuracy, self.annotators
        right = sum(math.comb(m, k) * a**k * (1 - a) ** (m - k) for k in range(m + 1) if 2 * k > m)
        wrong = sum(math.comb(m, k) * a**k * (1 - a) ** (m - k) for k in range(m + 1) if 2 * k < m)
        return right / (right + wrong)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("positive_rate", "judge_agreement", "human_agreement", "annotators",
                                              "turns_per_trajectory", "coefficient", "icc", "unscored_rate")}


def _cells_statistic(name: str, p11, p10, p01, p00):
    """A two-rater coefficient from (unnormalised) cell shares, elementwise."""
    total = p11 + p10 + p01 + p00
    with np.errstate(invalid="ignore", divide="ignore"):
        p11, p10, p01, p00 = p11 / total, p10 / total, p01 / total, p00 / total
        po = p11 + p00
        if name == "percent_agreement":
            return po
        a1, b1 = p11 + p10, p11 + p01
        if name == "cohen_kappa":
            pe = a1 * b1 + (1 - a1) * (1 - b1)
        else:  # gwet_ac1, q = 2
            pi = (a1 + b1) / 2
            pe = 2 * pi * (1 - pi)
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


_COEFFICIENTS = ("percent_agreement", "cohen_kappa", "gwet_ac1")


def _true_cells(judge_accuracy: Any, reference_accuracy: float, rate: float) -> tuple[Any, Any, Any, Any]:
    """Population (judge, reference) cell shares of two raters copying the latent label (independent errors)."""
    a, r = np.asarray(judge_accuracy, dtype=float), reference_accuracy
    p11 = rate * a * r + (1 - rate) * (1 - a) * (1 - r)
    p10 = rate * a * (1 - r) + (1 - rate) * (1 - a) * r
    p01 = rate * (1 - a) * r + (1 - rate) * a * (1 - r)
    p00 = rate * (1 - a) * (1 - r) + (1 - rate) * a * r
    return p11, p10, p01, p00


def true_agreement(coefficient: str, judge_accuracy: Any, reference_accuracy: float, rate: float) -> Any:
    """Population coefficient of two raters copying the latent label (independent errors)."""
    return _cells_statistic(coefficient, *_true_cells(judge_accuracy, reference_accuracy, rate))


def _over_constant(coefficient: str, answer_positive: bool) -> Any:
    """The judge's ``coefficient`` minus that of always answering one category, as a function of the
    (judge, reference) cells: the constant's cells put the reference's shares in one row."""

    def statistic(p11, p10, p01, p00):
        positive, negative = p11 + p01, p10 + p00
        zero = np.zeros_like(positive)
        constant = (positive, negative, zero, zero) if answer_positive else (zero, zero, positive, negative)
        return _cells_statistic(coefficient, p11, p10, p01, p00) - _cells_statistic(coefficient, *constant)

    return statistic


def judge_accuracy_for(design: Design, agreement: float) -> float:
    """The judge accuracy at which its true agreement with the majority equals ``agreement`` (bisection)."""
    q, rate = design.majority_accuracy, design.positive_rate
    lo, hi = 0.5, 1.0
    top = float(true_agreement(design.coefficient, 1.0, q, rate))
    if agreement > top + 1e-12:
        raise InputError(f"judge agreement {agreement}: with annotators agreeing {design.human_agreement} the human "
                         f"majority is right {q:.3f} of the time, so even a perfect judge reaches only {top:.3f} "
                         f"({design.coefficient})")
    for _ in range(60):
        mid = (lo + hi) / 2
        if float(true_agreement(design.coefficient, mid, q, rate)) < agreement:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


PlanCheck = Callable[["SimulatedStudies"], np.ndarray]
"""A criterion on the planner's simulated studies: whether each study passes, (judge accuracies, studies) bool."""


@dataclass(frozen=True, kw_only=True)
class PlannedCriterion:
    """A policy's criterion as the planner sees it: its check on simulated studies, or why it has none."""

    name: str
    type: str
    check: PlanCheck | None
    """None: not planned (``reason`` says why)."""
    reason: str | None = None
    bound: Any = None
    """The criterion's ``agreement.criteria.AgreementBound`` (a floor on the judge's agreement), or None: the OC
    plot draws the floors on its coefficient, and the curve starts 0.2 below the lowest."""

    @property
    def planned(self) -> bool:
        return self.check is not None


def planned_criteria(policy: Any) -> list[PlannedCriterion]:
    """Each criterion of the policy through its own ``plan()`` (``agreement.criteria.Criterion``): a check on the
    simulated studies, or the reason it is not planned."""
    out = []
    for c in policy.criteria:
        check = c.plan()
        planned = not isinstance(check, str)
        out.append(PlannedCriterion(name=c.name, type=c.type_name, check=check if planned else None,
                                    reason=None if planned else check, bound=c.agreement_bound))
    return out


def floors(criteria: list[PlannedCriterion], coefficient: str) -> list[float]:
    """The lower bounds the planned criteria put on the judge's ``coefficient``."""
    return [c.bound.bound for c in criteria if c.planned and c.bound is not None and c.bound.coefficient == coefficient]


def _t_quantiles(df: np.ndarray, p: float) -> np.ndarray:
    from scipy.stats import t

    return np.where(df >= 1, t.ppf(p, np.maximum(df, 1)), np.nan)


@dataclass(frozen=True, kw_only=True)
class _Scale:
    """Carries statistics of ``simulated``-unit studies to ``n`` units (the identity when they are equal)."""

    n: int
    simulated: int
    judge_accuracy: np.ndarray
    design: Design

    @property
    def ratio(self) -> float:
        return math.sqrt(self.simulated / self.n)

    def units(self, counts: np.ndarray) -> np.ndarray:
        return counts * (self.n / self.simulated)

    def clusters(self, counts: np.ndarray) -> np.ndarray:
        """Trajectories of an n-unit study: the simulated count scaled (identity at the simulated size)."""
        return counts if self.n == self.simulated else np.floor(counts * (self.n / self.simulated))

    def lower_bound(self, value: np.ndarray, se: np.ndarray, tq: np.ndarray, truth: np.ndarray, *,
                    bounds: tuple[float, float] | None = None, at_edge: np.ndarray | None = None) -> np.ndarray:
        """value - tq se at the simulated size; above it, the deviation from the truth and the SE shrunk by
        ``ratio`` (truth: (X,), the population value at each judge accuracy). With ``bounds`` (the
        coefficient's range, ``agreement.intervals.RANGE``) the gate's interval on the logit scale of that
        range (``agreement.intervals.bounded_t``); ``at_edge``: its lower bound, as a share of the range,
        where the estimate is at the top of the range (Clopper-Pearson on the clusters)."""
        centre, spread = (value, se) if self.n == self.simulated else (
            truth[:, None] + (value - truth[:, None]) * self.ratio, se * self.ratio)
        if bounds is None:
            return centre - tq * spread
        a, b = bounds
        share = (centre - a) / (b - a)
        inside = (share > 0) & (share < 1)
        s = np.where(inside, share, 0.5)
        with np.errstate(over="ignore"):
            low = a + (b - a) / (1 + np.exp(tq * spread / ((b - a) * s * (1 - s)) - np.log(s / (1 - s))))
        return np.where(inside, low, np.where(share >= 1, a + (b - a) * at_edge, a) if at_edge is not None else np.nan)

    def ceiling_truth(self) -> np.ndarray:
        """E[judge's agreement with an annotator - annotators' pairwise agreement] under the model."""
        a, h = self.judge_accuracy, self.design.human_accuracy
        return a * h + (1 - a) * (1 - h) - (h * h + (1 - h) * (1 - h))


class Simulator:
    """Simulated studies of one design; ``pass_rates`` applies the planned criteria."""

    def __init__(self, design: Design, criteria: list[PlannedCriterion], *, level: float, studies: int = 600,
                 seed: int = DEFAULT_SEED, simulated_units: int = SIMULATED_UNITS) -> None:
        self.design, self.level, self.studies, self.seed = design, level, studies, seed
        self.simulated_units = simulated_units
        self.criteria = [c for c in criteria if c.planned]
        self.z = (1 - level) / 2

    def _studies(self, n: int, rng: np.random.Generator):
        d, S = self.design, self.studies
        sizes = 1 + rng.poisson(d.turns_per_trajectory - 1, size=(S, n))
        ends = np.cumsum(sizes, axis=1)
        starts = np.zeros((S, n), dtype=bool)
        starts[:, 0] = True
        inside = ends < n
        starts[np.nonzero(inside)[0], ends[inside]] = True
        cluster = np.cumsum(starts, axis=1) - 1 + (np.arange(S) * n)[:, None]  # global ids, (S, n)
        if d.icc > 0:
            kappa = 1 / d.icc - 1
            p = rng.beta(kappa * d.positive_rate, kappa * (1 - d.positive_rate), size=S * n)[cluster]
        else:
            p = np.full((S, n), d.positive_rate)
        latent = rng.random((S, n)) < p
        humans = np.where(rng.random((d.annotators, S, n)) < d.human_accuracy, latent, ~latent)
        return cluster, latent, humans, rng.random((S, n))

    def _seeded(self, size: int) -> tuple[np.ndarray, ...]:
        """``_studies(size)`` under the seed, read-only. They depend on the design's human side alone, not on
        the judge, so the OC curve's chunks and every judge of a gate share one copy (drawn per chunk and
        judge they were a tenth of ``accord gate``'s curve at 1e5 units)."""
        d = self.design
        key = (d.turns_per_trajectory, d.icc, d.positive_rate, d.annotators, d.human_accuracy, self.studies, size,
               self.seed)
        if key not in _SEEDED:
            arrays = self._studies(size, np.random.default_rng([self.seed, size]))
            for array in arrays:
                array.setflags(write=False)
            if len(_SEEDED) >= 2:  # (S, n) arrays of a few MB each: the last two designs are kept
                del _SEEDED[next(iter(_SEEDED))]
            _SEEDED[key] = arrays
        return _SEEDED[key]

    def pass_rates(self, n: int, judge_accuracies: np.ndarray) -> dict[str, np.ndarray]:
        """P(pass) of each planned criterion and of all of them, at each judge accuracy: {name: (X,)}.

        Studies above ``simulated_units`` units are the ``simulated_units``-unit studies carried to
        ``n`` units (module docstring)."""
        size = min(n, self.simulated_units)
        studies = SimulatedStudies(self, n, size, np.asarray(judge_accuracies, dtype=float), *self._seeded(size))
        passes: dict[str, np.ndarray] = {}
        every = np.ones((studies.judge_accuracy.size, self.studies), dtype=bool)
        for c in self.criteria:
            assert c.check is not None  # only planned criteria are kept
            ok = np.broadcast_to(c.check(studies), every.shape)
            passes[c.name] = ok.mean(axis=1)
            every &= ok
        passes["policy"] = every.mean(axis=1)
        return passes


_SEEDED: dict[tuple, tuple[np.ndarray, ...]] = {}


class SimulatedStudies:
    """One batch of simulated studies of a design at every judge accuracy asked: what a criterion's ``plan()``
    check reads (the gate's tests on the planner's model). Arrays are (X judge accuracies, S studies, n units);
    every check returns (X, S) bools. Studies of ``simulated`` units stand for ``n``-unit ones (``_Scale``)."""

    def __init__(self, simulator: Simulator, n: int, simulated: int, judge_accuracy: np.ndarray, cluster: np.ndarray,
                 latent: np.ndarray, humans: np.ndarray, u_judge: np.ndarray) -> None:
        d = simulator.design
        self.design, self.studies, self.seed, self.z = d, simulator.studies, simulator.seed, simulator.z
        self.n, self.size, self.judge_accuracy, self.humans = n, simulated, judge_accuracy, humans
        self.scale = _Scale(n=n, simulated=simulated, judge_accuracy=judge_accuracy, design=d)
        acc = judge_accuracy
        self.judge = np.where(u_judge[None] < acc[:, None, None], latent[None], ~latent[None])  # (X, S, n)
        votes = humans.sum(axis=0)
        m = d.annotators
        untied = 2 * votes != m  # (S, n): ties excluded (even m)
        keep = untied[None].repeat(acc.size, axis=0)
        majority = (2 * votes > m)[None]
        self.flat = (np.arange(acc.size)[:, None, None] * self.studies * simulated + cluster[None]).ravel()
        # Kept units per cluster slot depend on the humans alone: counted once, the same for every judge accuracy.
        slots = np.bincount(cluster.ravel()[untied.ravel()], minlength=untied.size).astype(float).reshape(untied.shape)
        self.slot_count = np.broadcast_to(slots, keep.shape)  # (X, S, n), read-only
        self.clusters = np.repeat((slots > 0).sum(axis=1).astype(float)[None], acc.size, axis=0)  # (X, S)
        self.kept = np.repeat(untied.sum(axis=1).astype(float)[None], acc.size, axis=0)
        self.tq = _t_quantiles(self.scale.clusters(self.clusters) - 1, 1 - self.z)
        self.cell_sums = self._cells_counted(self.judge, majority, keep)  # each (X, S, n)

    def _clustered(self, values: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Per-cluster sums of (X, S, n) values over kept units: (X, S, n) indexed by the study's cluster slot
        (``flat``: each unit's global cluster slot, computed once per batch)."""
        sums = np.bincount(self.flat, weights=(values * keep).ravel(), minlength=values.size)
        return sums.reshape(values.shape)

    def _counted(self, mask: np.ndarray) -> np.ndarray:
        """``_clustered`` of a 0/1 mask: the same sums (whole numbers, exact in floats), counted without
        weights (the weighted sums over (X, S, n) took a tenth of ``accord gate`` at 1e5 units)."""
        return np.bincount(self.flat[mask.ravel()], minlength=mask.size).astype(float).reshape(mask.shape)

    def _cells_counted(self, judge: np.ndarray, majority: np.ndarray, keep: np.ndarray) -> list[np.ndarray]:
        """``_counted`` of the four kept judge x majority cells (judge & majority, judge & ~majority,
        ~judge & majority, ~judge & ~majority), in one count over the kept units: unit -> cell 2 (1 - judge)
        + (1 - majority), slot cell * X S n + slot (four masked counts took a tenth of ``accord gate`` at
        1e5 units). Whole numbers, kept as integers (no float copy of the four (X, S, n) arrays)."""
        kept = keep.ravel()
        cell = (2 * ~judge + ~majority).ravel()[kept]
        counts = np.bincount(cell * keep.size + self.flat[kept], minlength=4 * keep.size)
        return list(counts.reshape((4, *keep.shape)))

    def floor_passes(self, coefficient: str, bound: float, *, strict: bool) -> np.ndarray:
        """The lower bound of the judge-vs-majority ``coefficient`` at or above ``bound`` (``strict``: above it),
        on at least the coefficient's minimum units (``agreement.intervals.MIN_UNITS``), as the gate reads it."""

        def statistic(*cells: np.ndarray) -> np.ndarray:
            return _cells_statistic(coefficient, *cells)

        low = self.lower_bound(statistic, bounds=RANGE.get(coefficient))
        minimum = MIN_UNITS.get(coefficient, 0)
        clears = low > bound if strict else low >= bound
        return np.isfinite(low) & clears & (self.scale.units(self.kept) >= minimum)

    def beats_constants(self, coefficients: tuple[str, ...], bound: float) -> np.ndarray:
        """Every (coefficient, constant answer) difference's lower bound above ``bound``, on the paired
        comparison's minimum size (the gate's ``beats_baselines``: the majority-class rule is one of the
        two constants)."""
        ok = self.scale.units(self.kept) >= MIN_UNITS.get("human_ceiling", 0)
        for coefficient in coefficients:
            for answer_positive in (False, True):
                low = self.lower_bound(_over_constant(coefficient, answer_positive))
                ok = ok & np.isfinite(low) & (low > bound)
        return ok

    def lower_bound(self, statistic: Callable[..., np.ndarray], *, bounds: tuple[float, float] | None = None
                    ) -> np.ndarray:
        """Lower bound of the t interval on the clustered linearised SE of ``statistic`` (a function of the
        four judge x majority cell shares), per judge accuracy and study; on the logit scale of ``bounds``."""
        cell_sums, kept, clusters, scale = self.cell_sums, self.kept, self.clusters, self.scale
        totals = [s.sum(axis=2) for s in cell_sums]  # (X, S)
        value = statistic(*totals)
        # Linearisation: gradient of the statistic in the cell shares (central differences).
        shares = [t / np.maximum(kept, 1) for t in totals]
        grads = []
        for i in range(4):
            step = 1e-6
            up = [s + (step if j == i else 0.0) for j, s in enumerate(shares)]
            down = [s - (step if j == i else 0.0) for j, s in enumerate(shares)]
            grads.append((statistic(*up) - statistic(*down)) / (2 * step))
        # Sum over slots of the influence sum_i g_i (cs_i - slot_count s_i), squared: the quadratic form g' M g
        # in the cells' Gram matrix M (``_cell_gram``), whose slot products every criterion's bound shares.
        gram = self._cell_gram(shares)
        squares = np.maximum(sum(grads[i] * grads[j] * gram[i][j] for i in range(4) for j in range(4)), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = clusters / (clusters - 1) * squares / kept**2
            d = self.design
            truth = statistic(*_true_cells(scale.judge_accuracy, d.majority_accuracy, d.positive_rate))
            at_edge = self.z ** (1 / scale.clusters(clusters)) if bounds is not None else None
            return scale.lower_bound(value, np.sqrt(var), self.tq, truth, bounds=bounds, at_edge=at_edge)

    @functools.cached_property
    def _cell_products(self) -> list[list[np.ndarray]]:
        """P_ij = sum over slots of cs_i cs_j, (X, S) each: whole numbers, exact. They depend only on the
        simulated studies, so one pass over the (X, S, n) slots serves the bound of every criterion (the
        influence summed per criterion took a fifth of ``accord gate`` at 1e5 units)."""
        cs = self.cell_sums
        products = [[np.empty(0)] * 4 for _ in range(4)]
        for i in range(4):
            for j in range(i, 4):
                products[i][j] = products[j][i] = np.einsum("xsn,xsn->xs", cs[i], cs[j])
        return products

    def _cell_gram(self, shares: list[np.ndarray]) -> list[list[np.ndarray]]:
        """M_ij = sum over slots of (cs_i - slot_count s_i)(cs_j - slot_count s_j), (X, S) each, from the slot
        products P (``_cell_products``): the cells partition the kept units, so slot_count = sum_i cs_i and
        M_ij = P_ij - s_j sum_k P_ik - s_i sum_k P_jk + s_i s_j sum_kl P_kl."""
        products = self._cell_products
        row = [sum(products[i]) for i in range(4)]
        total = sum(row)
        return [[products[i][j] - shares[j] * row[i] - shares[i] * row[j] + shares[i] * shares[j] * total
                 for j in range(4)] for i in range(4)]

    def ceiling_passes(self, margin: float) -> np.ndarray:
        """Non-inferiority of the judge-annotator minus annotator-annotator percent agreement: lower bound at or
        above -``margin``, on the human ceiling's minimum units (False everywhere under two annotators)."""
        judge, humans, n, scale = self.judge, self.humans, self.size, self.scale
        m = humans.shape[0]
        if m < 2:
            return np.zeros(judge.shape[:2], dtype=bool)
        with_judge = sum((judge == h[None]) for h in humans) / m  # (X, S, n)
        pairs = [(i, k) for i in range(m) for k in range(i + 1, m)]
        among = sum((humans[i] == humans[k]) for i, k in pairs) / len(pairs)
        diff = with_judge - among[None]
        everyone = np.ones_like(diff, dtype=bool)
        value = diff.mean(axis=2)
        per_cluster = self._clustered(diff - value[..., None], everyone)
        units_per_cluster = self._counted(everyone)
        all_clusters = (units_per_cluster > 0).sum(axis=2).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = all_clusters / (all_clusters - 1) * (per_cluster**2).sum(axis=2) / n**2
        tq_all = _t_quantiles(scale.clusters(all_clusters) - 1, 1 - self.z)
        low = scale.lower_bound(value, np.sqrt(var), tq_all, scale.ceiling_truth())
        return np.isfinite(low) & (low >= -margin) & (scale.n >= MIN_UNITS.get("human_ceiling", 0))

    def unscored_passes(self, cap: float, *, point: bool) -> np.ndarray:
        """The unscored share (``point``) or its upper Clopper-Pearson bound below ``cap``: Bernoulli draws with
        the exact binomial P(pass) (unscored rows independent of the labels), (S,) broadcast over accuracies."""
        probability = _unscored_pass_probability(self.n, self.z, point, cap, self.design.unscored_rate)
        rng = np.random.default_rng([self.seed, self.n, 3])
        return rng.random(self.studies) < probability


@functools.lru_cache(maxsize=64)
def _unscored_pass_probability(n: int, z: float, point: bool, threshold: float, rate: float) -> float:
    """P(an unscored-share criterion passes) with ``n`` units: one value per design, cached because an
    OC curve asks for it once per chunk of judge accuracies (n + 1 beta quantiles each time: an eighth
    of ``accord gate`` at 1e5 units)."""
    from scipy.stats import beta, binom

    k = np.arange(n + 1)
    if point:
        ok = k / n < threshold
    else:
        upper = np.where(k < n, beta.ppf(1 - z, k + 1, np.maximum(n - k, 1)), 1.0)
        ok = upper < threshold
    return float(binom.pmf(k, n, rate) @ ok)


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What ``accord plan`` prints."""

    policy: str
    design: Design
    level: float
    power: float
    studies: int
    units_needed: dict[str, int | None]
    """Criterion name (and 'policy') -> smallest units with P(pass) >= power; None: not reached by MAX_UNITS."""
    not_planned: dict[str, str]
    oc_units: int
    oc_agreement: tuple[float, ...]
    oc_accept: dict[str, tuple[float, ...]]
    floors: tuple[float, ...] = ()
    """Floors of the agreement criteria on the OC curve's coefficient (dashed lines on the plot)."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "design": self.design.to_dict(), "level": self.level, "power": self.power,
                "studies_per_point": self.studies, "units_needed": self.units_needed,
                "not_planned": self.not_planned,
                "oc_curve": {"units": self.oc_units, "coefficient": self.design.coefficient,
                             "true_agreement": list(self.oc_agreement),
                             "p_accept": {k: list(v) for k, v in self.oc_accept.items()}, "floors": list(self.floors)},
                "notes": list(self.notes)}


def _first_reaching(simulator: Simulator, accuracy: float, power: float) -> dict[str, int | None]:
    """Smallest n with P(pass) >= power per criterion: a doubling search, then bisection."""
    names = [c.name for c in simulator.criteria] + ["policy"]
    cache: dict[int, dict[str, float]] = {}

    def rates(n: int) -> dict[str, float]:
        if n not in cache:
            cache[n] = {k: float(v[0]) for k, v in simulator.pass_rates(n, np.array([accuracy])).items()}
        return cache[n]

    out: dict[str, int | None] = {}
    for name in names:
        lo, hi = 9, 10
        while rates(hi)[name] < power:
            lo, hi = hi, hi * 2
            if hi > MAX_UNITS:
                break
        if hi > MAX_UNITS:
            out[name] = None
            continue
        while hi - lo > max(1, lo // 50):
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if rates(mid)[name] < power else (lo, mid)
        out[name] = hi
    return out


def oc_curve(simulator: Simulator, criteria: list[PlannedCriterion], units: int, *, grid: int = 21
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """P(pass) per planned criterion and for the policy at ``grid`` true agreements, from 0.2 below the
    lowest floor (or the design's agreement) up to what a perfect judge reaches against the majority."""
    design = simulator.design
    top = float(true_agreement(design.coefficient, 1.0, design.majority_accuracy, design.positive_rate))
    start = min([*floors(criteria, design.coefficient), design.judge_agreement]) - 0.2
    xs = np.linspace(max(start, -0.5), top, grid)
    accuracies = np.array([judge_accuracy_for(design, float(x)) for x in xs])
    # Bounds the (accuracies, studies, units) arrays; above SIMULATED_UNITS the studies simulated are that size.
    chunk = max(1, 4_000_000 // (simulator.studies * min(units, simulator.simulated_units)))
    parts = [simulator.pass_rates(units, accuracies[i:i + chunk]) for i in range(0, accuracies.size, chunk)]
    return xs, {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}


def operating_point(policy: Any, *, units: int, annotators: int, positive_rate: float, human_agreement: float,
                    turns_per_trajectory: float, observed: float, coefficient: str, unscored_rate: float = 0.0,
                    studies: int = 400, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Where a finished study's design sits on its policy's OC curve (for the verdict and the report).

    The design is the study's own (validated units, annotators, observed positive rate,
    annotators' raw agreement, units per trajectory); the curve is P(ACCEPT) of the
    planned criteria against the judge's true ``coefficient``. ``sentence`` reads the
    curve at the observed estimate.
    """
    try:
        design = Design(positive_rate=positive_rate, judge_agreement=min(observed, 0.999),
                        human_agreement=human_agreement, annotators=annotators,
                        turns_per_trajectory=max(1.0, turns_per_trajectory), coefficient=coefficient,
                        unscored_rate=min(unscored_rate, 0.999))
        criteria = planned_criteria(policy)
        if not any(c.planned for c in criteria):
            raise InputError("no criterion the planner can simulate")
        simulator = Simulator(design, criteria, level=policy.settings["level"], studies=studies, seed=seed)
        xs, oc = oc_curve(simulator, criteria, units)
    except InputError as error:
        return {"units": units, "undefined_reason": str(error)}
    accept = oc["policy"]
    at = float(np.interp(observed, xs, accept))
    sentence = (f"with {units} units this policy accepts a judge of true {coefficient} {observed:.2f} "
                f"{at:.0%} of the time (planned criteria only; {studies} simulated studies per point)")
    return {"units": units, "design": design.to_dict(), "coefficient": coefficient,
            "true_agreement": [float(x) for x in xs], "p_accept": [float(v) for v in accept],
            "p_accept_at_estimate": at, "sentence": sentence,
            "not_planned": sorted(c.name for c in criteria if not c.planned)}


def plan(policy: Any, design: Design, *, power: float = 0.8, units: int | None = None, studies: int = 600,
         grid: int = 21, seed: int = DEFAULT_SEED) -> Plan:
    """Units needed per planned criterion and for the policy, and the OC curve at ``units`` (default: the policy's)."""
    if not 0 < power < 1:
        raise InputError(f"power={power!r}: expected a probability strictly between 0 and 1")
    if units is not None and units < 2:
        raise InputError(f"units={units!r}: expected at least 2 units")
    criteria = planned_criteria(policy)
    if not any(c.planned for c in criteria):
        raise InputError(f"{policy.path}: no criterion the planner can simulate ("
                         + "; ".join(f"{c.name}: {c.reason}" for c in criteria) + ")")
    level = policy.settings["level"]
    simulator = Simulator(design, criteria, level=level, studies=studies, seed=seed)
    accuracy = judge_accuracy_for(design, design.judge_agreement)
    needed = _first_reaching(simulator, accuracy, power)
    reached = [v for v in needed.values() if v is not None]
    oc_units = units or needed.get("policy") or (max(reached) if reached else 300)
    q = design.majority_accuracy
    xs, oc = oc_curve(simulator, criteria, oc_units, grid=grid)
    notes = [(f"judge accuracy {accuracy:.4f} vs the latent label gives the design's {design.coefficient} "
             f"{design.judge_agreement} against a majority that is right {q:.4f} of the time")]
    if any(not c.planned for c in criteria):
        notes.append("P(ACCEPT) counts only the planned criteria; the others must pass too")
    return Plan(policy=policy.name, design=design, level=level, power=power, studies=studies, units_needed=needed,
                not_planned={c.name: c.reason for c in criteria if c.reason is not None}, oc_units=oc_units,
                oc_agreement=tuple(float(x) for x in xs), oc_accept={k: tuple(float(v) for v in vals)
                                                                      for k, vals in oc.items()},
                floors=tuple(floors(criteria, design.coefficient)),
                notes=tuple(notes))


def format_plan(result: Plan) -> str:
    d = result.design
    lines = [(f"plan for policy {result.policy!r} at level {result.level}, power {result.power} "
             f"({result.studies} simulated studies per point)"),
             (f"design: positive rate {d.positive_rate}, judge {d.coefficient} {d.judge_agreement}, "
              f"human raw agreement {d.human_agreement}, {d.annotators} annotator(s), "
              f"{d.turns_per_trajectory} turns per trajectory, icc {d.icc}, unscored rate {d.unscored_rate}"),
             "", "units needed:"]
    for name, n in result.units_needed.items():
        lines.append(f"  {name}: {n if n is not None else f'more than {MAX_UNITS}'}")
    for name, reason in result.not_planned.items():
        lines.append(f"  {name}: not planned ({reason})")
    names = list(result.oc_accept)
    lines += ["", f"OC curve at {result.oc_units} units: P(pass) by the judge's true {d.coefficient} vs the majority",
              *[f"  [{i}] {name}" for i, name in enumerate(names, start=1) if name != "policy"],
              "  " + f"{'true':>7} " + " ".join(f"{'[' + str(i) + ']' if n != 'policy' else 'ACCEPT':>7}"
                                               for i, n in enumerate(names, start=1))]
    for i, x in enumerate(result.oc_agreement):
        lines.append("  " + f"{x:7.3f} " + " ".join(f"{v[i]:7.3f}" for v in result.oc_accept.values()))
    lines += ["", *result.notes]
    return "\n".join(lines)


def plot_oc(result: Plan, path: Any) -> None:
    """The OC curve as a PNG (matplotlib, headless), written atomically (its folder made if needed)."""
    import io
    from pathlib import Path

    from samples import atomic_writer

    path = Path(path)
    if path.is_dir():
        raise InputError(f"--plot {path}: is a folder; expected the path of a PNG file")
    try:
        import matplotlib
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'accord[report]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for name, values in result.oc_accept.items():
        ax.plot(result.oc_agreement, values, lw=2.5 if name == "policy" else 1.2, label=name)
    for floor in result.floors:
        ax.axvline(floor, color="black", ls="--", lw=0.8)
    ax.axhline(result.power, color="grey", ls=":", lw=1)
    ax.axhline((1 - result.level) / 2, color="grey", ls=":", lw=1)
    ax.set_xlabel(f"true judge {result.design.coefficient} vs human majority")
    ax.set_ylabel("P(ACCEPT)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{result.policy}: {result.oc_units} units, {result.design.annotators} annotators", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    with atomic_writer(path) as handle:
        handle.write(buffer.getvalue())
