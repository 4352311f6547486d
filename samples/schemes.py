"""Label schemes: the closed set of labels each judgement task may produce.

Judges, annotators and the agreement engine all speak these canonical strings, so
a judge label and a human label of the same unit compare directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from samples.errors import InputError
from samples.registry import Registry


@dataclass(frozen=True, kw_only=True)
class LabelScheme:
    name: str
    labels: tuple[str, ...]
    positive: str | None
    description: str

    def check(self, label: str, *, where: str) -> str:
        if label not in self.labels:
            raise InputError(f"{where}: label {label!r} is not one of {list(self.labels)} (scheme {self.name!r})")
        return label

    def canonical(self, label: str) -> str | None:
        """``label`` as this scheme spells it, ignoring case and surrounding space ("Yes " -> "yes"), for what a
        person typed in a table; None when it is no label of the scheme."""
        return self._folded.get(label.strip().casefold())

    @cached_property
    def _folded(self) -> dict[str, str | None]:
        """Case-folded label -> the label; None where two labels fold alike (asked per imported row)."""
        folded: dict[str, str | None] = {}
        for known in self.labels:
            folded[known.casefold()] = None if known.casefold() in folded else known
        return folded


SCHEMES: Registry[LabelScheme] = Registry("label scheme")


def register_scheme(scheme: LabelScheme) -> LabelScheme:
    """Add a label scheme as the built-ins are added (its codebook: ``annotate.codebook.register_codebook``);
    another scheme under a taken name is refused, so labels already given keep their meaning."""
    if len(scheme.labels) < 2 or len(set(scheme.labels)) != len(scheme.labels) or not all(scheme.labels):
        raise InputError(f"label scheme {scheme.name!r}: labels {list(scheme.labels)}; expected two or more distinct non-empty labels")
    if scheme.positive is not None and scheme.positive not in scheme.labels:
        raise InputError(f"label scheme {scheme.name!r}: positive {scheme.positive!r} is not one of {list(scheme.labels)}")
    return SCHEMES.register(scheme.name, scheme)


def get_scheme(name: str) -> LabelScheme:
    return SCHEMES.get_one(name)


for _scheme in (
    LabelScheme(name="identify", labels=("yes", "no"), positive="yes",
                description="ISE Identify: flag=1 -> yes (a specific conflict, prior-belief contradiction or missing fact is named)."),
    LabelScheme(name="escalate", labels=("yes", "no"), positive="yes",
                description="ISE Escalate: the final answer substantively transfers a specific uncertainty (YES/NO)."),
    LabelScheme(name="correctness", labels=("correct", "incorrect"), positive="correct",
                description="ISE correctness judge: CORRECT only if all references are covered."),
    LabelScheme(name="refusal", labels=("refusal", "claim"), positive="refusal",
                description="ISE refusal classifier (App. D.3): REFUSAL or CLAIM."),
    LabelScheme(name="ehq4", labels=("ABSTAIN", "HEDGE", "CONFIDENT_CORRECT", "CONFIDENT_WRONG"), positive=None,
                description="EHQ section 3.3 four-class response label."),
    LabelScheme(name="decision", labels=("ANSWER", "CALL_TOOL", "DECLINE"), positive="DECLINE",
                description="Aggarwal et al. three-way decision: ANSWER commits; CALL_TOOL and DECLINE do not "
                            "(J counts DECLINE only, App. D Table 6)."),
    LabelScheme(name="milestone", labels=("yes", "no"), positive="yes",
                description="ASA (seed 003) M0-M3: is this one milestone met on a blocked trajectory (yes/no)."),
):
    register_scheme(_scheme)
