"""The acceptance gate: may this judge score the full benchmark?

A policy file (TOML) states every threshold; nothing here has a default threshold.
Each ``[[criteria]]`` table names a criterion type registered in ``CRITERIA``
(built-ins register exactly as a third-party criterion would) and its parameters.
A criterion that cannot be measured fails, with the reason. The verdict is ACCEPT
only when every criterion passes.

Policy layout::

    [policy]
    name = "binary-judge-strict"
    description = "..."
    level = 0.95                 # confidence level of every interval
    tie_policy = "exclude"       # human-majority ties (agreement.majority)
    n_resamples = 2000
    seed = 20261129

    [[criteria]]
    type = "agreement_floor"
    coefficient = "gwet_ac1"
    min_lower_bound = 0.6
    ...

Every criterion is a test of what it claims and states it: ``test`` (the
statistical test), ``value``, the interval (``ci_low``, ``ci_high``, ``ci_level``,
``ci_method``) and ``threshold``. Nothing passes on a point estimate alone unless
the policy says so for that criterion (``point_estimate = true``).

Every policy carries the built-in criteria ``BUILT_IN``: the judge must beat every
constant answer, the majority-class rule and any baseline judges the policy names
(``beats_baselines``), and its Cohen's kappa must be shown above 0 (``tracks_input``).
A policy's own table of either tightens it (a higher bound, more baselines or
coefficients); nothing drops or loosens it. Interval methods
and the sizes below which they are not trusted come from the coverage study
(``agreement.intervals``).

The verdict file (STUDY/gate/verdict.json) holds the verdict, every criterion's
test, value, interval, threshold and result, the policy's content and sha256, and the
fingerprints of the input files, so a score can cite the verdict it rests on.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

import numpy as np

from agreement.intervals import method_for, too_small
from agreement.panels import PAIR_COEFFICIENTS
from samples import MAX_RESAMPLES, MIN_RESAMPLES, InputError, Registry, Resampling, sha256_hex

if TYPE_CHECKING:
    from agreement.plan import PlanCheck

ACCEPT, REJECT, CONTINUE = "ACCEPT", "REJECT", "CONTINUE"


@dataclass(frozen=True, kw_only=True)
class CriterionResult:
    """One criterion's measurement and decision."""

    name: str
    type: str
    test: str
    """The statistical test the decision rests on, in words."""
    value: float
    ci_low: float
    ci_high: float
    ci_level: float | None
    """Level of the interval (None: the criterion has no sampling interval, ``test`` says why)."""
    ci_method: str
    threshold: str
    passed: bool
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from agreement.study_io import jsonable

        clean = jsonable  # NaN / inf -> None
        return {"name": self.name, "type": self.type, "test": self.test, "value": clean(self.value),
                "ci_low": clean(self.ci_low), "ci_high": clean(self.ci_high), "ci_level": self.ci_level,
                "ci_method": self.ci_method, "threshold": self.threshold, "passed": self.passed,
                "reason": self.reason, "details": jsonable(self.details)}


class Evidence(Protocol):
    """What criteria measure against; built by ``agreement.validation.GateEvidence``."""

    judge: str

    level: float

    def agreement(self, coefficient: str, reference: str) -> Any:
        """An ``Estimate`` (statistic, interval at the policy's level) or None."""
    def human_ceiling(self, coefficient: str) -> Any:
        """An ``agreement.panels.CeilingDifference`` (paired cluster bootstrap)."""
    def alt_test(self, **settings: Any) -> Any: ...
    def family_audit(self, positive: list[str], *, reference: str = "resolved") -> Any: ...
    def unscored(self) -> tuple[int, int]: ...
    def baselines(self, coefficients: tuple[str, ...], reference: str, judges: tuple[str, ...]) -> Any:
        """An ``agreement.validation.BaselineComparison``: judge minus each baseline, paired bootstrap."""
    def units_per_stratum(self) -> dict[str, int]: ...


@dataclass(frozen=True, kw_only=True)
class AgreementBound:
    """A lower bound a criterion puts on the judge's agreement with a reference (a floor): the built-in
    criteria take their reference and coefficients from a policy's floors, and the operating characteristic
    is read on the first floor's coefficient."""

    coefficient: str
    reference: str
    bound: float


class Criterion(Protocol):
    """A gate criterion: built from its policy table, evaluated on the evidence, planned on simulated studies.

    Everything the gate, the planner and the views ask of a criterion is asked of it (a third party's
    criterion, registered with ``register_criterion``, is treated as a built-in); nothing tests its type name.
    """

    name: str
    type_name: str
    """The policy's ``type`` it is registered under (set by ``register_criterion``)."""
    agreement_bound: AgreementBound | None
    """The floor it states on the judge's agreement, or None."""
    counts: bool
    """Its value is a count of units (printed as an integer), not an estimate."""
    exclude_flagged: bool
    """Evaluated without the annotators the policy's ``[quality]`` rule flags."""
    labels: tuple[str, ...]
    """The labels it names: each must be a label of the judge's scheme (``check_policy_labels``)."""

    def evaluate(self, evidence: Evidence) -> CriterionResult: ...

    def plan(self) -> PlanCheck | str:
        """Its test on the planner's simulated studies (``agreement.plan.SimulatedStudies`` -> (X, S) passes),
        or why the planner cannot simulate it."""
        ...


class CriterionType(Protocol):
    """A registered criterion class: builds its criterion from the policy's table (``where`` names it)."""

    counts: bool

    def __call__(self, table: dict[str, Any], where: str) -> Criterion: ...


class BuiltIn(CriterionType, Protocol):
    """A criterion type every policy carries (``BUILT_IN``): its table from the policy's floors, tightened by
    the policy's own table of it, never loosened."""

    def built_in_table(self, table: dict[str, Any], floors: list[AgreementBound], where: str) -> dict[str, Any]:
        ...


BUILT_IN = ("beats_baselines", "tracks_input")
"""Criterion types every policy carries; a policy's own table of one of these tightens it."""

_CAPABILITIES = ("evaluate", "plan", "agreement_bound", "counts", "exclude_flagged", "labels")

CRITERIA: Registry[CriterionType] = Registry("criterion type")


def register_criterion(type_name: str) -> Callable[[type], type]:
    """Register a criterion class under the policy's ``type`` name; it must have every capability of
    ``Criterion`` (class attributes or properties), or it is refused here rather than failing a gate later."""

    def wrap(cls: type) -> type:
        needs = (*_CAPABILITIES, "built_in_table") if type_name in BUILT_IN else _CAPABILITIES
        missing = [name for name in needs if not hasattr(cls, name)]
        if missing:
            raise TypeError(f"criterion type {type_name!r}: {cls.__name__} lacks {missing}; a criterion needs "
                            f"{list(needs)} (agreement.gate.Criterion)")
        CRITERIA.register(type_name, cast(CriterionType, cls))
        cls.type_name = type_name  # type: ignore[attr-defined]
        return cls

    return wrap


