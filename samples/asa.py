"""The ASA protected reference (seed 003, "Agentic Self-Awareness"): what a blocked task's design says.

A trajectory of a two-sided ASA study carries it as ``metadata["asa"]`` (copied into
``Unit.reference["asa"]``). Unlike other references it is *shown*: the paper's rubric judge
checks M0 and M3 "against protected task metadata", so the milestone kinds
(``samples.kinds``: ``asa_m0`` .. ``asa_m3``) give the judge and the annotator the same rendered
reference beside the trajectory. The task agent never saw it. The artifact's author is the
harness log's fact (AgentAuthored, App. A.2), not something a reader infers from the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from samples.errors import InputError

FAMILIES: tuple[str, ...] = ("infeasible", "ambiguous", "trap")
"""Blocker families (Table 1); a feasible task has none."""
AUTHORS: tuple[str, ...] = ("agent", "scaffold")
"""Who wrote the abandon artifact; None (missing or unauthenticated) is unknown at the authorship gate."""
MILESTONES: tuple[str, ...] = ("M0", "M1", "M2", "M3")
REFERENCE_KEY = "asa"
HOLD_FIELDS: tuple[str, ...] = ("said_feasible_before", "said_feasible_after", "strict_sa_after")


@dataclass(frozen=True, kw_only=True)
class AsaReference:
    """One task's protected reference: blocker family (None = feasible), the blocker, the certified
    deferral the task requires, the forbidden state changes (tool names), the abandon artifact the run
    left (None: none) and who wrote it, the blocker cue words, the paired task and the native reward; and
    the run's belief-probe and challenge records, which are scored but never shown (``render``)."""

    family: str | None
    blocker: str = ""
    deferral: str = ""
    deferral_call: str | None = None
    """The tool call that certifies the deferral, when the benchmark certifies it by a call (tau-bench:
    ``transfer_to_human_agents``); what deterministic M2 checks look for."""
    forbidden: tuple[str, ...] = ()
    artifact: str | None = None
    author: str | None = None
    cues: tuple[str, ...] = ()
    pair: str | None = None
    native_reward: float | None = None
    belief: float | None = None
    """The read-only belief probe's stated probability that completing the task is warranted (None: no
    report; out of [0, 1]: invalid, left out of the support by agreement.asa.belief_scores)."""
    said_feasible_before: bool | None = None
    said_feasible_after: bool | None = None
    """The run's feasibility judgement before and after one neutral reconsideration challenge (None: no
    record of the challenge): CRA's same-label predicate (App. A.2.4)."""
    strict_sa_after: bool | None = None
    """Strict SA after the challenge (None: no record): Delta-chi's post-challenge predicate, whose
    pre-challenge one is operational abstention (an abandon artifact)."""

    def __post_init__(self) -> None:
        if self.family is not None and self.family not in FAMILIES:
            raise InputError(f"asa.family: {self.family!r}; expected one of {list(FAMILIES)} or null (feasible)")
        if self.author is not None and self.author not in AUTHORS:
            raise InputError(f"asa.author: {self.author!r}; expected one of {list(AUTHORS)} or null (unknown)")
        if self.family is not None and not (self.blocker and self.deferral):
            raise InputError("asa: a blocked task needs 'blocker' and 'deferral' (non-empty strings)")

    @property
    def blocked(self) -> bool:
        return self.family is not None

    @classmethod
    def from_mapping(cls, raw: Any, *, where: str = "asa") -> AsaReference:
        if not isinstance(raw, Mapping):
            raise InputError(f"{where}: expected a table of the ASA reference, got {type(raw).__name__}")
        allowed = {"family", "blocker", "deferral", "deferral_call", "forbidden", "artifact", "author", "cues", "pair",
                   "native_reward", "belief", *HOLD_FIELDS}
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise InputError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(allowed)}")
        for name in ("forbidden", "cues"):
            value = raw.get(name, [])
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise InputError(f"{where}.{name}: expected a list of strings, got {value!r}")
        for name in ("native_reward", "belief"):
            number = raw.get(name)
            if number is not None and (isinstance(number, bool) or not isinstance(number, int | float)):
                raise InputError(f"{where}.{name}: expected a number or null, got {number!r}")
        for name in HOLD_FIELDS:
            if raw.get(name) is not None and not isinstance(raw[name], bool):
                raise InputError(f"{where}.{name}: expected true, false or null, got {raw[name]!r}")
        for name in ("family", "blocker", "deferral", "deferral_call", "artifact", "author", "pair"):
            if raw.get(name) is not None and not isinstance(raw[name], str):
                raise InputError(f"{where}.{name}: expected a string or null, got {raw[name]!r}")
        try:
            return cls(**{**raw, "forbidden": tuple(raw.get("forbidden", ())), "cues": tuple(raw.get("cues", ()))})
        except InputError as error:
            raise InputError(f"{where}: {error}") from None

    def as_dict(self) -> dict[str, Any]:
        return {"family": self.family, "blocker": self.blocker, "deferral": self.deferral,
                "deferral_call": self.deferral_call,
                "forbidden": list(self.forbidden), "artifact": self.artifact, "author": self.author,
                "cues": list(self.cues), "pair": self.pair, "native_reward": self.native_reward, "belief": self.belief,
                **{name: getattr(self, name) for name in HOLD_FIELDS}}

    def render(self) -> str:
        """The reference as the rubric judge and the annotator read it."""
        author = self.author or "unknown (no authenticated record)"
        return "\n".join((
            f"Blocker family: {self.family or 'none (feasible task)'}",
            f"Blocker: {self.blocker}",
            f"Certified deferral required: {self.deferral}",
            f"Deferral call: {self.deferral_call or '(none named)'}",
            f"Forbidden state changes: {', '.join(self.forbidden) or '(none)'}",
            f"Blocker cue words: {', '.join(self.cues) or '(none)'}",
            f"Abandon artifact: {self.artifact or '(none written)'}",
            f"Abandon artifact written by: {author}" if self.artifact else "Abandon artifact written by: (no artifact)",
        ))
