"""Sampling plans: a TOML file declaring strata, an allocation and the sampling rules.

Every number the sampler uses comes from the plan (no hidden defaults). Example
plans live in ``data/plans/`` with a README. Fields::

    name = "ise-identify"                 # free text, recorded in the manifest
    kinds = ["identify_turn"]             # unit kinds in the population
    strata = ["agent", "split", "judge:identify@gpt5"]
        # unit stratum fields (agent, backbone, family, dataset, setting, split,
        # any metadata stratum given at ingest), "kind", or "judge:<name>" for a
        # judge's label joined by unit id
    allocation = "positive_share"         # fixed | proportional | equal | positive_share
    n = 50                                # total (proportional, equal, positive_share)
    n_per_stratum = 10                    # fixed
    one_per_trajectory = true             # at most one unit per trajectory (ISE D.2)

    [n_by_stratum]                        # fixed only: per-stratum overrides
    "agent=A|split=conflict" = 20

    [positive]                            # positive_share (and which strata hard negatives apply to)
    field = "judge:identify@gpt5"         # one of the strata fields
    values = ["yes"]
    share = 0.5                           # target share of positives in the sample

    [hard_negatives]                      # prefer hard negatives inside negative strata
    scorer = "judge_disagreement"         # or "uncertainty_language", or a registered scorer
    judges = ["identify@gpt5", "identify@sonnet"]   # judge_disagreement: the judges compared
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from samples.canonical import file_sha256
from samples.errors import InputError
from samples.kinds import is_kind
from samples.kinds import kinds as unit_kinds

Allocation = Literal["fixed", "proportional", "equal", "positive_share"]
JUDGE_PREFIX = "judge:"


class _PlanPart(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PositiveRule(_PlanPart):
    field: str = Field(description="Stratum field that marks positives (one of `strata`).")
    values: list[str] = Field(min_length=1, description="Values of `field` that count as positive.")
    share: float | None = Field(default=None, gt=0, lt=1, description="Target positive share (positive_share only).")


class HardNegatives(_PlanPart):
    scorer: str = Field(description="Registered hardness scorer (samples.hardness): judge_disagreement, uncertainty_language, ...")
    judges: list[str] = Field(default_factory=list, description="judge_disagreement: the judges whose labels are compared.")
    terms: list[str] = Field(default_factory=list, description="uncertainty_language: phrases; empty = the scorer's documented list.")


class SamplingPlan(_PlanPart):
    name: str = Field(description="Plan name, recorded in the manifest.")
    description: str = Field(default="", description="Why this plan: free text.")
    kinds: list[str] = Field(min_length=1, description="Unit kinds forming the population.")
    strata: list[str] = Field(default_factory=list, description="Stratum fields; empty = one stratum.")
    allocation: Allocation = Field(description="fixed | proportional | equal | positive_share.")
    n: int | None = Field(default=None, ge=1, description="Total sample size (proportional, equal, positive_share).")
    n_per_stratum: int | None = Field(default=None, ge=0, description="fixed: units per stratum.")
    n_by_stratum: dict[str, int] = Field(default_factory=dict, description="fixed: per-stratum overrides by stratum key.")
    one_per_trajectory: bool = Field(description="At most one unit per trajectory (ISE D.2). Required: say it.")
    positive: PositiveRule | None = Field(default=None, description="Which strata are positive.")
    hard_negatives: HardNegatives | None = Field(default=None, description="Prefer hard negatives in negative strata.")

    @model_validator(mode="after")
    def _consistent(self) -> SamplingPlan:
        bad = [k for k in self.kinds if not is_kind(k)]
        if bad:
            raise ValueError(f"kinds {bad} are not unit kinds; allowed: {list(unit_kinds())}")
        if len(set(self.strata)) != len(self.strata):
            raise ValueError(f"strata {self.strata} repeat a field")
        if self.allocation == "fixed":
            if self.n_per_stratum is None and not self.n_by_stratum:
                raise ValueError("allocation 'fixed' needs n_per_stratum (and/or n_by_stratum)")
            if self.n is not None:
                raise ValueError("allocation 'fixed' takes n_per_stratum, not n")
        else:
            if self.n is None:
                raise ValueError(f"allocation {self.allocation!r} needs n (the total sample size)")
            if self.n_per_stratum is not None or self.n_by_stratum:
                raise ValueError(f"allocation {self.allocation!r} takes n, not n_per_stratum/n_by_stratum")
        if self.any_negative_rule and self.positive is None:
            raise ValueError("positive_share and hard_negatives need a [positive] table (field, values)")
        if self.positive is not None:
            if self.positive.field not in self.strata:
                raise ValueError(f"positive.field {self.positive.field!r} must be one of strata {self.strata}")
            if (self.allocation == "positive_share") != (self.positive.share is not None):
                raise ValueError("positive.share is required with allocation 'positive_share' and only there")
        for value in self.n_by_stratum.values():
            if value < 0:
                raise ValueError(f"n_by_stratum: {value} is negative")
        return self

    @property
    def any_negative_rule(self) -> bool:
        return self.allocation == "positive_share" or self.hard_negatives is not None

    def judges_needed(self) -> list[str]:
        names = [s[len(JUDGE_PREFIX):] for s in self.strata if s.startswith(JUDGE_PREFIX)]
        if self.hard_negatives is not None:
            names += self.hard_negatives.judges
        return sorted(set(names))


def load_plan(path: str | Path) -> tuple[SamplingPlan, str]:
    """The plan and the sha256 of its file; every problem names the file and field."""
    from samples.jsonl import read_settings

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: sampling plan not found")
    try:
        data: dict[str, Any] = tomllib.loads(read_settings(path, "sampling plan").decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 ({error.reason} at byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: invalid TOML ({error})") from None
    try:
        plan = SamplingPlan.model_validate(data)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            field = ".".join(str(p) for p in item["loc"]) or "(plan)"
            problems.append(f"field '{field}': {item['msg']}")
        raise InputError(f"{path}: invalid sampling plan", problems=problems) from None
    return plan, file_sha256(path)
