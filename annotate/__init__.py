"""Blind annotation: the coding app store, Label Studio, adjudication."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # where each public name lives: type checkers read it, lazy_exports imports it on first use
    from annotate.adjudicate import Disagreement, adjudication_queue
    from annotate.app_backend import (
        AdjudicatorSession,
        AnnotatorSession,
        AppBackend,
        PracticeResult,
        PracticeSession,
        sign_in,
        store_labels_digest,
    )
    from annotate.base import (
        AnnotationBackend,
        BackendStatus,
        BackendType,
        PushReport,
        backend_names,
        backend_settings,
        build_backend,
        get_backend,
        get_backend_factory,
        register_backend,
    )
    from annotate.codebook import codebook_for_kind, codebook_html, question
    from annotate.engines import StoreUnavailable, check_store_url
    from annotate.export import check_not_fewer, export_labels
    from annotate.gold import add_gold, add_practice, gold_accuracy, load_gold, split_labels, study_gold_accuracy
    from annotate.imported_labels import HumanColumns, human_import, import_human_labels
    from annotate.labelstudio import (
        LabelStudioBackend,
        LabelStudioPullReport,
        LabelStudioSettings,
        display_payload,
        labeling_config,
        load_labelstudio_credentials,
        load_labelstudio_state,
    )
    from annotate.labelstudio.server import ADMIN_PASSWORD_ENV as LABELSTUDIO_ADMIN_PASSWORD_ENV
    from annotate.labelstudio.server import TOKEN_ENV as LABELSTUDIO_TOKEN_ENV
    from annotate.store import (
        STORE_URL_ENV,
        Revision,
        Store,
        SubmitResult,
        blinding_seed,
        copy_store,
        store_location,
        with_study_schema,
    )
    from annotate.tasks import check_name, check_orders, load_orders, load_tasks
else:
    from samples import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = [
    # annotate.adjudicate: The adjudication queue: units whose independent labels disagree
    "Disagreement",
    "adjudication_queue",
    # annotate.app_backend: What the coding app may show a signed-in person, and the "app" annotation backend
    "AdjudicatorSession",
    "AnnotatorSession",
    "AppBackend",
    "PracticeResult",
    "PracticeSession",
    "sign_in",
    "store_labels_digest",
    # annotate.base: The annotation backend extension point and its registry
    "AnnotationBackend",
    "BackendStatus",
    "BackendType",
    "PushReport",
    "backend_names",
    "backend_settings",
    "build_backend",
    "get_backend",
    "get_backend_factory",
    "register_backend",
    # annotate.codebook: Codebooks for people: the judge prompts' criteria, one Markdown file per label scheme
    "codebook_for_kind",
    "codebook_html",
    "question",
    # annotate.engines: The label store's database engines: SQLite (embedded default) and PostgreSQL (several servers)
    "StoreUnavailable",
    "check_store_url",
    # annotate.export: Write the human labels table (``HumanLabel`` rows) as CSV, Parquet or JSONL
    "check_not_fewer",
    "export_labels",
    # annotate.gold: Gold units: known-answer units placed into each annotator's order, scored apart
    "add_gold",
    "add_practice",
    "gold_accuracy",
    "load_gold",
    "split_labels",
    "study_gold_accuracy",
    # annotate.imported_labels: Importing human labels people already have (CSV, JSONL, Parquet or a named format) ...
    "HumanColumns",
    "human_import",
    "import_human_labels",
    # annotate.labelstudio: The Label Studio backend: one organisation per annotator, owner accounts, idempotent ...
    "LabelStudioBackend",
    "LabelStudioPullReport",
    "LabelStudioSettings",
    "display_payload",
    "labeling_config",
    "load_labelstudio_credentials",
    "load_labelstudio_state",
    # annotate.labelstudio.server: Reaching a Label Studio server: its settings in a study file, one-line errors for ...
    "LABELSTUDIO_ADMIN_PASSWORD_ENV",
    "LABELSTUDIO_TOKEN_ENV",
    # annotate.store: The coding app's store: annotators, blinded tasks, orders and labels
    "Revision",
    "STORE_URL_ENV",
    "Store",
    "SubmitResult",
    "blinding_seed",
    "copy_store",
    "store_location",
    "with_study_schema",
    # annotate.tasks: Loading blinded tasks for an annotation backend, refusing anything not blinded
    "check_name",
    "check_orders",
    "load_orders",
    "load_tasks",
]
