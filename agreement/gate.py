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
the policy says so for that criterion (``point_estimate = true``). Interval methods
and the sizes below which they are not trusted come from the coverage study
(``agreement.intervals``).

The verdict file (STUDY/gate/verdict.json) holds the verdict, every criterion's
test, value, interval, threshold and result, the policy's content and sha256, and the
fingerprints of the input files, so a score can cite the verdict it rests on.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from agreement.intervals import method_for, pooled_t_contrast, too_small
from agreement.panels import PAIR_COEFFICIENTS
from samples.canonical import sha256_hex
from samples.errors import InputError

ACCEPT, REJECT = "ACCEPT", "REJECT"


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
    def family_audit(self, positive: list[str]) -> Any: ...
    def unscored(self) -> tuple[int, int]: ...
    def units_per_stratum(self) -> dict[str, int]: ...


class Criterion(Protocol):
    """A gate criterion: built from its policy table, evaluated on the evidence."""

    name: str

    def evaluate(self, evidence: Evidence) -> CriterionResult: ...


CRITERIA: dict[str, Callable[[dict[str, Any], str], Criterion]] = {}


def register_criterion(type_name: str) -> Callable[[type], type]:
    """Register a criterion class under the policy's ``type`` name."""

    def wrap(cls: type) -> type:
        CRITERIA[type_name] = cls
        cls.type_name = type_name
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


_share = dict(check=lambda v: 0.0 <= v <= 1.0, allowed="a number in [0, 1]")
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

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"coefficient", "reference", "min_lower_bound"}, where)
        self.coefficient = _param(table, "coefficient", where, str, check=lambda v: v in PAIR_COEFFICIENTS,
                                  allowed=f"one of {list(PAIR_COEFFICIENTS)}")
        self.reference = _param(table, "reference", where, str, check=lambda v: v in ("human_majority", "resolved"),
                                allowed="'human_majority' or 'resolved' (the adjudicated label, else the majority)")
        self.floor = float(_param(table, "min_lower_bound", where, _number, check=lambda v: -1 <= v <= 1,
                                  allowed="a number in [-1, 1]"))
        self.name = table.get("name", f"{self.coefficient} vs {self.reference.replace('_', ' ')}, lower bound")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        threshold = f"lower CI bound >= {self.floor}"
        test = (f"one-sided: the lower bound of the {evidence.level:.0%} interval of {self.coefficient} "
                f"(judge vs {self.reference.replace('_', ' ')}) at or above the floor")
        result = evidence.agreement(self.coefficient, self.reference)
        if result is None or result.undefined_reason or not math.isfinite(result.statistic):
            reason = getattr(result, "undefined_reason", None) or "no units with both a judge label and a majority"
            return _fail(self.name, "agreement_floor", test, threshold, reason)
        small = too_small(self.coefficient, result.n)
        if small:
            return _fail(self.name, "agreement_floor", test, threshold, small, value=result.statistic,
                         n_units=result.n)
        lo, hi = result.confidence_interval()
        if not math.isfinite(lo):
            return _fail(self.name, "agreement_floor", test, threshold, "the interval is undefined",
                         value=result.statistic)
        return CriterionResult(name=self.name, type="agreement_floor", test=test, value=result.statistic, ci_low=lo,
                               ci_high=hi, ci_level=result.level, ci_method=result.method, threshold=threshold,
                               passed=lo >= self.floor, details={"n_units": result.n})


@register_criterion("human_ceiling")
class HumanCeiling:
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
        lo, hi = result.confidence_interval(evidence.level, method)
        if not math.isfinite(lo):
            return _fail(self.name, "human_ceiling", test, threshold, "the bootstrap interval is undefined",
                         value=result.statistic, **details)
        return CriterionResult(name=self.name, type="human_ceiling", test=test, value=result.statistic, ci_low=lo,
                               ci_high=hi, ci_level=evidence.level, ci_method=f"paired cluster bootstrap, {method}",
                               threshold=threshold, passed=lo >= -self.margin,
                               reason=None if lo >= -self.margin else
                               f"the lower bound {lo:.4f} is below {-self.margin} (not shown non-inferior)",
                               details=details)


@register_criterion("alt_test")
class AltTest:
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


