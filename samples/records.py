"""Canonical records: what every stage of accord reads and writes.

These models are the data contracts documented in ARCHITECTURE.md. Adapters turn
foreign formats into ``Trajectory``; ``samples.units`` cuts trajectories into
``Unit``s; the sampler adds a stratum and an inclusion probability
(``SampledUnit``); blinding splits a sample into annotator-facing ``BlindTask``s
and a sealed ``KeyEntry`` per task. The labels given to units are records too:
``JudgeLabel`` (a judge's verdict, written by ``judges``) and ``HumanLabel`` (a
person's, written by ``annotate``'s backends), kept here with the other contracts so
every stage reads them through one type (``samples.tables``). Fields may be added;
never renamed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from samples.label_sources import SIMULATED

Setting = Literal["controlled", "natural", "other"]
Split = Literal["conflict", "control", "none"]
SETTINGS: frozenset[str] = frozenset(get_args(Setting))
SPLITS: frozenset[str] = frozenset(get_args(Split))


def _registered_kind(kind: str) -> str:
    """A unit kind is any kind of the registry (samples.kinds), built-in or a plugin's."""
    from samples.kinds import get_kind

    get_kind(kind)
    return kind


UnitKind = Annotated[str, AfterValidator(_registered_kind)]
# The built-in kinds in their documented order; the registry (samples.kinds.kinds()) also holds a plugin's.
UNIT_KINDS: tuple[str, ...] = (
    "identify_trajectory",
    "identify_turn",
    "escalate_final",
    "correctness",
    "response",
    "asa_m0",
    "asa_m1",
    "asa_m2",
    "asa_m3",
)
# Unit fields that identify the evaluated model or the design; never shown to an
# annotator, never imported into an annotation tool.
STRATUM_FIELDS: tuple[str, ...] = ("agent", "backbone", "family", "dataset", "setting", "split")


def _is_none(value: Any) -> bool:
    return value is None


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCall(_Record):
    name: str = Field(description="Tool name as the agent called it.")
    arguments: dict[str, Any] | str = Field(
        default_factory=dict, description="Arguments: a JSON object, or the raw string when it did not parse."
    )
    result: str | None = Field(default=None, description="What the tool returned, as text; None if unknown.")
    success: bool | None = Field(default=None, description="Whether the call succeeded; None if unknown.")


class Step(_Record):
    index: int = Field(ge=0, description="0-based position in the trajectory.")
    role: str = Field(description="assistant, user, tool, system, or a multi-agent speaker name.")
    reasoning: str | None = Field(default=None, description="Hidden reasoning; may contain <think> blocks.")
    text: str | None = Field(default=None, description="Text the step shows (to the user or the next agent).")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="Tool calls made in this step.")
    is_final: bool = Field(default=False, description="True for the final assistant turn (the answer).")


class Trajectory(_Record):
    id: str = Field(description="Stable id of the run, unique within a study.")
    agent: str = Field(description="Agent harness (e.g. 'Claude Code', 'Qwen-Agent').")
    backbone: str = Field(description="Backbone model id (e.g. 'gpt-5', 'qwen3.5-9b').")
    family: str = Field(description="Model family of the backbone (e.g. 'openai', 'qwen'); 'unknown' if not known.")
    dataset: str = Field(description="Source benchmark (e.g. 'GAIA').")
    setting: Setting = Field(default="other", description="ISE setting: controlled / natural conflict, or other.")
    split: Split = Field(default="none", description="conflict / control instance, or none outside ISE designs.")
    question: str = Field(default="", description="The task given to the agent.")
    references: list[str] = Field(default_factory=list, description="Reference (gold) answers.")
    steps: list[Step] = Field(default_factory=list, description="Ordered steps s_1..s_T.")
    final_answer: str | None = Field(default=None, description="Final assistant turn text; None when truncated.")
    truncated: bool = Field(default=False, description="Hit max_turns without a final answer.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free metadata from the source (kept, never shown).")


