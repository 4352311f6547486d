"""What a gate criterion is: the ``Criterion`` protocol, its result, and the ``CRITERIA`` registry.

A policy's ``[[criteria]]`` table names a type registered here with ``register_criterion``; the built-in
types (``agreement.builtin_criteria``) register exactly as a third party's would, and are imported on the
registry's first look-up. A class lacking a capability the gate, the planner or the views ask of a
criterion is refused when it registers, not when a gate runs. The parameter checks (``_param``,
``_unknown``) are shared by every criterion's table and the policy loader (``agreement.gate``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from samples import InputError, Registry

if TYPE_CHECKING:
    from agreement.plan import PlanCheck


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

CRITERIA: Registry[CriterionType] = Registry("criterion type", builtins=("agreement.builtin_criteria",))


def register_criterion(type_name: str) -> Callable[[type], type]:
    """Register a criterion class under the policy's ``type`` name; it must have every capability of
    ``Criterion`` (class attributes or properties), or it is refused here rather than failing a gate later."""

    def wrap(cls: type) -> type:
        needs = (*_CAPABILITIES, "built_in_table") if type_name in BUILT_IN else _CAPABILITIES
        missing = [name for name in needs if not hasattr(cls, name)]
        if missing:
            raise TypeError(f"criterion type {type_name!r}: {cls.__name__} lacks {missing}; a criterion needs "
                            f"{list(needs)} (agreement.criteria.Criterion)")
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


_number = (int, float)


UNMEASURABLE = "cannot be measured: "
"""How every unmeasurable criterion's reason begins (``_fail``): its value is shown as no number."""


def _fail(name: str, type_name: str, test: str, threshold: str, reason: str, *, value: float = math.nan,
          **details: Any) -> CriterionResult:
    return CriterionResult(name=name, type=type_name, test=test, value=value, ci_low=math.nan, ci_high=math.nan,
                           ci_level=None, ci_method="", threshold=threshold, passed=False,
                           reason=f"{UNMEASURABLE}{reason}", details=details)
