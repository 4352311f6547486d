"""Blind annotation: the coding app store, Label Studio, adjudication."""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "HumanLabel": "annotate.records",
    "SIMULATED": "annotate.records",
    "AnnotationBackend": "annotate.base",
    "PushReport": "annotate.base",
    "BackendStatus": "annotate.base",
    "register_backend": "annotate.base",
    "get_backend": "annotate.base",
    "get_backend_factory": "annotate.base",
    "build_backend": "annotate.base",
    "backend_names": "annotate.base",
    "backend_settings": "annotate.base",
    "BackendType": "annotate.base",
    "load_tasks": "annotate.tasks",
    "LabelStudioBackend": "annotate.labelstudio",
    "LabelStudioPullReport": "annotate.labelstudio",
    "load_labelstudio_credentials": "annotate.labelstudio",
    "Store": "annotate.store",
    "SubmitResult": "annotate.store",
    "Revision": "annotate.store",
    "AppBackend": "annotate.app_backend",
    "AnnotatorSession": "annotate.app_backend",
    "AdjudicatorSession": "annotate.app_backend",
    "sign_in": "annotate.app_backend",
    "store_labels_digest": "annotate.app_backend",
    "load_orders": "annotate.tasks",
    "check_orders": "annotate.tasks",
    "check_name": "annotate.tasks",
    "adjudication_queue": "annotate.adjudicate",
    "Disagreement": "annotate.adjudicate",
    "export_labels": "annotate.export",
    "codebook_for_kind": "annotate.codebook",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('annotate', _EXPORTS)
