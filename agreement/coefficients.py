"""Agreement coefficients with analytic SEs and a shared, seeded, vectorised bootstrap.

Public entry points: one function per coefficient (``fleiss_kappa(data)`` ...),
``compute(data, names)`` for several coefficients on one resample draw, and the
cheap many-subsets path for panels:

    compute_pairs(data, ["percent_agreement", "cohen_kappa", "gwet_ac1"], pairs=None,
                  n_resamples=1_000, seed=DEFAULT_SEED)
    -> {(rater_a, rater_b): {name: AgreementResult}}

``compute_pairs`` (and the general ``compute_subsets(data, {key: [raters]}, names)``)
builds the resampling design once for the whole table and draws the resamples once:
every coefficient of every rater subset is a slice of one (resamples x atoms) @
(atoms x statistics) product, so a 3-judge pairwise table on 10^6 units costs about
one matrix product per chunk of resamples. Point estimates and analytic SEs equal
those of the subset computed alone; the resamples are drawn over units rated by
anyone in the table.

Coefficients register in ``COEFFICIENTS`` (name -> ``Coefficient``) exactly as a
third-party one would through ``register_coefficient``.
"""

from __future__ import annotations

import math
import pickle
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agreement.bootstrap import DEFAULT_SEED, Design, single_threaded_blas
from agreement.kernels import CohenKappa, CongerKappa, GwetFamily, Kernel, KrippendorffAlpha, LightKappa
from agreement.results import AgreementResult
from agreement.table import RatingData
from agreement.weights import weight_matrix, weights_name
from samples import InputError, Registry

ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")
_ALPHA_WEIGHTS = {"nominal": "identity", "interval": "quadratic", "ratio": "ratio"}

GWET_SE = "Gwet (2014) design-based linearised SE (irrCAC *.raw)"
CONVENTION_GWET = (
    "Gwet (2014)/irrCAC: pa over units with >= 2 ratings; classification probabilities over all "
    "units with >= 1 rating; n = units with >= 1 rating"
)


@dataclass(frozen=True)
class Options:
    """Options every coefficient may read."""

    weights: Any = "identity"
    alpha_level: str = "nominal"
    alpha_weights: Any = None


@dataclass(frozen=True)
class Plan:
    """A coefficient bound to one rater subset: its kernel and how to describe it."""

    kernel: Kernel
    se_method: str
    details: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Coefficient(Protocol):
    """An agreement coefficient the engine can compute, bootstrap and register."""

    @property
    def name(self) -> str: ...
    @property
    def min_raters(self) -> int: ...
    @property
    def max_raters(self) -> int | None: ...

    def plan(self, *, scores: np.ndarray, n_raters: int, options: Options) -> Plan: ...


COEFFICIENTS: Registry[Coefficient] = Registry("coefficient")


def register_coefficient(coefficient: Coefficient) -> Coefficient:
    """Add ``coefficient`` to ``COEFFICIENTS`` under its name (built-ins use this too)."""
    if not isinstance(coefficient, Coefficient):
        raise InputError(f"coefficient={coefficient!r}: expected an object with name, min_raters, max_raters, plan()")
    return COEFFICIENTS.register(coefficient.name, coefficient)


@dataclass(frozen=True)
class _Weighted:
    """A built-in coefficient whose kernel takes an agreement-weight matrix."""

    name: str
    kernel: Callable[[np.ndarray, int], Any]
    se_method: str
    convention: str
    weighted: bool = True
    min_raters: int = 2
    max_raters: int | None = None

    def plan(self, *, scores: np.ndarray, n_raters: int, options: Options) -> Plan:
        spec = options.weights if self.weighted else "identity"
        return Plan(
            self.kernel(weight_matrix(spec, scores), n_raters),
            self.se_method,
            {"weights": weights_name(spec), "convention": self.convention},
        )


