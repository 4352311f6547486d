"""Blind annotation: the coding app store, Label Studio, adjudication."""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "HumanLabel": "annotate.records",
    "AnnotationBackend": "annotate.base",
    "PushReport": "annotate.base",
    "BackendStatus": "annotate.base",
    "register_backend": "annotate.base",
    "get_backend": "annotate.base",
    "load_tasks": "annotate.tasks",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('annotate', _EXPORTS)