def _param(table: Mapping[str, Any], name: str, where: str, kind: type | tuple[type, ...],
           *, check: Callable[[Any], bool] = lambda v: True, allowed: str = "") -> Any:
    if name not in table:
        raise InputError(f"{where}: missing parameter {name!r} ({allowed or kind})")
    value = table[name]
    wrong_bool = isinstance(value, bool) and kind is not bool  # TOML true is not a number
    if wrong_bool or not isinstance(value, kind) or not check(value):
        raise InputError(f"{where}: {name} = {value!r}: expected {allowed or kind}")
    return value


def _unknown(table: Mapping[str, Any], known: set[str], where: str) -> None:
    extra = sorted(set(table) - known - {"type", "name"})
    if extra:
        raise InputError(f"{where}: unknown parameter(s) {extra}; allowed: {sorted(known)}")


class _Rule(TypedDict):
    """A parameter's check and the words naming what it allows (``_param``'s keywords)."""

    check: Callable[[Any], bool]
    allowed: str


_share: _Rule = {"check": lambda v: 0.0 <= v <= 1.0, "allowed": "a number in [0, 1]"}
_number = (int, float)


UNMEASURABLE = "cannot be measured: "
"""How every unmeasurable criterion's reason begins (``_fail``): its value is shown as no number."""


def _fail(name: str, type_name: str, test: str, threshold: str, reason: str, *, value: float = math.nan,
          **details: Any) -> CriterionResult:
    return CriterionResult(name=name, type=type_name, test=test, value=value, ci_low=math.nan, ci_high=math.nan,
                           ci_level=None, ci_method="", threshold=threshold, passed=False,
                           reason=f"{UNMEASURABLE}{reason}", details=details)


@register_criterion("agreement_floor")
class AgreementFloor:
    """Lower CI bound of judge-vs-reference agreement at or above a floor."""

    counts = False
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"coefficient", "reference", "min_lower_bound"}, where)
        self.coefficient = _param(table, "coefficient", where, str, check=lambda v: v in PAIR_COEFFICIENTS,
                                  allowed=f"one of {list(PAIR_COEFFICIENTS)}")
        self.reference = _param(table, "reference", where, str, check=lambda v: v in ("human_majority", "resolved"),
                                allowed="'human_majority' or 'resolved' (the adjudicated label, else the majority)")
        self.floor = float(_param(table, "min_lower_bound", where, _number, check=lambda v: -1 <= v <= 1,
                                  allowed="a number in [-1, 1]"))
        self.name = table.get("name", f"{self.coefficient} vs {self.reference.replace('_', ' ')}, lower bound")

    @property
    def agreement_bound(self) -> AgreementBound:
        return AgreementBound(coefficient=self.coefficient, reference=self.reference, bound=self.floor)

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        return _lower_bound(evidence, name=self.name, type_name="agreement_floor", coefficient=self.coefficient,
                            reference=self.reference, bound=self.floor, strict=False)

    def plan(self) -> PlanCheck:
        """The floor against the simulated human majority (the planner's studies have no adjudication)."""
        return lambda studies: studies.floor_passes(self.coefficient, self.floor, strict=False)


def _lower_bound(evidence: Evidence, *, name: str, type_name: str, coefficient: str, reference: str, bound: float,
                 strict: bool) -> CriterionResult:
    """Pass when the lower bound of the judge-vs-reference interval clears ``bound`` (``strict``: exceeds it)."""
    threshold = f"lower CI bound {'>' if strict else '>='} {bound}"
    test = (f"one-sided: the lower bound of the {evidence.level:.0%} interval of {coefficient} "
            f"(judge vs {reference.replace('_', ' ')}) {'above' if strict else 'at or above'} {bound}")
    result = evidence.agreement(coefficient, reference)
    if result is None or result.undefined_reason or not math.isfinite(result.statistic):
        reason = getattr(result, "undefined_reason", None) or "no units with both a judge label and a majority"
        return _fail(name, type_name, test, threshold, reason)
    small = too_small(coefficient, result.n)
    if small:
        return _fail(name, type_name, test, threshold, small, value=result.statistic, n_units=result.n)
    ci = result.confidence_interval()
    if not ci.defined:
        return _fail(name, type_name, test, threshold, "the interval is undefined", value=result.statistic)
    passed = ci.low > bound if strict else ci.low >= bound
    return CriterionResult(name=name, type=type_name, test=test, value=result.statistic, ci_low=ci.low,
                           ci_high=ci.high, ci_level=ci.level, ci_method=ci.method, threshold=threshold, passed=passed,
                           details={"n_units": result.n})


@register_criterion("human_ceiling")
class HumanCeiling:
    """Non-inferiority: judge-annotator agreement at least annotator-annotator agreement minus a margin.

    The difference (mean judge-annotator minus mean annotator-annotator coefficient)
    has an interval from a paired cluster bootstrap over the same units; the
    criterion passes when its lower bound is at or above -margin.
    """

    agreement_bound = None
    counts = False
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"coefficient", "margin", "exclude_flagged"}, where)
        self.coefficient = _param(table, "coefficient", where, str, check=lambda v: v in PAIR_COEFFICIENTS,
                                  allowed=f"one of {list(PAIR_COEFFICIENTS)}")
        self.margin = float(_param(table, "margin", where, _number, check=lambda v: 0 <= v <= 1,
                                   allowed="a number in [0, 1] (0 = at least as close as the humans)"))
        self.name = table.get("name", f"human ceiling ({self.coefficient})")
        self.exclude_flagged = _param(table, "exclude_flagged", where, bool, allowed="true or false (leave out the "
                                      "annotators the policy's [quality] rule flags)") \
            if "exclude_flagged" in table else False

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        threshold = f"lower CI bound of (judge-annotator - annotator-annotator {self.coefficient}) >= {-self.margin}"
        method = method_for("human_ceiling")
        test = (f"non-inferiority: {evidence.level:.0%} paired cluster-bootstrap ({method}) interval of the "
                f"difference, lower bound at or above -margin")
        result = evidence.human_ceiling(self.coefficient)
        details = {"judge_mean": result.judge_mean, "human_mean": result.human_mean, "n_units": result.n,
                   "n_clusters": result.n_clusters, "annotators": result.annotators,
                   "annotator_pairs": result.annotator_pairs}
        if result.undefined_reason or not math.isfinite(result.statistic):
            return _fail(self.name, "human_ceiling", test, threshold,
                         result.undefined_reason or "a mean agreement is undefined", **details)
        small = too_small("human_ceiling", result.n)
        if small:
            return _fail(self.name, "human_ceiling", test, threshold, small, value=result.statistic, **details)
        ci = result.confidence_interval(evidence.level, method)
        if not math.isfinite(ci.low):
            return _fail(self.name, "human_ceiling", test, threshold, "the bootstrap interval is undefined",
                         value=result.statistic, **details)
        lo = ci.low
        return CriterionResult(name=self.name, type="human_ceiling", test=test, value=result.statistic, ci_low=lo,
                               ci_high=ci.high, ci_level=ci.level, ci_method=ci.method,
                               threshold=threshold, passed=lo >= -self.margin,
                               reason=None if lo >= -self.margin else
                               f"the lower bound {lo:.4f} is below {-self.margin} (not shown non-inferior)",
                               details=details)

    def plan(self) -> PlanCheck | str:
        if self.coefficient != "percent_agreement":
            return (f"the planner simulates the ceiling on percent_agreement only (this one uses "
                    f"{self.coefficient})")
        return lambda studies: studies.ceiling_passes(self.margin)


