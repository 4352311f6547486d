"""Trajectories in, a blinded, stratified, reproducible sample out.

Modules: ``records`` (data contracts), ``adapters`` (source formats -> Trajectory,
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

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # where each public name lives: type checkers read it, lazy_exports imports it on first use
    from samples.adapters import Adapter, BadRecord, get_adapter, register_adapter
    from samples.adapters import adapters as trajectory_adapters
    from samples.asa import AUTHORS, MILESTONES, REFERENCE_KEY, AsaReference
    from samples.blind import IdentityLeak, annotator_order, blind_study, blinding_salt_for, task_id
    from samples.blind import blind as blind_units
    from samples.canonical import canonical_json, file_sha256, sha256_hex
    from samples.context import with_context
    from samples.documents import SampleManifest, read_blind_audit
    from samples.errors import InputError
    from samples.generation import check_generation, publishing
    from samples.hardness import HardnessScorer, register_scorer
    from samples.imports import (
        ANY_SCHEME,
        MatchColumns,
        UnitMatcher,
        check_columns,
        check_label_types,
        collect,
        import_rows,
        label_text,
        publish_import,
        read_table,
        select,
        table_source,
        units_from_rows,
        with_id_groups,
    )
    from samples.ingest import IngestResult, expand_inputs, usable_cores
    from samples.ingest import ingest as ingest_trajectories
    from samples.intervals import DEFAULT_LEVEL, ConfidenceInterval, check_level, held_interval
    from samples.jsonl import (
        PRIVATE_FILE,
        atomic_writer,
        decode_json_line,
        iter_jsonl_lines,
        json_objects,
        json_objects_noting,
        jsonable,
        open_rows_file,
        private_dir,
        private_file,
        read_json,
        read_models,
        read_settings,
        record_bytes,
        regular_file,
        writable_folder,
        write_json,
        write_jsonl,
        write_result,
    )
    from samples.kinds import (
        DEFAULT_SCHEME,
        UnitKindSpec,
        check_schemes,
        check_template,
        first_turn_offered,
        first_turn_problem,
        get_kind,
        is_kind,
        judge_message,
        projected_from,
        register_kind,
        response_kinds,
        scheme_for,
        study_schemes,
    )
    from samples.kinds import kinds as unit_kinds
    from samples.label_sources import SIMULATED, LabelRows, register_label_source, simulated
    from samples.label_sources import label_sources as human_label_sources
    from samples.layout import StudyLayout
    from samples.lazy import lazy_exports
    from samples.leakcheck import LeakDetector
    from samples.names import check_annotator_name
    from samples.plans import SamplingPlan, load_plan
    from samples.records import (
        STRATUM_FIELDS,
        UNIT_KINDS,
        BlindTask,
        HumanLabel,
        JudgeLabel,
        KeyEntry,
        LabelKey,
        SampledUnit,
        Step,
        ToolCall,
        Trajectory,
        Unit,
        UnitKind,
    )
    from samples.registry import PLUGIN_GROUP, Registry, load_plugins
    from samples.resampling import MAX_RESAMPLES, MIN_RESAMPLES, Resampling, check_resamples
    from samples.sampler import Draw, draw, judge_label, read_judge_labels, sample_study
    from samples.schemes import SCHEMES, LabelScheme, get_scheme
    from samples.scrub import Scrubber
    from samples.seed import DEFAULT_SEED
    from samples.sqlite import use_wal
    from samples.table_rows import TableRow
    from samples.tables import judge_label_rows, key_entries
    from samples.units import cut_units, is_turn, numbered_turns, render_turn, strip_think, unit_id
    from samples.vocabulary import UNKNOWN_FAMILY, infer_family, load_vocabulary
else:
    from samples.lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = [
    # samples.adapters: Adapter registry: source formats -> canonical ``Trajectory`` records
    "Adapter",
    "BadRecord",
    "get_adapter",
    "register_adapter",
    "trajectory_adapters",
    # samples.asa: The ASA protected reference (seed 003, "Agentic Self-Awareness"): what a blocked task's design says
    "AUTHORS",
    "AsaReference",
    "MILESTONES",
    "REFERENCE_KEY",
    # samples.blind: Blinding: a sample -> annotator tasks, a sealed key, per-annotator orders and an audit
    "IdentityLeak",
    "annotator_order",
    "blind_study",
    "blind_units",
    "blinding_salt_for",
    "task_id",
    # samples.canonical: Canonical JSON and content hashes: the identity of requests, inputs and runs
    "canonical_json",
    "file_sha256",
    "sha256_hex",
    # samples.context: The numbered context (the unit's turns 0..i) that units of some kinds need in their judge message
    "with_context",
    # samples.documents: Typed documents of the sampling and blinding stages: written and read back through the same ...
    "SampleManifest",
    "read_blind_audit",
    # samples.errors: The one error type for user mistakes, shared by every accord package
    "InputError",
    # samples.generation: Stages that commit as a set: a stage's files are published together, as one generation
    "check_generation",
    "publishing",
    # samples.hardness: Hard-negative scorers: which negatives are hardest to tell from a positive
    "HardnessScorer",
    "register_scorer",
    # samples.imports: Bringing labels people already have into a study: their tables, and the units they are about
    "ANY_SCHEME",
    "MatchColumns",
    "UnitMatcher",
    "check_columns",
    "check_label_types",
    "collect",
    "import_rows",
    "label_text",
    "publish_import",
    "read_table",
    "select",
    "table_source",
    "units_from_rows",
    "with_id_groups",
    # samples.ingest: Ingest: source files -> ``trajectories.jsonl`` (+ ``units.jsonl``) and ``ingest_manifest.json``
    "IngestResult",
    "expand_inputs",
    "ingest_trajectories",
    "usable_cores",
    # samples.intervals: The one shape of a confidence interval, and the one default confidence level
    "ConfidenceInterval",
    "DEFAULT_LEVEL",
    "check_level",
    "held_interval",
    # samples.jsonl: Deterministic JSONL files: canonical bytes out, line-numbered records in
    "PRIVATE_FILE",
    "atomic_writer",
    "decode_json_line",
    "iter_jsonl_lines",
    "json_objects",
    "json_objects_noting",
    "jsonable",
    "open_rows_file",
    "private_dir",
    "private_file",
    "read_json",
    "read_models",
    "read_settings",
    "record_bytes",
    "regular_file",
    "writable_folder",
    "write_json",
    "write_jsonl",
    "write_result",
    # samples.kinds: Unit kinds: one spec per kind says how units are cut, what the judge reads and what a person sees
    "DEFAULT_SCHEME",
    "UnitKindSpec",
    "check_schemes",
    "check_template",
    "first_turn_offered",
    "first_turn_problem",
    "get_kind",
    "is_kind",
    "judge_message",
    "projected_from",
    "register_kind",
    "response_kinds",
    "scheme_for",
    "study_schemes",
    "unit_kinds",
    # samples.label_sources: Where human labels live besides labels files: the registry of human label sources
    "LabelRows",
    "SIMULATED",
    "human_label_sources",
    "register_label_source",
    "simulated",
    # samples.layout: Where every file of a study folder lives: the one place that spells its paths
    "StudyLayout",
    # samples.lazy: PEP 562 lazy exports, so `import agreement` (and the CLI start-up) stays cheap
    "lazy_exports",
    # samples.leakcheck: Leak detector: finds identity terms in a scrubbed text, independently of the scrubber
    "LeakDetector",
    # samples.names: The annotator-name rule, shared by blinding (refused at blind time) and the coding app's store
    "check_annotator_name",
    # samples.plans: Sampling plans: a TOML file declaring strata, an allocation and the sampling rules
    "SamplingPlan",
    "load_plan",
    # samples.records: Canonical records: what every stage of accord reads and writes
    "BlindTask",
    "HumanLabel",
    "JudgeLabel",
    "KeyEntry",
    "LabelKey",
    "STRATUM_FIELDS",
    "SampledUnit",
    "Step",
    "ToolCall",
    "Trajectory",
    "UNIT_KINDS",
    "Unit",
    "UnitKind",
    # samples.registry: The one registry type of every extension point, and third-party plugins through entry points
    "PLUGIN_GROUP",
    "Registry",
    "load_plugins",
    # samples.resampling: The resampling settings of every interval (n_resamples, seed, level), validated once, here
    "MAX_RESAMPLES",
    "MIN_RESAMPLES",
    "Resampling",
    "check_resamples",
    # samples.sampler: Stratified sampling with exact inclusion probabilities
    "Draw",
    "draw",
    "judge_label",
    "read_judge_labels",
    "sample_study",
    # samples.schemes: Label schemes: the closed set of labels each judgement task may produce
    "LabelScheme",
    "SCHEMES",
    "get_scheme",
    # samples.scrub: Identity scrubber: masks model, vendor and harness names before annotators see a text
    "Scrubber",
    # samples.seed: The one default seed: every sampled, blinded, resampled or simulated result is reproducible from it
    "DEFAULT_SEED",
    # samples.sqlite: What every SQLite file of accord shares (the judges' request cache, the coding app's store)
    "use_wal",
    # samples.table_rows: One row of a label table: the record every table reader returns (``samples.imports`` and ...
    "TableRow",
    # samples.tables: The one reader of each shared record table: the judge labels and the sealed key
    "judge_label_rows",
    "key_entries",
    # samples.units: Cutting trajectories into units: exactly what each judge and annotator reads
    "cut_units",
    "is_turn",
    "numbered_turns",
    "render_turn",
    "strip_think",
    "unit_id",
    # samples.vocabulary: The maintained identity vocabulary (``identity_vocabulary.toml``) and family inference
    "UNKNOWN_FAMILY",
    "infer_family",
    "load_vocabulary",
]