@dataclass(frozen=True)
class _Alpha:
    name: str = "krippendorff_alpha"
    min_raters: int = 2
    max_raters: int | None = None

    def plan(self, *, scores: np.ndarray, n_raters: int, options: Options) -> Plan:
        level = options.alpha_level
        if level not in ALPHA_LEVELS:
            raise InputError(f"alpha_level={level!r}: expected one of {list(ALPHA_LEVELS)}")
        convention = "Krippendorff (2011): pairable values only (units with >= 2 ratings)"
        if level == "ordinal":
            if options.alpha_weights is not None:
                raise InputError("weights: Krippendorff's ordinal metric has no fixed weights; pass weights only with level='nominal'")
            kernel = KrippendorffAlpha(np.eye(scores.size), ordinal=True)
            return Plan(kernel, "none (Krippendorff's ordinal metric depends on the marginals; use the bootstrap)", {
                "level": level, "metric": "Krippendorff ordinal (ranks of the category order)", "convention": convention})
        spec = _ALPHA_WEIGHTS[level] if options.alpha_weights is None else options.alpha_weights
        if options.alpha_weights is not None and level != "nominal":
            raise InputError(f"weights: give either level={level!r} or Gwet weights, not both")
        metric = f"Gwet (2014) weights {weights_name(spec)!r}"
        if options.alpha_weights is None:
            metric = {"nominal": "nominal", "interval": "interval (= Gwet quadratic weights on the category values)",
                      "ratio": "ratio (= Gwet ratio weights on the category values)"}[level]
        return Plan(
            KrippendorffAlpha(weight_matrix(spec, scores)),
            "Gwet (2014) SE as R irrCAC 1.4 krippen.alpha.raw (centred on pa'; variance over pairable units; t df = rated units - 1)",
            {"level": level, "metric": metric, "weights": weights_name(spec), "convention": convention},
        )


SCOTT_SE = "Gwet (2014) 2-rater variance (irrCAC scott2.table: sum of squared influence terms / n^2)"
COHEN_SE = "Fleiss-Cohen-Everitt (1969) large-sample non-null ASE (= SAS ASE, statsmodels std_kappa, irrCAC kappa2.table)"


def _gwet(chance: str, *, small_sample: bool = True) -> Callable[[np.ndarray, int], GwetFamily]:
    return lambda weights, n_raters: GwetFamily(chance, weights, small_sample=small_sample)


_BUILTINS: tuple[Coefficient, ...] = (
    _Weighted("percent_agreement", _gwet("none"), GWET_SE, CONVENTION_GWET),
    _Weighted("fleiss_kappa", _gwet("fleiss"), GWET_SE, CONVENTION_GWET + " (Fleiss 1971 generalised by Gwet 2014)"),
    _Weighted(
        "scott_pi", _gwet("fleiss", small_sample=False), SCOTT_SE,
        CONVENTION_GWET + " (Scott's pi = Fleiss' kappa for two raters)", max_raters=2,
    ),
    _Weighted("gwet_ac1", _gwet("gwet"), GWET_SE, CONVENTION_GWET, weighted=False),
    _Weighted("gwet_ac2", _gwet("gwet"), GWET_SE, CONVENTION_GWET),
    _Weighted(
        "brennan_prediger", _gwet("uniform"), GWET_SE,
        CONVENTION_GWET + "; pe = sum(weights)/q^2 over the declared categories",
    ),
    _Weighted(
        "conger_kappa", CongerKappa, GWET_SE,
        CONVENTION_GWET + "; rater g's p_gk over the units rater g rated (irrCAC conger.kappa.raw)",
    ),
    _Weighted(
        "cohen_kappa", lambda weights, n_raters: CohenKappa(weights), COHEN_SE,
        "units rated by both raters (listwise deletion, as irr kappa2, SAS, sklearn, statsmodels)", max_raters=2,
    ),
    _Weighted(
        "light_kappa", LightKappa, "none (the pairwise kappas share units; use the bootstrap)",
        "mean pairwise Cohen kappa over units rated by every rater (listwise, as irr kappam.light)", min_raters=3,
    ),
    _Alpha(),
)
for _coefficient in _BUILTINS:
    register_coefficient(_coefficient)


