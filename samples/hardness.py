"""Hard-negative scorers: which negatives are hardest to tell from a positive.

The ISE human study drew its negatives "from the turns that are hardest to separate
from a recognition turn". A scorer gives each unit a score >= 0; inside negative
strata the sampler takes units with a positive score first (a separate, reported
tier with its own inclusion probability). Scorers are a Protocol with a registry;
the built-ins register like any third-party scorer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from samples.errors import InputError
from samples.registry import Registry

# Phrases that signal uncertainty or a noticed conflict (the ISE Identify/Escalate
# prompts' examples and their generic hedges); matched case-insensitively as words.
UNCERTAINTY_TERMS: tuple[str, ...] = (
    "not sure", "unsure", "uncertain", "uncertainty", "unclear", "i'm not certain", "not certain", "might be",
    "may be", "possibly", "perhaps", "conflict", "conflicting", "contradict", "contradicts", "disagree",
    "discrepancy", "inconsistent", "however", "but the", "could not find", "couldn't find", "cannot find",
    "can't find", "no results", "unable to verify", "verify", "double-check", "i initially thought", "i thought",
)


@runtime_checkable
class HardnessScorer(Protocol):
    """Scores one unit; ``labels`` maps judge name -> that judge's label for the unit (or None)."""

    name: str

    def score(self, unit: Mapping[str, Any], labels: Mapping[str, str | None]) -> float: ...


class JudgeDisagreement:
    """1 when the configured judges gave the unit different labels, else 0 (unscored labels are ignored)."""

    name = "judge_disagreement"

    def __init__(self, judges: Sequence[str] = (), **_: Any) -> None:
        if len(judges) < 2:
            raise InputError(f"hard_negatives.judges = {list(judges)}: judge_disagreement needs at least two judges")
        self.judges = tuple(judges)

    def score(self, unit: Mapping[str, Any], labels: Mapping[str, str | None]) -> float:
        given = {labels.get(j) for j in self.judges} - {None}
        return 1.0 if len(given) > 1 else 0.0


class UncertaintyLanguage:
    """Number of distinct uncertainty phrases in the unit text."""

    name = "uncertainty_language"

    def __init__(self, terms: Sequence[str] = (), **_: Any) -> None:
        chosen = tuple(terms) or UNCERTAINTY_TERMS
        self.pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(t) for t in sorted(chosen, key=len, reverse=True)) + r")(?!\w)",
                                  re.IGNORECASE)

    def score(self, unit: Mapping[str, Any], labels: Mapping[str, str | None]) -> float:
        return float(len({m.lower() for m in self.pattern.findall(unit.get("text", ""))}))


_SCORERS: Registry[type] = Registry("hardness scorer")


def register_scorer(cls: type) -> type:
    """Register a scorer class (constructed with the plan's hard_negatives options)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not callable(getattr(cls, "score", None)):
        raise TypeError(f"register_scorer: {cls!r} needs a 'name' string and a 'score(unit, labels)' method")
    return _SCORERS.register(name, cls)


def make_scorer(name: str, **options: Any) -> HardnessScorer:
    return _SCORERS.get_one(name, where="hard_negatives.scorer")(**options)


register_scorer(JudgeDisagreement)
register_scorer(UncertaintyLanguage)
