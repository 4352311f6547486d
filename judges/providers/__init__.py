"""Providers: the Protocol, the registry and the built-ins (openai, anthropic, local, rule).

Importing this package registers the built-ins; their SDKs load only when a
provider is built and first called.
"""

from judges.providers import rule, sdk  # noqa: F401  (registration side effects)
from judges.providers.base import (
    CallError,
    Completion,
    Provider,
    ProviderConfig,
    make_provider,
    provider_names,
    register_provider,
)

__all__ = ["CallError", "Completion", "Provider", "ProviderConfig", "make_provider", "provider_names", "register_provider"]
