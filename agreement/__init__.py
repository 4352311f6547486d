"""Agreement statistics with honest uncertainty: coefficients, panels, gate, scores."""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('agreement', _EXPORTS)