class Unit(_Record):
    unit_id: str = Field(description="Opaque, deterministic id: 'u_' + sha256(trajectory_id, kind, turn_index)[:20].")
    trajectory_id: str = Field(description="Source trajectory: the cluster for bootstrap resampling.")
    kind: UnitKind = Field(description="What is judged: see UNIT_KINDS and ARCHITECTURE.md.")
    text: str = Field(description="What is judged (samples.kinds renders the judge's message and the annotator's view from it).")
    turns: list[str] | None = Field(
        default=None, description="Identify kinds: the numbered intermediate turns, '[turn i] ...' (identify_turn: its context 0..i)."
    )
    focus_turn: int | None = Field(default=None, description="identify_turn: the turn being labelled.")
    strata: dict[str, str] = Field(
        default_factory=dict,
        description="Stratification fields (agent, backbone, family, dataset, setting, split, ...). Never shown.",
    )
    reference: dict[str, Any] = Field(
        default_factory=dict,
        description="Ground truth the benchmark scorer needs (references, existing human labels). Never shown.",
    )
    # Added fields, left out of a row when None: every file written before them reads and writes
    # back byte-identically (units.jsonl, tasks.jsonl, the coding-app store's task payloads).
    question: str | None = Field(default=None, exclude_if=_is_none,
                                 description="response: the question asked, shown to coders (EHQ codebook).")
    gold_answers: list[str] | None = Field(
        default=None, exclude_if=_is_none,
        description="response: the gold answer and its aliases, shown to coders (EHQ codebook: compare with it).",
    )
    truncation: str | None = Field(
        default=None, exclude_if=_is_none,
        description="response: why it counts as cut off (samples.truncation, EHQ section 5.2); coders are told.")


class SampledUnit(Unit):
    stratum: str = Field(description="Stratum key, e.g. 'agent=X|split=conflict'.")
    inclusion_prob: float = Field(gt=0, le=1, description="P(unit in sample) under the plan; weight = 1/p.")


class BlindTask(_Record):
    task_id: str = Field(description="Opaque id shown to annotators; unrelated to unit_id without the sealed key.")
    kind: UnitKind = Field(description="Unit kind: selects the codebook and the input widgets.")
    text: str = Field(description="Display payload after identity scrubbing.")
    turns: list[str] | None = Field(default=None, description="Scrubbed numbered turns (Identify kinds).")
    focus_turn: int | None = Field(default=None, description="identify_turn: the turn being labelled.")
    question: str | None = Field(default=None, exclude_if=_is_none, description="response: the scrubbed question.")
    gold_answers: list[str] | None = Field(default=None, exclude_if=_is_none, description="response: the scrubbed gold answers.")
    truncation: str | None = Field(default=None, exclude_if=_is_none,
                                   description="response: why it counts as cut off; shown as a notice.")


class KeyEntry(_Record):
    """One row of the sealed key (written mode 0600, kept apart from the tasks)."""

    task_id: str = Field(description="The blinded task id.")
    unit_id: str = Field(description="The unit it stands for.")
    trajectory_id: str = Field(description="Cluster id.")
    kind: UnitKind = Field(description="Unit kind.")
    strata: dict[str, str] = Field(default_factory=dict, description="Stratification fields of the unit.")
    stratum: str = Field(description="Sampling stratum.")
    inclusion_prob: float = Field(gt=0, le=1, description="Inclusion probability under the plan.")


# --- labels ----------------------------------------------------------------------------------

ParseStatus = Literal["ok", "unscored"]
LabelKey = tuple[str, str, int]
"""A judge label's identity: (unit_id, judge, sample_index); one row per key in the labels table."""


class JudgeLabel(BaseModel):
    """The judge labels table: one row per (unit, judge, sample) verdict."""

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
    latency_s: float | None = Field(default=None, allow_inf_nan=False,  # JSON has no NaN; a reader must refuse one
                                    description="Wall time of the call (0 on a cache hit; null from a Ray cluster).")
    input_tokens: int | None = Field(default=None, description="Prompt tokens reported by the provider.")
    output_tokens: int | None = Field(default=None, description="Completion tokens reported by the provider.")
    cache_hit: bool = Field(default=False, description="Served from the request cache.")
    fingerprint: str = Field(description="Run fingerprint: prompt sha256, provider, model, params, unit-set hash, version.")

    @property
    def key(self) -> LabelKey:
        """(unit_id, judge, sample_index): the row a later label of the same call replaces."""
        return (self.unit_id, self.judge, self.sample_index)


LabelRole = Literal["independent", "adjudication"]
Backend = Literal["app", "labelstudio", "import", "simulated"]


class HumanLabel(BaseModel):
    """The human labels table: one row per (task, annotator, role), the latest edit."""

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