@dataclass(frozen=True)
class PrevalenceBias:
    """Byrt, Bishop & Carlin (1993) indices of a 2 x 2 table, relative to ``positive``.

    prevalence = p(both positive) - p(both negative); bias = p(first rater positive,
    second negative) - p(the reverse); pabak = 2 pa - 1. Cohen's kappa equals
    (pabak - prevalence^2 + bias^2) / (1 - prevalence^2 + bias^2).
    """

    prevalence_index: float
    bias_index: float
    pabak: float
    n_units: int
    positive: Any


def _pair_indices(codes: np.ndarray, units: np.ndarray, weights: np.ndarray, positive: Any) -> PrevalenceBias:
    """Indices from two columns of binary codes; ``units``/``weights`` per row (rows may be patterns)."""
    both = np.all(codes >= 0, axis=1)
    cells = np.bincount(codes[both, 0] * 2 + codes[both, 1], weights=(units * weights)[both], minlength=4)
    n, total = int(units[both].sum()), cells.sum()
    if n == 0 or total <= 0:
        return PrevalenceBias(math.nan, math.nan, math.nan, n, positive)
    p = cells.reshape(2, 2) / total
    return PrevalenceBias(
        float(p[0, 0] - p[1, 1]), float(p[0, 1] - p[1, 0]), float(2 * (p[0, 0] + p[1, 1]) - 1), n, positive
    )


def prevalence_bias_indices(data: RatingData, raters: Sequence[str] | None = None) -> PrevalenceBias:
    """Prevalence and bias indices for two raters and two categories (units both rated)."""
    columns = _columns(data, raters)
    if len(columns) != 2 or data.n_categories != 2:
        raise InputError(
            f"{data.source}: prevalence and bias indices need 2 raters and 2 categories, "
            f"got {len(columns)} raters and categories {list(data.categories)}"
        )
    weights = np.ones(data.n_units) if data.unit_weights is None else data.unit_weights
    return _pair_indices(data.codes[:, columns], np.ones(data.n_units), weights, data.categories[0])


def _columns(data: RatingData, raters: Sequence[str] | None) -> list[int]:
    if raters is None:
        return list(range(data.n_raters))
    if isinstance(raters, str):
        raise InputError(f"raters={raters!r}: expected a list of rater names")
    columns = [data.rater_index(r) for r in raters]
    if len(set(columns)) != len(columns):
        raise InputError(f"raters={list(raters)!r}: a rater is listed twice")
    return columns


def _resolve(names: Sequence[str] | str | None) -> list[str]:
    if names is None:  # the built-ins in their documented order, then any other registered one
        builtins = [c.name for c in _BUILTINS]
        return builtins + [n for n in COEFFICIENTS if n not in builtins]
    if isinstance(names, str):
        names = [names]
    unknown = [n for n in names if n not in COEFFICIENTS]
    if unknown:
        raise InputError(f"coefficients: unknown {unknown}; available: {sorted(COEFFICIENTS)}")
    return list(dict.fromkeys(names))


def _check_run(n_resamples: int, seed: int) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0:
        raise InputError(f"n_resamples={n_resamples!r}: expected a whole number >= 0 (0 = no bootstrap)")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed={seed!r}: expected a whole number >= 0")


@dataclass
class _Request:
    key: Any
    name: str
    columns: list[int]
    plan: Plan
    stats: np.ndarray = field(init=False, repr=False)


def _analytic_se(
    design: Design, request: _Request, sums: np.ndarray, value: Any
) -> tuple[float, float, dict[str, Any]]:
    """(se, df, details) from the kernel's per-unit influence terms, clustered when the design is."""
    codes = design.codes[:, request.columns]
    linear = request.plan.kernel.linearised(codes, sums, value)
    if linear is None:
        return math.nan, math.nan, {"se_undefined_reason": request.plan.se_method}
    weight = design.pattern_weight * linear.variance_members
    deviations = weight * (linear.z - linear.centre)
    per_atom = design.per_atom(np.column_stack([deviations, linear.variance_members, linear.df_members]))
    multiplicity = design.atom_multiplicity
    n_var = float(np.sum(multiplicity * (per_atom[:, 1] > 0)))
    n_df = float(np.sum(multiplicity * (per_atom[:, 2] > 0)))
    total_weight = float(np.sum(design.pattern_units * weight))
    df = n_df - 1.0
    if n_var < 2 or total_weight <= 0:
        return math.nan, df, {"se_undefined_reason": f"the SE needs at least 2 {'clusters' if design.clustered else 'units'}"}
    factor = n_var / (n_var - 1.0) if (linear.small_sample or design.clustered) else 1.0
    variance = factor * float(np.sum(multiplicity * per_atom[:, 0] ** 2)) / total_weight**2
    members = "clusters" if design.clustered else "units"
    over = f"{int(round(n_var))} {members}"
    if design.atom_stratum is not None:
        stratified = _stratified_variance(design, design.atom_stratum, per_atom, linear.small_sample)
        if stratified is None:
            over += "; strata pooled: a stratum has fewer than 2 contributing " + members
        else:
            variance = stratified / total_weight**2
            over += f" within {np.unique(design.atom_stratum).size} strata"
    return math.sqrt(variance), df, {"se_over": over}