@register_criterion("family_contrast")
class FamilyContrastBound:
    """Equivalence: every family's bias contrast has an interval inside [-bound, +bound].

    The contrast of a family is the mean bias (judge - human score) of its models
    minus that of the other models; its interval (pooled-variance t over the models'
    biases, ``agreement.intervals``) treats models as the replicates, so it needs at
    least 3 models with a defined bias. Inside the bound at the policy's level is two
    one-sided tests (TOST) at (1 - level) / 2 each; requiring it of every family is an
    intersection-union test, which needs no multiplicity correction. A significant
    contrast fails: its interval excludes 0, or (with ``alpha``) its permutation p is
    at or below alpha. A non-significant contrast never passes by itself.
    """

    MIN_MODELS = 3

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"positive", "max_abs_contrast", "alpha", "adjusted"}, where)
        self.positive = _param(table, "positive", where, list, check=lambda v: len(v) > 0 and all(
            isinstance(x, str) for x in v), allowed="a non-empty list of labels the audited score counts")
        self.bound = float(_param(table, "max_abs_contrast", where, _number, check=lambda v: 0 < v <= 1,
                                  allowed="the equivalence bound on |contrast|, a number in (0, 1]"))
        self.alpha = None
        if "alpha" in table:
            self.alpha = float(_param(table, "alpha", where, _number, check=lambda v: 0 < v < 1,
                                      allowed="a level in (0, 1): a permutation p at or below it fails"))
        self.adjusted = _param(table, "adjusted", where, bool, allowed="true (Holm p) or false (raw p)") \
            if "adjusted" in table else True
        self.name = table.get("name", "family contrast")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        level = evidence.level
        threshold = f"every family's interval inside [-{self.bound}, {self.bound}] and not significant"
        test = (f"equivalence (TOST): the {level:.0%} pooled-t interval over models of each family's contrast inside "
                f"the bound; a contrast whose interval excludes 0"
                + (f" or whose {'Holm ' if self.adjusted else ''}permutation p <= {self.alpha}" if self.alpha else "")
                + " fails")
        result = evidence.family_audit(list(self.positive))
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
        bias = np.array([m.bias.statistic for m in models])
        labels = np.array([m.family for m in models])
        p_of = {c.family: (c.p_holm if self.adjusted else c.p_value) for c in result.contrasts}
        per_family, failures, worst = {}, [], None
        for family in families:
            contrast, lo, hi, df = pooled_t_contrast(bias, labels == family, level)
            p = p_of.get(family, math.nan)
            inside = lo >= -self.bound and hi <= self.bound
            significant = lo > 0 or hi < 0 or (self.alpha is not None and math.isfinite(p) and p <= self.alpha)
            per_family[family] = {"contrast": contrast, "ci_low": lo, "ci_high": hi, "df": df, "p": p,
                                  "n_models": counts[family], "equivalent": bool(inside),
                                  "significant": bool(significant)}
            if not inside or significant:
                failures.append(family)
            if worst is None or max(abs(lo), abs(hi)) > max(abs(worst[1]), abs(worst[2])):
                worst = (contrast, lo, hi)
        reason = None
        if failures:
            reason = "; ".join(
                f"{f}: {per_family[f]['contrast']:+.3f} "
                f"[{per_family[f]['ci_low']:+.3f}, {per_family[f]['ci_high']:+.3f}]"
                + (" significant" if per_family[f]["significant"] else " not inside the bound") for f in failures)
        return CriterionResult(
            name=self.name, type="family_contrast", test=test, value=worst[0], ci_low=worst[1], ci_high=worst[2],
            ci_level=level, ci_method="pooled-variance t over models (df = models - 2)", threshold=threshold,
            passed=not failures, reason=reason,
            details={"contrasts": per_family, "models_per_family": counts, "n_units": n_units, "note": result.note})


@register_criterion("unscored_share")
class UnscoredShare:
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


@register_criterion("min_units_per_stratum")
class MinUnitsPerStratum:
    """Every sampling stratum has at least ``min_units`` units with a judge and a human label."""

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


@dataclass(frozen=True, kw_only=True)
class Policy:
    path: str
    text: str
    sha256: str
    name: str
    description: str
    settings: dict[str, Any]
    criteria: tuple[Any, ...]
    quality: Any = None
    """The ``[quality]`` flag rule (``agreement.quality.FlagRule``), None when the policy has none."""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "name": self.name, "description": self.description,
                "settings": self.settings, "content": self.text}


POLICY_SETTINGS = ("level", "tie_policy", "n_resamples", "seed", "judge", "weighted")