@register_criterion("alt_test")
class AltTest:
    """Calderon et al.'s Alternative Annotator Test: the judge's winning rate over annotators."""

    agreement_bound = None
    counts = False
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    def __init__(self, table: dict[str, Any], where: str) -> None:
        known = {"scoring", "epsilon", "q", "min_humans_per_instance", "min_instances_per_human", "min_winning_rate"}
        _unknown(table, known, where)
        self.settings = {
            "scoring": _param(table, "scoring", where, str, check=lambda v: v in ("accuracy", "neg_rmse"),
                              allowed="'accuracy' or 'neg_rmse'"),
            "epsilon": float(_param(table, "epsilon", where, _number, check=lambda v: 0 <= v < 1,
                                    allowed="a margin in [0, 1)")),
            "q": float(_param(table, "q", where, _number, check=lambda v: 0 < v < 1, allowed="an FDR level in (0, 1)")),
            "min_humans_per_instance": _param(table, "min_humans_per_instance", where, int, check=lambda v: v >= 2,
                                              allowed="an integer >= 2"),
            "min_instances_per_human": _param(table, "min_instances_per_human", where, int, check=lambda v: v >= 2,
                                              allowed="an integer >= 2"),
            "min_winning_rate": float(_param(table, "min_winning_rate", where, _number, check=lambda v: 0 < v <= 1,
                                             allowed="a share in (0, 1]")),
        }
        self.name = table.get("name", "alternative annotator test")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        s = self.settings
        threshold = f"winning rate >= {s['min_winning_rate']} (epsilon {s['epsilon']}, BY q {s['q']})"
        test = (f"per annotator a one-sided paired t-test that the judge's advantage exceeds the annotator's minus "
                f"epsilon {s['epsilon']}, Benjamini-Yekutieli at q {s['q']}; the winning rate counts rejections "
                f"(a test outcome: no sampling interval)")
        result = evidence.alt_test(**s)
        if result.undefined_reason:
            return _fail(self.name, "alt_test", test, threshold, result.undefined_reason, **result.to_dict())
        return CriterionResult(name=self.name, type="alt_test", test=test, value=result.winning_rate,
                               ci_low=math.nan, ci_high=math.nan, ci_level=None, ci_method="",
                               threshold=threshold, passed=result.passed,
                               details={"advantage_probability": result.advantage_probability,
                                        "annotators_tested": result.n, **result.to_dict()})

    def plan(self) -> str:
        return "the alt-test's per-annotator t-tests depend on which annotators label which units; not simulated"


@register_criterion("family_contrast")
class FamilyContrastBound:
    """Equivalence: every family's bias contrast has an interval inside [-bound, +bound].

    The contrast of a family is the mean bias (judge - reference score) of its models
    minus that of the other models, by default adjusted for each model's reference
    positive rate (``contrast = "adjusted"``: a judge whose errors differ by class
    makes every model's bias follow its positive rate, which is not family bias;
    ``"raw"`` takes the difference of means). Its t interval over models
    (``agreement.intervals.model_contrast``) treats models as the replicates. Inside
    the bound at the policy's level is two one-sided tests (TOST) at (1 - level) / 2
    each; requiring it of every family is an intersection-union test, which needs no
    multiplicity correction. A significant contrast inside the bound passes and is
    reported as a finding: a larger study detects ever smaller contrasts, so failing
    on significance would reject better studies of the same judge more often. A
    policy that wants any detectable contrast to fail says ``fail_on_significant =
    true`` (significant: the interval excludes 0, or with ``alpha`` the family's p is
    at or below it).
    """

    MIN_MODELS = 3
    CONTRASTS = ("adjusted", "raw")
    agreement_bound = None
    counts = False
    exclude_flagged = False

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"positive", "max_abs_contrast", "alpha", "adjusted", "contrast", "fail_on_significant",
                         "reference"}, where)
        self.positive = _param(table, "positive", where, list, check=lambda v: len(v) > 0 and all(
            isinstance(x, str) for x in v), allowed="a non-empty list of labels the audited score counts")
        self.bound = float(_param(table, "max_abs_contrast", where, _number, check=lambda v: 0 < v <= 1,
                                  allowed="the equivalence bound on |contrast|, a number in (0, 1]"))
        self.alpha = None
        if "alpha" in table:
            self.alpha = float(_param(table, "alpha", where, _number, check=lambda v: 0 < v < 1,
                                      allowed="a level in (0, 1): a family's p at or below it is significant"))
        self.adjusted = _param(table, "adjusted", where, bool, allowed="true (Holm p) or false (raw p)") \
            if "adjusted" in table else True
        self.contrast = _param(table, "contrast", where, str, check=lambda v: v in self.CONTRASTS,
                               allowed="'adjusted' (for each model's reference positive rate) or 'raw'") \
            if "contrast" in table else "adjusted"
        self.fail_on_significant = _param(table, "fail_on_significant", where, bool, allowed=(
            "true (a contrast detectably different from 0 fails, even inside the bound) or false")) \
            if "fail_on_significant" in table else False
        self.reference = _param(table, "reference", where, str, check=lambda v: v in ("human_majority", "resolved"),
                                allowed="'human_majority' or 'resolved' (the adjudicated label, else the majority)") \
            if "reference" in table else "resolved"
        self.name = table.get("name", "family contrast")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        from agreement.audit import holm

        level = evidence.level
        tolerance = f"inside [-{self.bound}, {self.bound}]"
        threshold = f"every family's {self.contrast} contrast interval {tolerance}" + (
            " and not significant" if self.fail_on_significant else "")
        significance = "its interval excludes 0" + (
            f" or its {'Holm ' if self.adjusted else ''}p <= {self.alpha}" if self.alpha else "")
        test = (f"equivalence (TOST): the {level:.0%} t interval over models of each family's {self.contrast} "
                f"contrast (vs the {self.reference.replace('_', ' ')} reference) inside the bound; a significant "
                f"contrast ({significance}) "
                + ("fails (fail_on_significant)" if self.fail_on_significant else "inside the bound is a finding"))
        result = evidence.family_audit(list(self.positive), reference=self.reference)
        models = [m for m in result.models if m.bias.defined]
        families = sorted({m.family for m in models})
        counts = {f: sum(m.family == f for m in models) for f in families}
        if len(families) < 2 or len(models) < self.MIN_MODELS:
            return _fail(self.name, "family_contrast", test, threshold,
                         f"{len(models)} audited model(s) in {len(families)} family(ies) {counts}: an interval for a "
                         f"family contrast needs at least {self.MIN_MODELS} models with a defined bias in at least "
                         f"2 families (models are the replicates)", models_per_family=counts)
        n_units = sum(m.n for m in models)
        small = too_small("family_contrast", n_units)
        if small:
            return _fail(self.name, "family_contrast", test, threshold, small, models_per_family=counts)
        chosen = {c.family: getattr(c, self.contrast) for c in result.contrasts if c.family in counts}
        if self.contrast == "raw":
            p_of = {c.family: (c.p_holm if self.adjusted else c.p_value) for c in result.contrasts}
        else:
            names = sorted(chosen)
            ps = [chosen[f].p_value for f in names]
            p_of = dict(zip(names, holm(ps) if self.adjusted else ps))
        per_family, failures, findings, worst = {}, [], [], None
        for family in families:
            c = chosen[family]
            raw = next(x.raw for x in result.contrasts if x.family == family)
            p = float(p_of.get(family, math.nan))
            ci = c.confidence_interval()
            lo, hi = ci.low, ci.high
            measured = math.isfinite(lo) and math.isfinite(hi)
            inside = measured and lo >= -self.bound and hi <= self.bound
            significant = measured and (lo > 0 or hi < 0 or (self.alpha is not None and math.isfinite(p)
                                                             and p <= self.alpha))
            per_family[family] = {"contrast": c.statistic, "ci_low": lo, "ci_high": hi, "df": c.df, "p": p,
                                  "n_models": counts[family], "equivalent": bool(inside),
                                  "significant": bool(significant), "undefined_reason": c.undefined_reason,
                                  "raw": raw.to_dict(), "adjusted": next(
                                      x.adjusted for x in result.contrasts if x.family == family).to_dict()}
            text = f"{family}: {c.statistic:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            if not measured:
                failures.append(f"{family}: no interval ({c.undefined_reason})")
            elif not inside:
                failures.append(f"{text} not inside the bound")
            elif significant and self.fail_on_significant:
                failures.append(f"{text} significant (fail_on_significant)")
            elif significant:
                findings.append(f"{text} detectable, below the policy's tolerance of {self.bound}")
            if measured and (worst is None or max(abs(lo), abs(hi)) > max(abs(worst[1]), abs(worst[2]))):
                worst = (c.statistic, lo, hi, c)
        worst = worst or (math.nan, math.nan, math.nan, None)
        reason = "; ".join(failures) if failures else ("finding: " + "; ".join(findings) if findings else None)
        method = worst[3].confidence_interval().method if worst[3] is not None else \
            "pooled-variance t over models (df = models - 2)"
        if self.contrast == "adjusted" and (worst[3] is None or not worst[3].adjusted_for):
            method += "; every model's reference positive rate is equal, so nothing to adjust for"
        return CriterionResult(
            name=self.name, type="family_contrast", test=test, value=worst[0], ci_low=worst[1], ci_high=worst[2],
            ci_level=level, ci_method=method, threshold=threshold, passed=not failures, reason=reason,
            details={"contrasts": per_family, "contrast": self.contrast, "reference": self.reference,
                     "findings": findings, "models_per_family": counts, "n_units": n_units, "note": result.note})

    @property
    def labels(self) -> tuple[str, ...]:
        """The audited score's positive labels."""
        return tuple(self.positive)

    def plan(self) -> str:
        return "needs the models and families of the benchmark, which a design does not describe"