def _stratified_variance(design: Design, strata: np.ndarray, per_atom: np.ndarray, small_sample: bool) -> float | None:
    """The linearised variance of a stratified sample (times the total weight squared): within each stratum
    the members' influence sums deviate from that stratum's mean (clusters are drawn within strata, so the
    differences between strata are fixed by the design), with the n_s/(n_s - 1) correction per stratum. None
    when a stratum has fewer than 2 contributing members (its variance cannot be estimated)."""
    multiplicity, total = design.atom_multiplicity, 0.0
    for stratum in np.unique(strata):
        mine = (strata == stratum) & (per_atom[:, 1] > 0)
        n_s = float(np.sum(multiplicity[mine]))
        if n_s < 2:
            return None
        deviations = per_atom[mine, 0]
        centre = float(np.sum(multiplicity[mine] * deviations)) / n_s
        factor = n_s / (n_s - 1.0) if (small_sample or design.clustered) else 1.0
        total += factor * float(np.sum(multiplicity[mine] * (deviations - centre) ** 2))
    return total


def _fleiss_extras(
    codes: np.ndarray, units: np.ndarray, categories: Sequence[Any], statistic: float, identity: bool
) -> dict[str, Any]:
    """Per-category kappas (Fleiss 1971; unequal raters: over units with >= 2 ratings) and the
    Fleiss-Nee-Landis (1979) null SE, from pattern codes and the number of units per pattern."""
    q = len(categories)
    counts = np.stack([(codes == k).sum(axis=1) for k in range(q)], axis=1).astype(float)
    ri = counts.sum(axis=1)
    multi, rated = ri >= 2, ri >= 1
    extras: dict[str, Any] = {}
    if multi.any():
        p = units[rated] @ (counts[rated] / ri[rated, None]) / units[rated].sum()
        c, r, u = counts[multi], ri[multi], units[multi]
        disagreement = u @ (c * (r[:, None] - c) / (r * (r - 1.0))[:, None]) / u.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            per_category = np.where(p * (1 - p) > 0, 1.0 - disagreement / (p * (1 - p)), np.nan)
        extras["per_category"] = {cat: (None if math.isnan(v) else float(v)) for cat, v in zip(categories, per_category)}
    sizes = np.unique(ri[rated])
    if identity and sizes.size == 1 and sizes[0] >= 2:
        m, n = float(sizes[0]), float(units[rated].sum())
        p = units[rated] @ counts[rated] / (n * m)
        pq = p * (1 - p)
        total = float(pq.sum())
        extras["per_category_se0"] = math.sqrt(2.0 / (n * m * (m - 1.0)))
        if total > 0:
            spread = max(total**2 - float(np.sum(pq * (1 - 2 * p))), 0.0)
            se0 = math.sqrt(2.0) / (total * math.sqrt(n * m * (m - 1.0))) * math.sqrt(spread)
            extras["se0_fnl1979"] = se0
            extras["z_fnl1979"] = statistic / se0 if se0 > 0 else math.nan
            return extras
    extras["se0_fnl1979"] = math.nan
    extras["se0_fnl1979_undefined_reason"] = (
        "the Fleiss-Nee-Landis (1979) null SE needs identity weights and the same number (>= 2) of ratings per rated unit"
    )
    return extras


