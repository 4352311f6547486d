"""LLM judges and rule classifiers over units: cached, resumable, every prompt versioned."""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "JudgeLabel": "judges.records",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('judges', _EXPORTS)
