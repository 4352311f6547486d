"""The built-in gate criterion types, each registered with ``register_criterion`` as a third party's would be.

Agreement floors, the human ceiling, the alternative annotator test, the family contrast, the unscored
share, units per stratum and the preregistration check, and the two types every policy carries
(``BUILT_IN``): ``beats_baselines`` and ``tracks_input``, whose tables start from the policy's floors.
``agreement.criteria.CRITERIA`` imports this module on its first look-up.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from agreement.criteria import (
    AgreementBound,
    CriterionResult,
    Evidence,
    _fail,
    _number,
    _param,
    _unknown,
    register_criterion,
)
from agreement.intervals import method_for, too_small
from agreement.panels import PAIR_COEFFICIENTS
from samples import InputError

if TYPE_CHECKING:
    from agreement.plan import PlanCheck


class _Rule(TypedDict):
    """A parameter's check and the words naming what it allows (``_param``'s keywords)."""

    check: Callable[[Any], bool]
    allowed: str


_share: _Rule = {"check": lambda v: 0.0 <= v <= 1.0, "allowed": "a number in [0, 1]"}


class _Capabilities:
    """What a criterion tells the planner and the gate when it says nothing else: no agreement floor, no
    counting, flagged units kept, no labels of its own (``agreement.criteria.Criterion``)."""

    agreement_bound: Any = None
    counts = False
    exclude_flagged = False
    labels: tuple[str, ...] = ()


@register_criterion("agreement_floor")
class AgreementFloor(_Capabilities):
    """Lower CI bound of judge-vs-reference agreement at or above a floor."""

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
class HumanCeiling(_Capabilities):
    """Non-inferiority: judge-annotator agreement at least annotator-annotator agreement minus a margin.

    The difference (mean judge-annotator minus mean annotator-annotator coefficient)
    has an interval from a paired cluster bootstrap over the same units; the
    criterion passes when its lower bound is at or above -margin.
    """

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
class AltTest(_Capabilities):
    """Calderon et al.'s Alternative Annotator Test: the judge's winning rate over annotators."""

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

    agreement_bound = None
    counts = False
    exclude_flagged = False

    MIN_MODELS = 3
    CONTRASTS = ("adjusted", "raw")

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
class UnscoredShare(_Capabilities):
    """The judge's unscored share on the validation sample below a cap."""

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
class MinUnitsPerStratum(_Capabilities):
    """Every sampling stratum has at least ``min_units`` units with a judge and a human label."""

    counts = True

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
class BeatsBaselines(_Capabilities):
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
class TracksInput(_Capabilities):
    """Built into every policy: chance-corrected evidence that the judge tracks the input, whatever
    coefficient the floors use: the lower bound of Cohen's kappa against the reference exceeds
    ``min_lower_bound`` (0 unless the policy tightens it). AC1 and raw agreement reward a constant
    answer on skewed data; kappa of a constant answer is 0."""

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
class Preregistered(_Capabilities):
    """Validation that cannot be tuned on: the policy and the judge's calls registered (``accord preregister``)
    before the human labels (``required``), and at most ``max_versions_per_sample`` versions of the judge gated
    on the same human sample (a revised prompt needs a fresh sample: ``accord sample --exclude-labelled``)."""

    counts = True

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


def _floors_reference(floors: list[AgreementBound]) -> str:
    """The reference of a built-in criterion: the first floor's, else the human majority."""
    return floors[0].reference if floors else "human_majority"