def _check_data(data: Any) -> None:
    if not isinstance(data, RatingData):
        raise InputError(f"data: expected RatingData (use load_labels or RatingData.from_matrix), got {type(data).__name__}")


def _rater_count_problem(name: str, raters: list[str]) -> str | None:
    coefficient = COEFFICIENTS[name]
    if coefficient.min_raters <= len(raters) and (coefficient.max_raters is None or len(raters) <= coefficient.max_raters):
        return None
    wanted = (
        f"exactly {coefficient.min_raters}" if coefficient.max_raters == coefficient.min_raters
        else f"at least {coefficient.min_raters}" if coefficient.max_raters is None
        else f"{coefficient.min_raters} to {coefficient.max_raters}"
    )
    return f"{name} needs {wanted} raters; got {len(raters)} ({raters})"


def _inapplicable(data: RatingData, name: str, columns: list[int], problem: str) -> AgreementResult:
    """An undefined result for a coefficient that does not apply to this many raters."""
    return AgreementResult(
        coefficient=name, statistic=math.nan, pa=math.nan, pe=math.nan, se=math.nan, se_method="",
        n_units=int(np.any(data.codes[:, columns] >= 0, axis=1).sum()), n_raters=len(columns),
        undefined_reason=problem, details={"raters": [data.raters[c] for c in columns]},
    )


def compute_subsets(
    data: RatingData,
    subsets: Mapping[Any, Sequence[str]],
    coefficients: Sequence[str] | str | None = None,
    *,
    weights: Any = "identity",
    alpha_level: str = "nominal",
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    cluster: bool = True,
) -> dict[Any, dict[str, AgreementResult]]:
    """Coefficients for each rater subset ``{key: [rater, ...]}`` on one shared resample draw.

    A coefficient that does not apply to a subset's number of raters (Cohen's kappa
    or Scott's pi on three raters) comes back undefined with the reason.
    """
    _check_data(data)
    names = _resolve(coefficients)
    _check_run(n_resamples, seed)
    columns_of = {key: _columns(data, raters) for key, raters in subsets.items()}
    memo = _SHARED.get()
    digest = _memo_key(data, columns_of, names, weights, alpha_level, n_resamples, seed, cluster) \
        if memo is not None else ""
    if memo is not None and digest in memo:
        memo.move_to_end(digest)
        return {key: dict(by_name) for key, by_name in memo[digest].items()}
    options = Options(weights=weights, alpha_level=alpha_level)
    requests: list[_Request] = []
    slots: list[tuple[Any, str, _Request | AgreementResult]] = []
    for key, columns in columns_of.items():
        for name in names:
            problem = _rater_count_problem(name, [data.raters[c] for c in columns])
            if problem:
                slots.append((key, name, _inapplicable(data, name, columns, problem)))
                continue
            plan = COEFFICIENTS[name].plan(scores=data.category_scores, n_raters=len(columns), options=options)
            requests.append(_Request(key, name, columns, plan))
            slots.append((key, name, requests[-1]))
    computed = dict(zip(map(id, requests), _run(data, requests, n_resamples, seed, cluster)))
    results: dict[Any, dict[str, AgreementResult]] = {key: {} for key in subsets}
    for key, name, slot in slots:
        results[key][name] = computed[id(slot)] if isinstance(slot, _Request) else slot
    if memo is not None and digest:
        for result in (r for by_name in results.values() for r in by_name.values()):
            for array in result.details.get("jackknife") or ():
                array.setflags(write=False)  # shared with every later caller: nobody may change it
        memo[digest] = {key: dict(by_name) for key, by_name in results.items()}
        while len(memo) > _SHARED_SIZE:
            memo.popitem(last=False)
    return results


_SHARED: ContextVar[OrderedDict[str, dict[Any, dict[str, AgreementResult]]] | None] = ContextVar(
    "accord_shared_coefficients", default=None)
_SHARED_SIZE = 64
"""Computations kept by ``shared_results`` (least recently used dropped first)."""


