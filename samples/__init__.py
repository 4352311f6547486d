"""Trajectories in, a blinded, stratified, reproducible sample out.

Public API is exported lazily (PEP 562) so that light users such as the CLI's
start-up do not pay for pydantic until they touch a record.
"""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "InputError": "samples.errors",
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
    "UNIT_KINDS": "samples.records",
    "STRATUM_FIELDS": "samples.records",
    "LabelScheme": "samples.schemes",
    "SCHEMES": "samples.schemes",
    "DEFAULT_SCHEME": "samples.schemes",
    "get_scheme": "samples.schemes",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('samples', _EXPORTS)
