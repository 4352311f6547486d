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

from samples import Registry


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


OPENAI_API = "openai"
"""The OpenAI chat-completions wire format (hosted OpenAI, vLLM, llama-server)."""
ANTHROPIC_API = "anthropic"
"""The Anthropic Messages wire format."""


@dataclass(frozen=True, kw_only=True)
class ProviderConfig:
    """How to reach a provider; not part of the cache key (the same model answers the same)."""

    base_url: str | None = None
    api_key_env: str | None = None
    api: str = OPENAI_API
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

JUDGE_PARAMS = ("temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "reasoning_effort", "constrain")
"""The judge parameters a model provider accepts unless it registers its own (judges.spec checks their values)."""


@dataclass(frozen=True, kw_only=True)
class ProviderKind:
    """A registered provider: how to build it and what it can do. Code asks these capabilities
    instead of testing a provider's name, so a third party's provider is treated as a built-in."""

    name: str
    factory: ProviderFactory
    prompt: bool = True
    """Whether a judge of it takes a prompt; without one (a rule classifier) its model names the output."""
    params: tuple[str, ...] = JUDGE_PARAMS
    """The ``params`` a judge of it may set (the parameter schema; values checked by judges.spec)."""
    apis: tuple[str, ...] = (OPENAI_API,)
    """The wire formats (``api``) it speaks; the first is a judge's default."""
    wire_body: bool = False
    """Its request's ``body`` is the API's wire JSON, which a generic HTTP client may post (the Ray http processor)."""
    local_server: bool = False
    """It runs on the llama-server accord starts (``accord judges serve``, ``accord run``): a judge without a
    base_url is sent there, and one limiter guards each model, since the router serves each from its own process."""
    in_process: bool = False
    """It answers in this process (no model call), whatever engine the run names."""
    api_key_env: str | None = None
    """The environment variable holding its API key when a judge names none."""
    batch_format: str | None = None
    """The provider's documented batch-file format (``judges.batch``); None: it has no batch API."""
    models: Callable[[], list[str]] | None = None
    """A closed set of models (a prompt-less provider's classifiers); None: any model name."""
    model_output: Callable[[str], tuple[str, tuple[str, ...]]] | None = None
    """A prompt-less provider's model -> (output kind, unit kinds) it answers."""
    model_version: Callable[[str], str] | None = None
    """What identifies a model's logic in a judge's fingerprint (a rule's version); None: the model name does."""

    def __post_init__(self) -> None:
        if not self.apis:
            raise ValueError(f"provider {self.name!r}: apis must name at least one wire format")
        if not self.prompt and (self.models is None or self.model_output is None):
            raise ValueError(f"provider {self.name!r}: a provider without a prompt needs models and model_output")

    def concurrency_key(self, spec: Any) -> tuple[str, str | None, str, str | None]:
        """What one concurrency/rate limiter guards for a judge: a hosted API per endpoint; a local
        server per model."""
        return spec.provider, spec.connection.base_url, spec.connection.api, spec.model if self.local_server else None


_REGISTRY: Registry[ProviderKind] = Registry("provider", builtins=("judges.providers.rule", "judges.providers.sdk"))


def register_provider(name: str, factory: ProviderFactory, **capabilities: Any) -> ProviderKind:
    """Add a provider; ``capabilities`` are ``ProviderKind``'s fields (default: a prompted model provider)."""
    return _REGISTRY.register(name, ProviderKind(name=name, factory=factory, **capabilities))


def get_provider(name: str, *, where: str | None = None) -> ProviderKind:
    """The registered provider ``name`` with its capabilities."""
    return _REGISTRY.get_one(name, where=where)


def provider_names() -> list[str]:
    return _REGISTRY.names()


def api_names() -> list[str]:
    """Every wire API a registered provider speaks (its ``apis``), in name order."""
    return sorted({api for name in provider_names() for api in get_provider(name).apis})


def make_provider(name: str, config: ProviderConfig) -> Provider:
    return get_provider(name).factory(config)


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