@contextmanager
def shared_results() -> Iterator[None]:
    """Within the block, ``compute_subsets`` on the same ratings and settings returns its earlier results
    (read-only) instead of computing them again: a result depends only on its inputs. ``accord gate`` shares
    the human panel between judges, ``accord run`` also with validation (an inner block shares the outer's)."""
    if _SHARED.get() is not None:
        yield
        return
    token = _SHARED.set(OrderedDict())
    try:
        yield
    finally:
        _SHARED.reset(token)


def _memo_key(data: RatingData, columns_of: Mapping[Any, list[int]], names: Sequence[str], weights: Any,
              alpha_level: str, n_resamples: int, seed: int, cluster: bool) -> str:
    """sha256 of everything a ``compute_subsets`` result depends on: the used raters' columns (every unit,
    in order), their names, the categories and their scores, clusters, unit weights, strata and settings."""
    used = sorted({c for columns in columns_of.values() for c in columns})
    position = {c: i for i, c in enumerate(used)}
    parts = (data.codes[:, used], [data.raters[c] for c in used], data.categories, data.category_scores,
             data.clusters, data.unit_weights, data.strata,
             [(key, [position[c] for c in columns]) for key, columns in columns_of.items()],
             list(names), weights, alpha_level, n_resamples, seed, cluster)
    try:
        return sha256(pickle.dumps(parts, protocol=5)).hexdigest()
    except (pickle.PicklingError, TypeError, AttributeError):  # a subset key pickle cannot write: not shared
        return ""


def _run(data: RatingData, requests: list[_Request], n_resamples: int, seed: int, cluster: bool) -> list[AgreementResult]:
    """Build the design once, draw the resamples once, evaluate every request on them."""
    groups: dict[tuple[int, ...], bool] = {}
    for request in requests:
        key = tuple(request.columns)
        # Two-rater results carry the (orientation-dependent) bias index: keep rater order.
        exchangeable = request.plan.kernel.exchangeable and len(key) > 2
        groups[key] = groups.get(key, True) and exchangeable
    design = Design.build(data, groups=[(list(k), v) for k, v in groups.items()], cluster=cluster)
    for request in requests:
        raw = request.plan.kernel.stats(design.codes[:, request.columns])
        per_pattern = raw * design.pattern_weight[:, None]
        unweighted = list(request.plan.kernel.unweighted)
        per_pattern[:, unweighted] = raw[:, unweighted]
        request.stats = design.per_atom(per_pattern)
    drawn = [np.full(n_resamples, np.nan) for _ in requests] if n_resamples else []
    boots: list[np.ndarray | None] = list(drawn) if n_resamples else [None] * len(requests)
    jackknives: list[Any] = [None] * len(requests)
    if n_resamples and design.n_atoms:
        stacked = np.concatenate([r.stats for r in requests], axis=1)
        bounds = np.cumsum([0] + [r.stats.shape[1] for r in requests])
        done = 0
        with single_threaded_blas():
            for counts in design.draws(n_resamples, seed):
                sums = counts @ stacked
                for boot, request, lo, hi in zip(drawn, requests, bounds[:-1], bounds[1:]):
                    boot[done : done + counts.shape[0]] = request.plan.kernel.evaluate(sums[:, lo:hi]).statistic
                done += counts.shape[0]
        for index, request in enumerate(requests):
            total = design.atom_multiplicity @ request.stats
            leave_one_out = request.plan.kernel.evaluate(total[None, :] - request.stats).statistic
            jackknives[index] = (leave_one_out, design.atom_multiplicity)
    return [_result(data, design, r, b, j) for r, b, j in zip(requests, boots, jackknives)]