@register_criterion("unscored_share")
class UnscoredShare:
    """The judge's unscored share on the validation sample below a cap."""

    agreement_bound = None
    counts = False
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"max_share", "point_estimate"}, where)
        self.cap = float(_param(table, "max_share", where, _number, **_share))
        self.point = _param(table, "point_estimate", where, bool,
                            allowed="true (compare the observed share) or false (its upper bound, the default)") \
            if "point_estimate" in table else False
        self.name = table.get("name", "unscored share")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        threshold = f"unscored share {'' if self.point else 'upper CI bound '}< {self.cap}"
        test = ("point estimate (the policy says point_estimate = true)" if self.point else
                f"one-sided: the upper bound of the {evidence.level:.0%} Clopper-Pearson interval below the cap "
                f"(rows treated as independent)")
        unscored, total = evidence.unscored()
        if total == 0:
            return _fail(self.name, "unscored_share", test, threshold, "the judge has no row on the validation sample")
        from scipy.stats import beta

        share = unscored / total
        tail = (1.0 - evidence.level) / 2.0
        lo = float(beta.ppf(tail, unscored, total - unscored + 1)) if unscored else 0.0
        hi = float(beta.ppf(1.0 - tail, unscored + 1, total - unscored)) if unscored < total else 1.0
        passed = (share if self.point else hi) < self.cap
        return CriterionResult(name=self.name, type="unscored_share", test=test, value=share, ci_low=lo, ci_high=hi,
                               ci_level=evidence.level, ci_method="Clopper-Pearson", threshold=threshold,
                               passed=passed, details={"unscored": unscored, "total": total})

    def plan(self) -> PlanCheck:
        """Exactly (binomial), from the design's unscored rate."""
        return lambda studies: studies.unscored_passes(self.cap, point=self.point)


@register_criterion("min_units_per_stratum")
class MinUnitsPerStratum:
    """Every sampling stratum has at least ``min_units`` units with a judge and a human label."""

    agreement_bound = None
    counts = True
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"min_units"}, where)
        self.minimum = _param(table, "min_units", where, int, check=lambda v: v >= 1, allowed="an integer >= 1")
        self.name = table.get("name", "units per stratum")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        threshold = f"every stratum >= {self.minimum} validated units"
        test = "design count: units are counted, not estimated (no sampling interval)"
        counts = evidence.units_per_stratum()
        if not counts:
            return _fail(self.name, "min_units_per_stratum", test, threshold, "no stratum has a validated unit")
        low = {k: v for k, v in counts.items() if v < self.minimum}
        return CriterionResult(name=self.name, type="min_units_per_stratum", test=test,
                               value=float(min(counts.values())), ci_low=math.nan, ci_high=math.nan, ci_level=None,
                               ci_method="", threshold=threshold, passed=not low,
                               reason=f"strata below the minimum: {low}" if low else None,
                               details={"units_per_stratum": counts})

    def plan(self) -> str:
        return "a design count: plan the strata's units directly"


_REFERENCE: _Rule = {"check": lambda v: v in ("human_majority", "resolved"),
                     "allowed": "'human_majority' or 'resolved' (the adjudicated label, else the majority)"}


