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

The verdict file (STUDY/gate/verdict.json) holds the verdict, every criterion's
value, interval, threshold and result, the policy's content and sha256, and the
fingerprints of the input files, so a score can cite the verdict it rests on.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agreement.panels import PAIR_COEFFICIENTS
from samples.canonical import sha256_hex
from samples.errors import InputError

ACCEPT, REJECT = "ACCEPT", "REJECT"


@dataclass(frozen=True, kw_only=True)
class CriterionResult:
    """One criterion's measurement and decision."""

    name: str
    type: str
    value: float
    ci_low: float
    ci_high: float
    threshold: str
    passed: bool
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        clean = (lambda x: x if isinstance(x, (int, float)) and math.isfinite(x) else None)
        return {"name": self.name, "type": self.type, "value": clean(self.value), "ci_low": clean(self.ci_low),
                "ci_high": clean(self.ci_high), "threshold": self.threshold, "passed": self.passed,
                "reason": self.reason, "details": self.details}


class Evidence(Protocol):
    """What criteria measure against; built by ``agreement.validation.GateEvidence``."""

    judge: str

    def agreement(self, coefficient: str, reference: str) -> Any:
        """An ``Estimate`` (statistic, interval at the policy's level) or None."""
    def human_ceiling(self, coefficient: str) -> tuple[float, float, dict[str, Any]]: ...
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


def _fail(name: str, type_name: str, threshold: str, reason: str, **details: Any) -> CriterionResult:
    return CriterionResult(name=name, type=type_name, value=math.nan, ci_low=math.nan, ci_high=math.nan,
                           threshold=threshold, passed=False, reason=f"cannot be measured: {reason}", details=details)


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
        result = evidence.agreement(self.coefficient, self.reference)
        if result is None or result.undefined_reason or not math.isfinite(result.statistic):
            reason = getattr(result, "undefined_reason", None) or "no units with both a judge label and a majority"
            return _fail(self.name, "agreement_floor", threshold, reason)
        lo, hi = result.confidence_interval()
        if not math.isfinite(lo):
            return _fail(self.name, "agreement_floor", threshold, "the interval is undefined",
                         statistic=result.statistic)
        return CriterionResult(name=self.name, type="agreement_floor", value=result.statistic, ci_low=lo, ci_high=hi,
                               threshold=threshold, passed=lo >= self.floor, details={"n_units": result.n})


@register_criterion("human_ceiling")
class HumanCeiling:
    """The judge agrees with each annotator at least as well as annotators agree with each other (minus a margin)."""

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
        threshold = f"mean judge-annotator {self.coefficient} >= mean annotator-annotator - {self.margin}"
        judge_mean, human_mean, details = evidence.human_ceiling(self.coefficient)
        if not (math.isfinite(judge_mean) and math.isfinite(human_mean)):
            reason = details.pop("reason", "a mean agreement is undefined")
            return _fail(self.name, "human_ceiling", threshold, reason, **details)
        value = judge_mean - human_mean
        return CriterionResult(name=self.name, type="human_ceiling", value=value, ci_low=math.nan, ci_high=math.nan,
                               threshold=threshold, passed=value >= -self.margin,
                               details={"judge_mean": judge_mean, "human_mean": human_mean, **details})


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
        result = evidence.alt_test(**s)
        if result.undefined_reason:
            return _fail(self.name, "alt_test", threshold, result.undefined_reason, **result.to_dict())
        return CriterionResult(name=self.name, type="alt_test", value=result.winning_rate, ci_low=math.nan,
                               ci_high=math.nan, threshold=threshold, passed=result.passed,
                               details={"advantage_probability": result.advantage_probability,
                                        "annotators_tested": result.n, **result.to_dict()})


