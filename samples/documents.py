"""Typed documents of the sampling and blinding stages: written and read back through the same models.

``sample/manifest.json`` (``SampleManifest``) and ``blind/audit.json`` (``BlindAudit``)
are checked against their model before they are written, and every reader in other
packages (``accord run``, the coding-app store's late-annotator orders, gold units) reads
them through ``read_sample_manifest`` / ``read_blind_audit`` instead of looking keys up.
Extra fields are allowed so a stage may add a figure without breaking older readers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from samples.errors import InputError
from samples.layout import StudyLayout


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class SampleManifest(_Doc):
    """``sample/manifest.json``: what the sampler drew and from what."""

    plan_sha256: str = Field(description="sha256 of the sampling plan file.")
    seed: int = Field(ge=0, description="Sampling seed.")
    inputs: dict[str, dict[str, Any]] = Field(description="Input name -> {path, sha256}.")
    design: str = Field(description="stratified_srs_units or one_per_trajectory.")
    population_units: int = Field(ge=0, description="Units in the population the plan selects from.")
    sampled: int = Field(ge=0, description="Units drawn.")
    strata: list[dict[str, Any]] = Field(default_factory=list, description="Per stratum: population, sample, p.")
    shortfalls: list[Any] = Field(default_factory=list, description="Strata that had fewer units than asked.")
    excluded_labelled: dict[str, Any] | None = Field(
        default=None, description="--exclude-labelled: the study whose human-labelled units were left out, and how many.")


class BlindAudit(_Doc):
    """``blind/audit.json``: counts by category of what the scrubber masked and kept (never the strings)."""

    sample_sha256: str = Field(description="sha256 of the sample that was blinded.")
    seed: int = Field(ge=0, description="Seed of task ids and orders (late annotators' orders use it too).")
    tasks: int = Field(ge=0, description="Blinded tasks.")
    tasks_with_masking: int = Field(ge=0, description="Tasks in which something was masked.")
    masked_by_category: dict[str, int] = Field(default_factory=dict)
    kept_by_category: dict[str, int] = Field(default_factory=dict)
    surviving_identity_strings: int = Field(ge=0, description="Identities the leak detector found (0: written).")


M = TypeVar("M", bound=_Doc)


def checked(model: type[M], body: dict[str, Any], *, where: Path) -> dict[str, Any]:
    """``body`` after checking it against ``model`` (a bug, not a user mistake, when it does not fit)."""
    model.model_validate(body)
    return body


def _read(model: type[M], path: Path, stage: str) -> M | None:
    if not path.is_file():
        return None
    try:
        return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid JSON ({error}); rerun accord {stage}") from None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise InputError(f"{path}: not an accord {stage} document: field {field}: {first['msg']}; "
                         f"rerun accord {stage}") from None


def read_sample_manifest(study: str | Path | StudyLayout) -> SampleManifest | None:
    return _read(SampleManifest, StudyLayout.of(study).sample_manifest, "sample")


def read_blind_audit(study: str | Path | StudyLayout) -> BlindAudit | None:
    return _read(BlindAudit, StudyLayout.of(study).blind_audit, "blind")