def load_policy(path: str | Path) -> Policy:
    """Parse and validate a policy file; every problem names the file and the criterion."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: policy file not found") from None
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
    settings = {
        "level": float(_param(head, "level", where, _number, check=lambda v: 0 < v < 1,
                              allowed="a confidence level in (0, 1)")),
        "tie_policy": _param(head, "tie_policy", where, str,
                             check=lambda v: v in ("exclude", "needs-adjudication", "positive", "negative"),
                             allowed="exclude, needs-adjudication, positive or negative"),
        "n_resamples": _param(head, "n_resamples", where, int, check=lambda v: v >= 100, allowed="an integer >= 100"),
        "seed": _param(head, "seed", where, int, allowed="an integer seed"),
    }
    if "judge" in head:
        settings["judge"] = _param(head, "judge", where, str, allowed="a judge name")
    settings["weighted"] = _param(head, "weighted", where, bool, allowed="true or false") if "weighted" in head \
        else False
    _unknown(head, set(POLICY_SETTINGS) | {"description"}, where)
    tables = data.get("criteria")
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{path}: no [[criteria]]; a policy must state at least one criterion")
    criteria = []
    for index, table in enumerate(tables, start=1):
        where = f"{path} criterion #{index}"
        kind = table.get("type")
        if kind not in CRITERIA:
            raise InputError(f"{where}: type = {kind!r}; known criterion types: {sorted(CRITERIA)}")
        criteria.append(CRITERIA[kind](table, where))
    extra = sorted(set(data) - {"policy", "criteria", "quality"})
    if extra:
        raise InputError(f"{path}: unknown top-level table(s) {extra}; expected [policy], [[criteria]] and "
                         f"optionally [quality]")
    quality = _quality_rule(data, criteria, path)
    return Policy(path=str(path), text=raw.decode("utf-8"), sha256=sha256_hex(raw.decode("utf-8")), name=name,
                  description=description, settings=settings, criteria=tuple(criteria), quality=quality)


def _quality_rule(data: dict[str, Any], criteria: list[Any], path: Path) -> Any:
    """The policy's ``[quality]`` flag rule; a criterion excluding flagged annotators needs one."""
    from agreement.quality import FlagRule

    rule = FlagRule.from_table(data["quality"], f"{path} [quality]") if "quality" in data else None
    if rule is None and any(getattr(c, "exclude_flagged", False) for c in criteria):
        raise InputError(f"{path}: a criterion has exclude_flagged = true but the policy has no [quality] table "
                         f"(coefficient, min_upper_bound, unmeasurable) saying who is flagged")
    return rule


def _measure(criterion: Any, evidence: Any, policy: Policy) -> CriterionResult:
    """A criterion on the evidence; with ``exclude_flagged`` on the evidence without the flagged annotators,
    its result naming them and why."""
    if not getattr(criterion, "exclude_flagged", False):
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


COUNT_CRITERIA = frozenset({"min_units_per_stratum"})
"""Criterion types whose value is a count of units (printed as an integer)."""


def format_value(result_type: str, value: float | None, *, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "--"
    return str(int(value)) if result_type in COUNT_CRITERIA else f"{value:.{digits}f}"


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

    floor = next((c for c in policy.criteria if isinstance(c, AgreementFloor)), None)
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
    return sha256_hex([[u, lab if isinstance(lab, str) else None] for u, lab in zip(rows["unit"], rows["label"])])


def gate_study(study: Any, policy_path: str | Path, *, judges: list[str] | None = None) -> tuple[dict[str, Any], str]:
    """Evaluate the policy for each judge of a study; return the verdict document and its text."""
    from agreement.study_io import SIMULATED_NOTE, labels_table
    from agreement.validation import GateEvidence

    policy = load_policy(policy_path)
    table = labels_table(study)
    present = sorted(set(table.loc[table["source"] == "judge", "rater"]))
    names = judges or ([policy.settings["judge"]] if "judge" in policy.settings else present)
    if not names:
        raise InputError(f"{study.root}: no judge labels on the sampled units; nothing to gate")
    s = policy.settings
    notes = (SIMULATED_NOTE,) if study.simulated else ()
    verdicts, texts = {}, []
    for judge in names:
        evidence = GateEvidence(table, judge=judge, tie_policy=s["tie_policy"], level=s["level"],
                                n_resamples=s["n_resamples"], seed=s["seed"], weighted=s["weighted"])
        verdict = evaluate(policy, evidence, fingerprints=study.fingerprints, simulated=study.simulated, notes=notes)
        body = verdict.to_dict()
        body["judge_sample_sha256"] = judge_sample_fingerprint(table, judge)
        body["operating_characteristic"] = study_operating_point(policy, evidence)
        body["first_turn_agreement"] = first_turn_document(study, judge, s)
        verdicts[judge] = body
        oc = body["operating_characteristic"]
        texts.append(format_verdict(verdict) + f"\n  operating characteristic: "
                     f"{oc.get('sentence') or oc.get('undefined_reason')}")
    overall = ACCEPT if all(v["verdict"] == ACCEPT for v in verdicts.values()) else REJECT
    document = {"verdict": overall, "judges": verdicts, "policy": policy.to_dict(), "fingerprints": study.fingerprints,
                "simulated": study.simulated, "notes": list(notes)}
    return document, "\n\n".join(texts)