def _result(
    data: RatingData, design: Design, request: _Request, boot: np.ndarray | None, jackknife: Any
) -> AgreementResult:
    kernel = request.plan.kernel
    sums = design.atom_multiplicity @ request.stats if design.n_atoms else np.zeros(kernel.width)
    value = kernel.evaluate(sums)
    statistic = float(value.statistic)
    reason_code = int(value.reason)
    codes = design.codes[:, request.columns]
    ri = (codes >= 0).sum(axis=1)
    n_rated = int(np.sum(design.pattern_units * (ri >= 1)))
    details: dict[str, Any] = dict(request.plan.details)
    details.update(
        n_units_rated=n_rated,
        n_units_pairable=int(np.sum(design.pattern_units * (ri >= 2))),
        n_units_unrated=int(data.n_units - n_rated),
        categories=list(data.categories),
        raters=[data.raters[c] for c in request.columns],
    )
    if design.clustered:
        details["clustered"] = True
        details["n_clusters"] = design.n_members
    if design.atom_stratum is not None:
        details["n_strata"] = int(np.unique(design.atom_stratum).size)
    details["resampling"] = design.resampling
    se, df = math.nan, math.nan
    if reason_code == 0:
        se, df, extra = _analytic_se(design, request, sums, value)
        details.update(extra)
    else:
        details["se_undefined_reason"] = "the coefficient is undefined"
    n_units = n_rated
    if isinstance(kernel, CohenKappa):
        n_units = int(np.sum(design.pattern_units * (ri == 2)))
        details["n_units_one_rating_dropped"] = n_rated - n_units
        if reason_code == 0:
            se0 = kernel.null_se(sums, value)
            details["se0_null"] = se0
            details["z_null"] = statistic / se0 if se0 > 0 else math.nan
    if request.name in ("fleiss_kappa", "scott_pi") and reason_code == 0 and isinstance(kernel, GwetFamily):
        identity = bool(np.array_equal(kernel.weights, np.eye(kernel.q)))
        details.update(_fleiss_extras(codes, design.pattern_units.astype(float), data.categories, statistic, identity))
    if boot is not None:
        details["bootstrap_undefined"] = int(np.isnan(boot).sum())
        details["n_resamples"] = int(boot.size)
        details["jackknife"] = jackknife
        boot.setflags(write=False)
    prevalence = bias = None
    if len(request.columns) == 2 and data.n_categories == 2:
        indices = _pair_indices(codes, design.pattern_units, design.pattern_weight, data.categories[0])
        prevalence, bias = indices.prevalence_index, indices.bias_index
        details["prevalence_positive_category"] = indices.positive
        details["pabak"] = indices.pabak
    return AgreementResult(
        coefficient=request.name,
        statistic=statistic,
        pa=float(value.pa),
        pe=float(value.pe),
        se=se,
        se_method=request.plan.se_method,
        n_units=n_units,
        n_raters=len(request.columns),
        undefined_reason=kernel.reasons[reason_code] if reason_code else None,
        df=df,
        details=details,
        bootstrap=boot,
        prevalence_index=prevalence,
        bias_index=bias,
    )


def compute(
    data: RatingData,
    coefficients: Sequence[str] | str | None = None,
    *,
    weights: Any = "identity",
    alpha_level: str = "nominal",
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    cluster: bool = True,
) -> dict[str, AgreementResult]:
    """Several coefficients over all raters of ``data``, sharing one resample draw.

    ``weights`` applies to every weighted coefficient (not AC1, which is unweighted
    by definition); ``alpha_level`` to Krippendorff's alpha. ``cluster=True``
    resamples whole clusters (and clusters the analytic SE) when ``data.clusters``
    is set. ``coefficients=None`` computes every registered coefficient that fits
    the number of raters.
    """
    names = _resolve(coefficients)
    if coefficients is None:
        names = [
            n for n in names
            if (most := COEFFICIENTS[n].max_raters) is None or most >= data.n_raters
        ]
    return compute_subsets(
        data, {"all": list(data.raters)}, names, weights=weights, alpha_level=alpha_level,
        n_resamples=n_resamples, seed=seed, cluster=cluster,
    )["all"]


def compute_pairs(
    data: RatingData,
    coefficients: Sequence[str] | str | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    weights: Any = "identity",
    alpha_level: str = "nominal",
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    cluster: bool = True,
) -> dict[tuple[str, str], dict[str, AgreementResult]]:
    """Coefficients for each rater pair (default: every pair) on one shared resample draw."""
    if pairs is None:
        pairs = [(a, b) for i, a in enumerate(data.raters) for b in data.raters[i + 1 :]]
    subsets = {}
    for pair in pairs:
        if len(pair) != 2:
            raise InputError(f"pairs: expected (rater, rater) tuples, got {pair!r}")
        subsets[(str(pair[0]), str(pair[1]))] = list(pair)
    return compute_subsets(
        data, subsets, coefficients, weights=weights, alpha_level=alpha_level,
        n_resamples=n_resamples, seed=seed, cluster=cluster,
    )