@register_criterion("beats_baselines")
class BeatsBaselines:
    """Built into every policy: the judge beats every constant answer, the majority-class rule and the
    policy's named baseline judges, on the same units, in every coefficient the policy's floors use and
    in accuracy (Aggarwal et al., section 2.1: a score a strategy without understanding can reach is not
    evidence).

    Each difference (judge minus baseline, both against the reference) has a paired cluster-bootstrap
    interval (``agreement.panels.baseline_differences``; the interval method and minimum size of the
    human ceiling, the same kind of paired difference of pair coefficients); every lower bound must
    exceed ``min_lower_bound`` (0 unless the policy tightens it). A policy may tighten this criterion,
    never drop or loosen it.
    """

    agreement_bound = None
    counts = False
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    @classmethod
    def built_in_table(cls, table: dict[str, Any], floors: list[AgreementBound], where: str) -> dict[str, Any]:
        """The floors' reference and coefficients (and percent agreement), tightened by the policy's table:
        its coefficients are added to the floors', which stay in."""
        _param({"coefficients": [], **table}, "coefficients", where, list,
               allowed=f"a list of {list(PAIR_COEFFICIENTS)}")
        coefficients = [*table.get("coefficients", []), *(f.coefficient for f in floors), "percent_agreement"]
        return {"reference": _floors_reference(floors), **table, "coefficients": list(dict.fromkeys(coefficients))}

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"coefficients", "reference", "judges", "min_lower_bound"}, where)
        self.coefficients = tuple(_param(table, "coefficients", where, list, check=lambda v: all(
            c in PAIR_COEFFICIENTS for c in v), allowed=f"a list of {list(PAIR_COEFFICIENTS)}"))
        if "percent_agreement" not in self.coefficients:
            self.coefficients = (*self.coefficients, "percent_agreement")
        self.reference = _param(table, "reference", where, str, **_REFERENCE)
        self.judges = tuple(_param(table, "judges", where, list, check=lambda v: all(isinstance(x, str) for x in v),
                                   allowed="a list of judge names in the study")) if "judges" in table else ()
        self.bound = float(_param(table, "min_lower_bound", where, _number, check=lambda v: 0 <= v < 1,
                                  allowed="a number in [0, 1): a policy may raise the built-in bound 0, not lower it")
                           ) if "min_lower_bound" in table else 0.0
        named = f" and {', '.join(self.judges)}" if self.judges else ""
        self.name = table.get("name", f"beats constant answers{named} ({', '.join(self.coefficients)})")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        method = method_for("human_ceiling")
        threshold = f"every lower CI bound of (judge - baseline) > {self.bound}"
        test = (f"superiority: {evidence.level:.0%} paired cluster-bootstrap ({method}) interval of the judge's "
                f"{' and '.join(self.coefficients)} vs {self.reference.replace('_', ' ')} minus each baseline's, "
                f"on the same units; every lower bound above {self.bound}")
        comparison = evidence.baselines(self.coefficients, self.reference, self.judges)
        rows, failing, binding = [], [], None
        for d in comparison.differences:
            ci = d.confidence_interval(evidence.level, method)
            lo, hi = (ci.low, ci.high) if not d.undefined_reason else (math.nan, math.nan)
            small = (too_small("human_ceiling", d.n, called="a paired difference like the human ceiling's")
                     if not d.undefined_reason else None)
            problem = d.undefined_reason or small or (None if math.isfinite(lo) else "the interval is undefined")
            rows.append({"baseline": d.baseline, "coefficient": d.coefficient, "judge": d.judge_value,
                         "baseline_value": d.baseline_value, "difference": d.statistic, "ci_low": lo,
                         "ci_high": hi, "n_units": d.n, "n_clusters": d.n_clusters, "undefined_reason": problem})
            if problem:
                failing.append(f"{d.baseline} on {d.coefficient}: {problem}")
            elif not lo > self.bound:
                failing.append(f"not shown to beat {d.baseline} on {d.coefficient}: lower bound {lo:.4f} "
                               f"<= {self.bound}")
            if not problem and (binding is None or lo < binding[1].low):
                binding = (d, ci)
        if comparison.undefined_reason:
            failing.insert(0, comparison.undefined_reason)
        details = {"baselines": rows, "n_units": max((r["n_units"] for r in rows), default=0)}
        if binding is None:  # nothing measured: the smallest difference is still reported
            value = min((d.statistic for d in comparison.differences if math.isfinite(d.statistic)),
                        default=math.nan)
            return _fail(self.name, "beats_baselines", test, threshold,
                         "; ".join(failing) or "no baseline could be compared", value=value, **details)
        d, ci = binding
        return CriterionResult(name=self.name, type="beats_baselines", test=test, value=d.statistic, ci_low=ci.low,
                               ci_high=ci.high, ci_level=ci.level, ci_method=ci.method,
                               threshold=threshold, passed=not failing,
                               reason="; ".join(failing) if failing else
                               f"closest baseline: {d.baseline} on {d.coefficient}",
                               details=details)

    def plan(self) -> PlanCheck | str:
        """Against the constant answers (the majority-class rule is one of them); named judges are not simulated."""
        if self.judges:
            return f"named baseline judges ({', '.join(self.judges)}) are not simulated"
        return lambda studies: studies.beats_constants(self.coefficients, self.bound)


@register_criterion("tracks_input")
class TracksInput:
    """Built into every policy: chance-corrected evidence that the judge tracks the input, whatever
    coefficient the floors use: the lower bound of Cohen's kappa against the reference exceeds
    ``min_lower_bound`` (0 unless the policy tightens it). AC1 and raw agreement reward a constant
    answer on skewed data; kappa of a constant answer is 0."""

    agreement_bound = None
    counts = False
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    @classmethod
    def built_in_table(cls, table: dict[str, Any], floors: list[AgreementBound], where: str) -> dict[str, Any]:
        """The floors' reference unless the policy's table names one."""
        return {"reference": _floors_reference(floors), **table}

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"reference", "min_lower_bound"}, where)
        self.reference = _param(table, "reference", where, str, **_REFERENCE)
        self.bound = float(_param(table, "min_lower_bound", where, _number, check=lambda v: 0 <= v < 1,
                                  allowed="a number in [0, 1): a policy may raise the built-in bound 0, not lower it")
                           ) if "min_lower_bound" in table else 0.0
        self.name = table.get("name", f"tracks the input (cohen_kappa vs {self.reference.replace('_', ' ')} > "
                                      f"{self.bound})")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        return _lower_bound(evidence, name=self.name, type_name="tracks_input", coefficient="cohen_kappa",
                            reference=self.reference, bound=self.bound, strict=True)

    def plan(self) -> PlanCheck:
        return lambda studies: studies.floor_passes("cohen_kappa", self.bound, strict=True)


@register_criterion("preregistration")
class Preregistered:
    """Validation that cannot be tuned on: the policy and the judge's calls registered (``accord preregister``)
    before the human labels (``required``), and at most ``max_versions_per_sample`` versions of the judge gated
    on the same human sample (a revised prompt needs a fresh sample: ``accord sample --exclude-labelled``)."""

    agreement_bound = None
    counts = True
    exclude_flagged = False
    labels: tuple[str, ...] = ()

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"required", "max_versions_per_sample"}, where)
        if "required" not in table and "max_versions_per_sample" not in table:
            raise InputError(f"{where}: give required = true and/or max_versions_per_sample")
        self.required = _param(table, "required", where, bool, allowed="true or false") \
            if "required" in table else False
        self.cap = _param(table, "max_versions_per_sample", where, int, check=lambda v: v >= 1,
                          allowed="an integer >= 1") if "max_versions_per_sample" in table else None
        self.name = table.get("name", "preregistration")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        parts = (["policy and judge registered before the human labels"] if self.required else []) + \
            ([f"versions gated on this human sample <= {self.cap}"] if self.cap is not None else [])
        threshold = "; ".join(parts)
        test = "design record: registrations and the gate history are counted, not estimated (no sampling interval)"
        status = getattr(evidence, "registration", None)
        if status is None:
            return _fail(self.name, "preregistration", test, threshold, "no registration status (gate the study "
                         "with accord gate)")
        problems = []
        if self.required and not status["policy_registered_before_labels"]:
            problems.append("the policy was not registered before the human labels (accord preregister)")
        if self.required and not status["judge_registered_before_labels"]:
            problems.append(f"judge {evidence.judge!r}'s calls were not registered before the human labels")
        versions = status["versions_gated_on_sample"]
        if self.cap is not None and versions > self.cap:
            problems.append(f"{versions} versions of judge {evidence.judge!r} gated on this human sample, above "
                            f"the policy's cap of {self.cap} (max_versions_per_sample); draw a fresh sample with "
                            f"accord sample --exclude-labelled")
        return CriterionResult(name=self.name, type="preregistration", test=test, value=float(versions),
                               ci_low=math.nan, ci_high=math.nan, ci_level=None, ci_method="", threshold=threshold,
                               passed=not problems, reason="; ".join(problems) or None, details=dict(status))

    def plan(self) -> str:
        return "no simulation model for this criterion type"


