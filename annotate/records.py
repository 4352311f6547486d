"""The human labels table: one row per (task, annotator, role), the latest edit."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from samples import SIMULATED

LabelRole = Literal["independent", "adjudication"]
Backend = Literal["app", "labelstudio", "import", "simulated"]


class HumanLabel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(description="Blinded task id (join to unit_id through the sealed key).")
    annotator: str = Field(description="Annotator name (adjudicator name for adjudications).")
    label: str = Field(description="Canonical label from the kind's scheme (samples.schemes).")
    first_turn: int | None = Field(default=None, description="Identify: first recognition turn; None otherwise.")
    unsure: bool = Field(default=False, description="Annotator flagged uncertainty; does not change the label.")
    note: str = Field(default="", description="Free note.")
    created_at: str | None = Field(description="ISO-8601 UTC time of the first submit; None when unknown (imports).")
    updated_at: str | None = Field(description="ISO-8601 UTC time of the latest edit (the one that counts); None when unknown.")
    seconds_spent: float | None = Field(default=None, description="Time on the task before submit, if known.")
    backend: Backend = Field(description="Where the label came from; 'simulated' labels are never human.")
    role: LabelRole = Field(default="independent", description="Independent label, or an adjudication kept apart.")
    source: str | None = Field(default=None, description="Imported labels: the file they came from and its sha256.")
    codebook_sha256: str | None = Field(
        default=None, description="sha256 of the codebook version the label was given under (the codebook file the "
                                  "coding app showed, or the instructions pushed to Label Studio); None when unknown.")

    @property
    def simulated(self) -> bool:
        """Given by a simulated panel, not a person."""
        return self.backend == SIMULATED