def _single(name: str, data: RatingData, options: dict[str, Any], n_resamples: int, seed: int, cluster: bool) -> AgreementResult:
    _check_data(data)
    problem = _rater_count_problem(name, list(data.raters))
    if problem:
        raise InputError(f"{data.source}: {problem}")
    return compute(data, [name], n_resamples=n_resamples, seed=seed, cluster=cluster, **options)[name]


def percent_agreement(data: RatingData, *, weights: Any = "identity", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Share of agreeing rater pairs per unit, averaged over units with >= 2 ratings (Gwet 2014)."""
    return _single("percent_agreement", data, {"weights": weights}, n_resamples, seed, cluster)


def cohen_kappa(data: RatingData, *, weights: Any = "identity", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Cohen's kappa (weighted with ``weights``) for exactly two raters, on the units both rated."""
    return _single("cohen_kappa", data, {"weights": weights}, n_resamples, seed, cluster)


def scott_pi(data: RatingData, *, weights: Any = "identity", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Scott's pi for exactly two raters (Fleiss' kappa of two raters, Gwet 2014 missing-data rules)."""
    return _single("scott_pi", data, {"weights": weights}, n_resamples, seed, cluster)


def fleiss_kappa(data: RatingData, *, weights: Any = "identity", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Fleiss' kappa (Gwet 2014 generalisation); per-category kappas and the FNL null SE/z in details."""
    return _single("fleiss_kappa", data, {"weights": weights}, n_resamples, seed, cluster)


def conger_kappa(data: RatingData, *, weights: Any = "identity", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Conger's (1980) kappa: Cohen's kappa generalised to many raters with rater-specific marginals."""
    return _single("conger_kappa", data, {"weights": weights}, n_resamples, seed, cluster)


def gwet_ac1(data: RatingData, *, n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Gwet's (2008) AC1 (unweighted)."""
    return _single("gwet_ac1", data, {}, n_resamples, seed, cluster)


def gwet_ac2(data: RatingData, *, weights: Any = "quadratic", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Gwet's AC2: AC1 with agreement weights (Gwet 2014)."""
    return _single("gwet_ac2", data, {"weights": weights}, n_resamples, seed, cluster)


def brennan_prediger(data: RatingData, *, weights: Any = "identity", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Brennan-Prediger (1981) / Randolph free-marginal kappa: pe = sum(weights) / q^2 over declared categories."""
    return _single("brennan_prediger", data, {"weights": weights}, n_resamples, seed, cluster)


def light_kappa(data: RatingData, *, weights: Any = "identity", n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True) -> AgreementResult:
    """Light's (1971) kappa: mean pairwise Cohen kappa over units every rater labelled; bootstrap CIs only."""
    return _single("light_kappa", data, {"weights": weights}, n_resamples, seed, cluster)


def krippendorff_alpha(
    data: RatingData, level: str = "nominal", *, weights: Any = None, n_resamples: int = 10_000, seed: int = DEFAULT_SEED, cluster: bool = True
) -> AgreementResult:
    """Krippendorff's alpha at ``level`` (nominal, ordinal, interval, ratio) over pairable values.

    ``weights`` (with level='nominal') uses Gwet's (2014) weighted alpha instead of a
    Krippendorff metric (e.g. 'linear').
    """
    _check_data(data)
    if level not in ALPHA_LEVELS:
        raise InputError(f"level={level!r}: expected one of {list(ALPHA_LEVELS)}")
    _check_run(n_resamples, seed)
    options = Options(alpha_level=level, alpha_weights=weights)
    plan = COEFFICIENTS["krippendorff_alpha"].plan(scores=data.category_scores, n_raters=data.n_raters, options=options)
    request = _Request("all", "krippendorff_alpha", list(range(data.n_raters)), plan)
    return _run(data, [request], n_resamples, seed, cluster)[0]