@register_criterion("family_contrast")
class FamilyContrastBound:
    """No family's bias contrast beyond a bound, or its permutation p above alpha."""

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"positive", "max_abs_contrast", "alpha", "adjusted"}, where)
        self.positive = _param(table, "positive", where, list, check=lambda v: len(v) > 0 and all(
            isinstance(x, str) for x in v), allowed="a non-empty list of labels the audited score counts")
        self.bound = table.get("max_abs_contrast")
        self.alpha = table.get("alpha")
        if self.bound is None and self.alpha is None:
            raise InputError(f"{where}: give max_abs_contrast (a bound on |contrast|) and/or alpha "
                             f"(the permutation p must exceed it)")
        if self.bound is not None:
            self.bound = float(_param(table, "max_abs_contrast", where, _number, **_share))
        if self.alpha is not None:
            self.alpha = float(_param(table, "alpha", where, _number, check=lambda v: 0 < v < 1,
                                      allowed="a level in (0, 1)"))
        self.adjusted = _param(table, "adjusted", where, bool, allowed="true (Holm p) or false (raw p)") \
            if "adjusted" in table else True
        self.name = table.get("name", "family contrast")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        parts = []
        if self.bound is not None:
            parts.append(f"|contrast| <= {self.bound}")
        if self.alpha is not None:
            parts.append(f"{'Holm ' if self.adjusted else ''}p > {self.alpha}")
        threshold = " or ".join(parts) + " for every family"
        result = evidence.family_audit(list(self.positive))
        contrasts = [c for c in result.contrasts if c.undefined_reason is None]
        if not contrasts:
            return _fail(self.name, "family_contrast", threshold,
                         "fewer than two model families with defined bias (nothing to contrast)")
        worst, failures = math.nan, []
        for c in contrasts:
            p = c.p_holm if self.adjusted else c.p_value
            ok_bound = self.bound is not None and abs(c.statistic) <= self.bound
            ok_p = self.alpha is not None and p > self.alpha
            if not (ok_bound or ok_p):
                failures.append(c.family)
            if not math.isfinite(worst) or abs(c.statistic) > abs(worst):
                worst = c.statistic
        return CriterionResult(
            name=self.name, type="family_contrast", value=worst, ci_low=math.nan, ci_high=math.nan,
            threshold=threshold, passed=not failures, reason=f"families beyond the bound: {failures}" if failures else None,
            details={"contrasts": {c.family: {"contrast": c.statistic, "p": c.p_value, "p_holm": c.p_holm}
                                   for c in contrasts}, "note": result.note})


@register_criterion("unscored_share")
class UnscoredShare:
    """The judge's unscored share on the validation sample below a cap."""

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"max_share"}, where)
        self.cap = float(_param(table, "max_share", where, _number, **_share))
        self.name = table.get("name", "unscored share")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        threshold = f"unscored share < {self.cap}"
        unscored, total = evidence.unscored()
        if total == 0:
            return _fail(self.name, "unscored_share", threshold, "the judge has no row on the validation sample")
        share = unscored / total
        return CriterionResult(name=self.name, type="unscored_share", value=share, ci_low=math.nan, ci_high=math.nan,
                               threshold=threshold, passed=share < self.cap,
                               details={"unscored": unscored, "total": total})


@register_criterion("min_units_per_stratum")
class MinUnitsPerStratum:
    """Every sampling stratum has at least ``min_units`` units with a judge and a human label."""

    def __init__(self, table: dict[str, Any], where: str) -> None:
        _unknown(table, {"min_units"}, where)
        self.minimum = _param(table, "min_units", where, int, check=lambda v: v >= 1, allowed="an integer >= 1")
        self.name = table.get("name", "units per stratum")

    def evaluate(self, evidence: Evidence) -> CriterionResult:
        threshold = f"every stratum >= {self.minimum} validated units"
        counts = evidence.units_per_stratum()
        if not counts:
            return _fail(self.name, "min_units_per_stratum", threshold, "no stratum has a validated unit")
        low = {k: v for k, v in counts.items() if v < self.minimum}
        return CriterionResult(name=self.name, type="min_units_per_stratum", value=float(min(counts.values())),
                               ci_low=math.nan, ci_high=math.nan, threshold=threshold, passed=not low,
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


def format_verdict(verdict: Verdict) -> str:
    """Plain-text verdict: one line per criterion with value, interval, threshold and result."""
    lines = [f"{verdict.verdict}: judge {verdict.judge!r} under policy {verdict.policy.name!r} "
             f"(sha256 {verdict.policy.sha256[:12]})"]
    for note in verdict.notes:
        lines.append(f"NOTE: {note}")
    for r in verdict.results:
        value = "--" if not math.isfinite(r.value) else f"{r.value:.4f}"
        ci = f" [{r.ci_low:.4f}, {r.ci_high:.4f}]" if math.isfinite(r.ci_low) and math.isfinite(r.ci_high) else ""
        mark = "PASS" if r.passed else "FAIL"
        tail = f"  ({r.reason})" if r.reason else ""
        lines.append(f"  {mark}  {r.name}: {value}{ci}; needs {r.threshold}{tail}")
    return "\n".join(lines)


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
        verdicts[judge] = body
        texts.append(format_verdict(verdict))
    overall = ACCEPT if all(v["verdict"] == ACCEPT for v in verdicts.values()) else REJECT
    document = {"verdict": overall, "judges": verdicts, "policy": policy.to_dict(), "fingerprints": study.fingerprints,
                "simulated": study.simulated, "notes": list(notes)}
    return document, "\n\n".join(texts)
