"""The provider extension point: a Protocol, its value types and a registry.

A provider turns one canonical request (a JSON-able dict, also the cache key's
content) into a ``Completion`` or raises ``CallError``. Retries, rate limits and
timeouts live in the runner, so every provider is a single attempt; SDK-level
retries are switched off. Built-ins register through ``register_provider`` exactly
as a third-party provider would; SDKs are imported only when a provider is built.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from samples.errors import InputError


@dataclass(frozen=True, kw_only=True)
class Completion:
    """One successful answer. ``raw`` is what the cache stores and batch results map to."""

    text: str
    truncated: bool
    input_tokens: int | None
    output_tokens: int | None
    raw: dict[str, Any] = field(default_factory=dict)


class CallError(Exception):
    """One failed attempt; ``retryable`` says whether the runner may try again."""

    def __init__(self, detail: str, *, retryable: bool, status: int | None = None, retry_after: float | None = None,
                 reason: str = "call_failed"):
        super().__init__(detail)
        self.detail = detail
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.reason = reason
        """The unscored reason a final failure records: ``call_failed`` (tried again by the next run) or
        ``CONTEXT_EXCEEDED`` (the unit does not fit the model's context: the same request would fail again)."""


CONTEXT_EXCEEDED = "context_exceeded"


@dataclass(frozen=True, kw_only=True)
class ProviderConfig:
    """How to reach a provider; not part of the cache key (the same model answers the same)."""

    base_url: str | None = None
    api_key_env: str | None = None
    api: str = "openai"
    timeout_s: float = 60.0


@runtime_checkable
class Provider(Protocol):
    name: str
    cacheable: bool  # False for local rule classifiers (cheaper to rerun than to look up)
    # Optional: ``context_tokens: int | None``, the tokens of context one request may fill (a local server's
    # slot); the dry run warns about units estimated past it. Providers without it have no known limit.

    def build_request(self, *, model: str, system: str | None, user: str, params: Mapping[str, Any],
                      output_kind: str, sample_index: int, unit: Any) -> dict[str, Any]:
        """The canonical, JSON-able request for one call: hashed for the cache key.

        For a cacheable provider it may depend on ``unit`` only through ``user`` (the
        unit's text), so the same text always maps to the same cached response.
        """
        ...

    async def complete(self, request: Mapping[str, Any]) -> Completion: ...

    def completion_from_raw(self, raw: Mapping[str, Any]) -> Completion:
        """Rebuild a completion from a cached or batch-result body."""
        ...

    async def aclose(self) -> None: ...


ProviderFactory = Callable[[ProviderConfig], Provider]
_REGISTRY: dict[str, ProviderFactory] = {}


def register_provider(name: str, factory: ProviderFactory) -> None:
    if name in _REGISTRY:
        raise ValueError(f"provider {name!r} is already registered")
    _REGISTRY[name] = factory


def provider_names() -> list[str]:
    # Importing this module first ran judges/providers/__init__.py, which registers the built-ins.
    return sorted(_REGISTRY)


def make_provider(name: str, config: ProviderConfig) -> Provider:
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown provider {name!r}; known: {sorted(_REGISTRY)}") from None
    return factory(config)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None when unusable.

    The runner caps the wait at the judge's ``max_backoff_s``.
    """
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None  # "nan" / "inf": no usable wish
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_is_retryable(status: int) -> bool:
    return status == 429 or status == 408 or status >= 500
