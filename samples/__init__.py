"""Trajectories in, a blinded, stratified, reproducible sample out.

Modules: ``records`` (data contracts, the label records too), ``tables`` (the one reader of the judge labels and the sealed key), ``adapters`` (source formats -> Trajectory,
a registry), ``ingest`` (streaming load + manifest), ``kinds`` (the unit-kind
registry: what judges and annotators read of each kind), ``registry`` (the one registry type
of every extension point, and plugins through the ``accord.plugins`` entry-point group), ``units`` (unit cutting),
``plans`` + ``sampler`` + ``hardness`` (stratified samples with exact inclusion
probabilities), ``scrub`` + ``blind`` (identity masking, tasks,
sealed key), ``vocabulary`` (identity terms, family inference), ``jsonl``
(deterministic files), ``synthetic`` (seeded test data).

Public API is exported lazily (PEP 562) so that light users such as the CLI's
start-up do not pay for pydantic until they touch a record.
"""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "InputError": "samples.errors",
    "ConfidenceInterval": "samples.intervals",
    "DEFAULT_LEVEL": "samples.intervals",
    "Resampling": "samples.resampling",
    "Registry": "samples.registry",
    "load_plugins": "samples.registry",
    "PLUGIN_GROUP": "samples.registry",
    "canonical_json": "samples.canonical",
    "sha256_hex": "samples.canonical",
    "file_sha256": "samples.canonical",
    "Trajectory": "samples.records",
    "Step": "samples.records",
    "ToolCall": "samples.records",
    "Unit": "samples.records",
    "SampledUnit": "samples.records",
    "BlindTask": "samples.records",
    "KeyEntry": "samples.records",
    "JudgeLabel": "samples.records",
    "HumanLabel": "samples.records",
    "LabelKey": "samples.records",
    "judge_label_rows": "samples.tables",
    "key_entries": "samples.tables",
    "UNIT_KINDS": "samples.records",
    "STRATUM_FIELDS": "samples.records",
    "LabelScheme": "samples.schemes",
    "SCHEMES": "samples.schemes",
    "DEFAULT_SCHEME": "samples.kinds",
    "get_scheme": "samples.schemes",
    "UnitKindSpec": "samples.kinds",
    "get_kind": "samples.kinds",
    "register_kind": "samples.kinds",
    "judge_message": "samples.kinds",
    "with_context": "samples.sampler",
    "first_turn_problem": "samples.kinds",
    "DEFAULT_SEED": "samples.seed",
    "Adapter": "samples.adapters",
    "BadRecord": "samples.adapters",
    "adapters": "samples.adapters",
    "get_adapter": "samples.adapters",
    "register_adapter": "samples.adapters",
    "ingest": "samples.ingest",
    "expand_inputs": "samples.ingest",
    "IngestResult": "samples.ingest",
    "cut_units": "samples.units",
    "render_turn": "samples.units",
    "numbered_turns": "samples.units",
    "strip_think": "samples.units",
    "unit_id": "samples.units",
    "SamplingPlan": "samples.plans",
    "load_plan": "samples.plans",
    "Draw": "samples.sampler",
    "draw": "samples.sampler",
    "sample_study": "samples.sampler",
    "read_judge_labels": "samples.sampler",
    "HardnessScorer": "samples.hardness",
    "register_scorer": "samples.hardness",
    "Scrubber": "samples.scrub",
    "blind": "samples.blind",
    "blind_study": "samples.blind",
    "IdentityLeak": "samples.blind",
    "infer_family": "samples.vocabulary",
    "load_vocabulary": "samples.vocabulary",
    "write_jsonl": "samples.jsonl",
    "read_models": "samples.jsonl",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('samples', _EXPORTS)