def registration_sentence(status: dict[str, Any]) -> str:
    """One line of the text verdict: registered before the labels, and versions gated on the sample."""
    yes = {True: "yes", False: "no"}
    return (f"preregistration: policy registered before the human labels: "
            f"{yes[status['policy_registered_before_labels']]}; judge's calls: "
            f"{yes[status['judge_registered_before_labels']]}; versions of this judge gated on this human sample: "
            f"{status['versions_gated_on_sample']}")


def _built_in(kind: str) -> BuiltIn:
    """The registered class of a built-in criterion type (``register_criterion`` checked its table method)."""
    return cast(BuiltIn, CRITERIA[kind])


def _floors_reference(floors: list[AgreementBound]) -> str:
    """The reference of a built-in criterion: the first floor's, else the human majority."""
    return floors[0].reference if floors else "human_majority"


@dataclass(frozen=True, kw_only=True)
class Policy:
    path: str
    text: str
    sha256: str
    name: str
    description: str
    settings: dict[str, Any]
    criteria: tuple[Criterion, ...]
    quality: Any = None
    """The ``[quality]`` flag rule (``agreement.quality.FlagRule``), None when the policy has none."""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "name": self.name, "description": self.description,
                "settings": self.settings, "content": self.text}


POLICY_SETTINGS = ("level", "tie_policy", "n_resamples", "seed", "judge", "weighted", "monitoring")
MONITORING = ("fixed", "anytime")
"""fixed: one look when labelling is done (fixed-n intervals); anytime: valid at every look (agreement.anytime)."""


