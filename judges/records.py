"""The judge labels table: one row per (unit, judge, sample) verdict."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ParseStatus = Literal["ok", "unscored"]


class JudgeLabel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    unit_id: str = Field(description="Unit judged (samples.records.Unit.unit_id).")
    judge: str = Field(description="Judge name as configured (prompt + provider + model), e.g. 'identify@smollm2'.")
    sample_index: int = Field(default=0, ge=0, description="k-th self-consistency sample; 0 for a single call.")
    label: str | None = Field(description="Canonical label (samples.schemes) under the judge's parse mode; None when unscored.")
    label_strict: str | None = Field(default=None, description="What the strict parser read; None if it failed.")
    label_lenient: str | None = Field(default=None, description="What the lenient parser read; None if it failed.")
    first_turn: int | None = Field(default=None, description="Identify: first recognition turn (-1 when flag=0).")
    parse_status: ParseStatus = Field(description="ok, or unscored (the output gave no label; never counted as one).")
    unscored_reason: str | None = Field(
        default=None, description="empty | truncated | wrong_format | refusal_to_judge | call_failed: <detail>."
    )
    raw_output: str | None = Field(default=None, description="The model's text, verbatim.")
    latency_s: float | None = Field(default=None, description="Wall time of the call (0 on a cache hit; null from a Ray cluster).")
    input_tokens: int | None = Field(default=None, description="Prompt tokens reported by the provider.")
    output_tokens: int | None = Field(default=None, description="Completion tokens reported by the provider.")
    cache_hit: bool = Field(default=False, description="Served from the request cache.")
    fingerprint: str = Field(description="Run fingerprint: prompt sha256, provider, model, params, unit-set hash, version.")