def load_policy(path: str | Path) -> Policy:
    """Parse and validate a policy file; every problem names the file and the criterion."""
    from samples import read_settings

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: policy file not found")
    raw = read_settings(path, "policy file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    head = data.get("policy")
    if not isinstance(head, dict):
        raise InputError(f"{path}: missing [policy] table (name, description, level, tie_policy, n_resamples, seed)")
    where = f"{path} [policy]"
    name = _param(head, "name", where, str, allowed="a policy name")
    description = _param(head, "description", where, str, allowed="what the policy is for")
    try:  # the resampling settings are validated where they are built (samples.resampling)
        resampling = Resampling(
            level=_param(head, "level", where, _number, allowed="a confidence level in (0, 1)"),
            n_resamples=_param(head, "n_resamples", where, int,
                               allowed=f"an integer from {MIN_RESAMPLES} to {MAX_RESAMPLES}"),
            seed=_param(head, "seed", where, int, allowed="an integer seed"))
    except InputError as error:
        raise InputError(f"{where}: {error}") from None
    settings = {
        "level": resampling.level,
        "tie_policy": _param(head, "tie_policy", where, str,
                             check=lambda v: v in ("exclude", "needs-adjudication", "positive", "negative"),
                             allowed="exclude, needs-adjudication, positive or negative"),
        "n_resamples": resampling.n_resamples,
        "seed": resampling.seed,
    }
    if "judge" in head:
        settings["judge"] = _param(head, "judge", where, str, allowed="a judge name")
    settings["weighted"] = _param(head, "weighted", where, bool, allowed="true or false") if "weighted" in head \
        else False
    if "monitoring" in head:
        settings["monitoring"] = _param(head, "monitoring", where, str, check=lambda v: v in MONITORING,
                                        allowed="'fixed' (one look, the default) or 'anytime' (valid at every look)")
    _unknown(head, set(POLICY_SETTINGS) | {"description"}, where)
    tables = data.get("criteria")
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{path}: no [[criteria]]; a policy must state at least one criterion")
    built: dict[int, Criterion] = {}  # by position in the policy
    deferred: list[tuple[int, str, dict[str, Any], str]] = []
    for index, table in enumerate(tables, start=1):
        where = f"{path} criterion #{index}"
        kind = table.get("type") if isinstance(table, dict) else None
        build = CRITERIA.get_one(kind, where=f"{where}: type")  # type: ignore[arg-type]
        if kind in BUILT_IN:
            deferred.append((index, kind, table, where))
        else:
            built[index] = build(table, where)
    floors = [c.agreement_bound for c in built.values() if c.agreement_bound is not None]
    for index, kind, table, where in deferred:  # built-ins read the floors, wherever they stand
        built_in = _built_in(kind)
        built[index] = built_in(built_in.built_in_table(table, floors, where), where)
    criteria = [built[index] for index in sorted(built)]
    for kind in BUILT_IN:
        if kind not in {k for _, k, _, _ in deferred}:
            where = f"{path} built-in {kind}"
            built_in = _built_in(kind)
            criteria.append(built_in(built_in.built_in_table({}, floors, where), where))
    extra = sorted(set(data) - {"policy", "criteria", "quality"})
    if extra:
        raise InputError(f"{path}: unknown top-level table(s) {extra}; expected [policy], [[criteria]] and "
                         f"optionally [quality]")
    quality = _quality_rule(data, criteria, path)
    return Policy(path=str(path), text=raw.decode("utf-8"), sha256=sha256_hex(raw.decode("utf-8")), name=name,
                  description=description, settings=settings, criteria=tuple(criteria), quality=quality)


def _quality_rule(data: dict[str, Any], criteria: Sequence[Criterion], path: Path) -> Any:
    """The policy's ``[quality]`` flag rule; a criterion excluding flagged annotators needs one."""
    from agreement.quality import FlagRule

    rule = FlagRule.from_table(data["quality"], f"{path} [quality]") if "quality" in data else None
    if rule is None and any(c.exclude_flagged for c in criteria):
        raise InputError(f"{path}: a criterion has exclude_flagged = true but the policy has no [quality] table "
                         f"(coefficient, min_upper_bound, unmeasurable) saying who is flagged")
    return rule


def _measure(criterion: Criterion, evidence: Any, policy: Policy) -> CriterionResult:
    """A criterion on the evidence; with ``exclude_flagged`` on the evidence without the flagged annotators,
    its result naming them and why."""
    if not criterion.exclude_flagged:
        return criterion.evaluate(evidence)
    from dataclasses import replace

    from agreement.quality import flagged_annotators

    s = policy.settings
    flagged = flagged_annotators(evidence.table, policy.quality, tie_policy=s["tie_policy"], level=s["level"],
                                 n_resamples=s["n_resamples"], seed=s["seed"])
    result = criterion.evaluate(evidence.without_annotators(flagged) if flagged else evidence)
    named = "; ".join(f"{name} ({why})" for name, why in flagged.items()) or "none flagged"
    return replace(result, threshold=f"{result.threshold}; annotators flagged by the policy's quality rule left "
                                     f"out: {named}", details={**result.details, "excluded_annotators": flagged})


@dataclass(frozen=True, kw_only=True)
class Verdict:
    verdict: str
    judge: str
    results: tuple[CriterionResult, ...]
    policy: Policy
    fingerprints: dict[str, str]
    simulated: bool
    notes: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.verdict == ACCEPT

    def to_dict(self) -> dict[str, Any]:
        body = {"verdict": self.verdict, "judge": self.judge, "criteria": [r.to_dict() for r in self.results],
                "policy": self.policy.to_dict(), "fingerprints": self.fingerprints, "simulated": self.simulated,
                "notes": list(self.notes)}
        body["verdict_sha256"] = sha256_hex(body)
        return body


def evaluate(policy: Policy, evidence: Evidence, *, fingerprints: dict[str, str], simulated: bool,
             notes: tuple[str, ...] = ()) -> Verdict:
    results = tuple(_measure(c, evidence, policy) for c in policy.criteria)
    verdict = ACCEPT if results and all(r.passed for r in results) else REJECT
    return Verdict(verdict=verdict, judge=evidence.judge, results=results, policy=policy,
                   fingerprints=fingerprints, simulated=simulated, notes=notes)


def format_value(result_type: str, value: float | None, *, digits: int = 3) -> str:
    """A criterion's value as shown: an integer where its registered type ``counts`` (units, versions)."""
    if value is None or not math.isfinite(value):
        return "--"
    kind = CRITERIA.get(result_type)
    return str(int(value)) if kind is not None and kind.counts else f"{value:.{digits}f}"


_BOUND_SUFFIXES = (", lower bound", ", upper bound")


def measurable(c: Any) -> bool:
    """Whether a criterion (result or record) has a number to show: a finite value and no ``UNMEASURABLE`` reason."""
    return (c.value is not None and math.isfinite(c.value)) and not (c.reason or "").startswith(UNMEASURABLE)


def criterion_line(c: Any) -> str:
    """One criterion as every view prints it (CLI, run summary, report cards, dashboard): the estimate by its
    name, its interval, the bound compared and the result, e.g. "gwet_ac1 vs human majority 0.313, 95% CI
    [0.140, 0.487]; needs lower CI bound >= 0.3: FAIL". An unmeasurable criterion shows its reason, no number.
    ``c``: a ``CriterionResult`` or the verdict document's record of one (the same fields)."""
    estimate = next((c.name[:-len(s)] for s in _BOUND_SUFFIXES if c.name.endswith(s)), c.name)
    result = "PASS" if c.passed else "FAIL"
    reason = c.reason or ""
    if not measurable(c):
        return f"{estimate}: {reason or 'cannot be measured'}; needs {c.threshold}: {result}"
    text = f"{estimate} {format_value(c.type, c.value)}"
    low, high = c.ci_low, c.ci_high
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        level = f"{c.ci_level:.0%} " if c.ci_level else ""
        text += f", {level}CI [{low:.3f}, {high:.3f}]"
    return f"{text}; needs {c.threshold}: {result}" + (f" ({reason})" if reason else "")


def format_verdict(verdict: Verdict) -> str:
    """Plain-text verdict: one line per criterion (``criterion_line``), then its test and interval method."""
    lines = [f"{verdict.verdict}: judge {verdict.judge!r} under policy {verdict.policy.name!r} "
             f"(sha256 {verdict.policy.sha256[:12]})"]
    for note in verdict.notes:
        lines.append(f"NOTE: {note}")
    for r in verdict.results:
        lines.append(f"  {criterion_line(r)}")
        method = f"; interval: {r.ci_method}" if r.ci_method and math.isfinite(r.ci_low) else ""
        lines.append(f"        test: {r.test}{method}")
    return "\n".join(lines)


def study_operating_point(policy: Policy, evidence: Any) -> dict[str, Any]:
    """The study's own design on the policy's OC curve (``agreement.plan.operating_point``)."""
    from agreement.plan import operating_point

    floor = next((c.agreement_bound for c in policy.criteria if c.agreement_bound is not None), None)
    coefficient = floor.coefficient if floor else "percent_agreement"
    if getattr(evidence, "section", None) is None:
        return {"undefined_reason": "no human labels on the judge's units"}
    report = evidence.section.report
    estimate = evidence.agreement(coefficient, floor.reference if floor else "human_majority")
    majority = report.majority
    if (estimate is None or majority is None or report.human_panel is None or not estimate.n
            or not math.isfinite(estimate.statistic)):
        return {"undefined_reason": f"needs a defined {coefficient} vs a human majority of at least two annotators"}
    codes = majority.codes[majority.codes >= 0]
    positive = evidence.section.positive
    if positive is None:
        return {"undefined_reason": "the planner models binary labels only"}
    rate = float(np.mean(codes == list(report.categories).index(positive)))
    if not 0 < rate < 1:  # the planner simulates both labels: one label everywhere leaves no curve to read
        return {"undefined_reason": f"the human majority gives every unit the same label ({positive!r} on "
                                    f"{rate:.0%} of {codes.size} units): the planner needs both labels"}
    clusters = evidence.table.loc[evidence.table["source"] == "human"].drop_duplicates("unit")["cluster"].nunique()
    unscored, total = evidence.unscored()
    return operating_point(policy, units=int(estimate.n), annotators=len(report.humans), positive_rate=rate,
                           human_agreement=float(report.human_panel.mean_pairwise_agreement),
                           turns_per_trajectory=estimate.n / max(1, clusters), observed=float(estimate.statistic),
                           coefficient=coefficient, unscored_rate=unscored / total if total else 0.0)


def first_turn_document(study: Any, judge: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Human first recognition turns against the judge's t* (``agreement.panels.study_first_turns``)."""
    from agreement.panels import study_first_turns

    result = study_first_turns(study, judge, n_resamples=settings["n_resamples"], seed=settings["seed"],
                               level=settings["level"])
    if isinstance(result, str):
        return {"undefined_reason": result}
    return {"n": result.n, "n_human_only": result.n_human_only, "n_judge_only": result.n_judge_only,
            **{name: getattr(result, name).to_dict()
               for name in ("exact", "within_one", "mean_absolute_difference", "mean_difference")}}


def judge_sample_fingerprint(table: Any, judge: str) -> str:
    """sha256 of a judge's labels on the sampled units: a score checks they did not change since the gate."""
    rows = table[(table["source"] == "judge") & (table["rater"] == judge)].sort_values("unit")
    return sha256_hex([[u, lab if isinstance(lab, str) else None]
                       for u, lab in zip(rows["unit"].tolist(), rows["label"].tolist())])


CALL_SHOWN = ("unit_kind", "provider", "model", "prompt_sha256", "rule", "output", "parse_mode", "params",
              "fingerprint")
"""Parts of a validated call the text verdict prints (the verdict file keeps all of them)."""


def check_policy_labels(policy: Policy, evidence: Any) -> None:
    """Every label the policy names is a label of the scheme the judge's units are compared in: a
    criterion must never pass on a label nobody can give (a case typo turned REJECT into ACCEPT)."""
    kinds, labels = evidence.kinds, evidence.scheme_labels
    for index, criterion in enumerate(policy.criteria, start=1):
        unknown = [x for x in criterion.labels if x not in labels]
        if unknown:
            raise InputError(f"{policy.path} criterion #{index} ({criterion.name}): label(s) {unknown} are not in "
                             f"the labels of unit kind(s) {kinds} that judge {evidence.judge!r} is gated on: "
                             f"{list(labels)}")


def gate_study(study: Any, policy_path: str | Path, *, judges: list[str] | None = None,
               sequential: bool = False) -> tuple[dict[str, Any], str]:
    """Evaluate the policy for each judge of a study; return the verdict document and its text.

    Under ``monitoring = "anytime"`` (or ``sequential``) each judge's verdict is the
    anytime gate's (``agreement.anytime``): ACCEPT, REJECT or CONTINUE, with the look
    at which it was decided; the fixed-n results stand beside it.
    """
    from agreement.identity import judge_identity
    from agreement.preregistration import human_sample_sha256, record_gating, registration_status
    from agreement.study_io import SIMULATED_NOTE, labels_table
    from agreement.validation import GateEvidence
    from samples import StudyLayout

    policy = load_policy(policy_path)
    table = labels_table(study)
    present = sorted(set(table.loc[table["source"] == "judge", "rater"].unique()))
    names = judges or ([policy.settings["judge"]] if "judge" in policy.settings else present)
    if not names:
        raise InputError(f"{study.root}: no judge labels on the sampled units; nothing to gate")
    s = policy.settings
    notes = (SIMULATED_NOTE,) if study.simulated else ()
    verdicts, texts = {}, []
    layout = StudyLayout.of(study.root)
    gated = []
    for judge in names:
        kinds = set(table.loc[(table["source"] == "judge") & (table["rater"] == judge), "kind"].unique())
        mine = table[table["kind"].isin(kinds) & ((table["source"] == "human") | (table["rater"] == judge))]
        identity = judge_identity(study, judge, units=set(mine["unit"].unique()))
        human_sample = human_sample_sha256(mine)
        registration = registration_status(study, policy, judge, identity, human_sample)
        evidence = GateEvidence(table, judge=judge, tie_policy=s["tie_policy"], level=s["level"],
                                n_resamples=s["n_resamples"], seed=s["seed"], weighted=s["weighted"],
                                registration=registration)
        check_policy_labels(policy, evidence)
        verdict = evaluate(policy, evidence, fingerprints=study.fingerprints, simulated=study.simulated, notes=notes)
        body = verdict.to_dict()
        body["judge_sample_sha256"] = judge_sample_fingerprint(table, judge)
        body["judge_identity"] = identity
        body["preregistration"] = registration
        gated.append((human_sample, judge, identity["sha256"]))
        body["operating_characteristic"] = study_operating_point(policy, evidence)
        body["first_turn_agreement"] = first_turn_document(study, judge, s)
        oc = body["operating_characteristic"]
        calls = "; ".join(", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k in CALL_SHOWN)
                          for c in body["judge_identity"]["calls"])
        text = (format_verdict(verdict) + f"\n  operating characteristic: "
                f"{oc.get('sentence') or oc.get('undefined_reason')}\n  validated call(s): {calls}"
                f"\n  {registration_sentence(registration)}")
        if sequential or s.get("monitoring") == "anytime":
            body, text = _with_sequential(study, policy, table, judge, verdict, body, text)
        verdicts[judge] = body
        texts.append(text)
    for human_sample, judge, identity_sha in gated:  # only once every judge was gated: no half-written history
        record_gating(layout, human_sample, judge, identity_sha)
    outcomes = {v["verdict"] for v in verdicts.values()}
    overall = ACCEPT if outcomes == {ACCEPT} else REJECT if REJECT in outcomes else CONTINUE
    document = {"verdict": overall, "judges": verdicts, "policy": policy.to_dict(), "fingerprints": study.fingerprints,
                "simulated": study.simulated, "notes": list(notes), "cluster": study.cluster}
    return document, "\n\n".join(texts)


def _with_sequential(study: Any, policy: Policy, table: Any, judge: str, verdict: Verdict, body: dict[str, Any],
                     text: str) -> tuple[dict[str, Any], str]:
    """The judge's verdict replaced by the anytime gate's outcome; the fixed-n verdict kept beside it."""
    from agreement.anytime import adaptive_order, label_arrival, labelling_complete, sequential_verdict

    complete, why = labelling_complete(study)
    adaptive = adaptive_order(study.root)
    if adaptive:
        outcome = body["verdict"] if complete else CONTINUE
        body = {**body, "fixed_n_verdict": body["verdict"], "verdict": outcome,
                "sequential": {"outcome": outcome, "labelling": why, "not_applied": adaptive}}
        return body, text + f"\n  anytime: {outcome} ({adaptive})\n    labelling: {why}"
    result = sequential_verdict(policy, table, judge, complete=complete,
                                end_results={r.name: r.passed for r in verdict.results},
                                arrival=label_arrival(study.human))
    body = {**body, "fixed_n_verdict": body["verdict"], "verdict": result.outcome,
            "sequential": {**result.to_dict(), "labelling": why}}
    return body, text + "\n" + format_sequential(result, why)


def format_sequential(result: Any, labelling: str) -> str:
    """The anytime gate's lines: the outcome, where it was decided, and each criterion's sequential method."""
    if result.decided_at is not None:
        head = (f"  anytime ({result.level:.0%}, valid at every look): {result.outcome} at look {result.decided_at} "
                f"({result.units_at_decision} of {result.units} units)")
    else:
        more = f"; about {result.further} more units expected" if result.further is not None else ""
        head = f"  anytime ({result.level:.0%}, valid at every look): CONTINUE after {result.units} units{more}"
    lines = [head, f"    labelling: {labelling}"]
    for c in result.criteria:
        if c.decisions is None:
            lines.append(f"    {c.name}: {c.method}")
            continue
        decision = c.decisions[-1] if c.decisions.size else "UNDECIDED"
        at = c.decided_at()
        where = f" at look {at + 1}" if at is not None else ""
        interval = (f", sequence [{c.ci_low:.4f}, {c.ci_high:.4f}]"
                    if math.isfinite(c.ci_low) and math.isfinite(c.ci_high) else "")
        lines.append(f"    {decision}{where}  {c.name}: {format_value(c.type, c.statistic)}{interval}; "
                     f"needs {c.threshold} ({c.method})")
    return "\n".join(lines)
