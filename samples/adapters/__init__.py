"""Adapter registry: source formats -> canonical ``Trajectory`` records.

Built-in adapters register themselves exactly as a third-party one would, by
calling ``register_adapter(instance)`` when their module is imported; the
registry imports the built-in modules on first use.
"""

from __future__ import annotations

from samples.adapters.base import Adapter, AdapterBase, BadRecord, FieldProblem, Item
from samples.registry import Registry

_BUILTIN_MODULES = (
    "samples.adapters.canonical",
    "samples.adapters.ise",
    "samples.adapters.openai_messages",
    "samples.adapters.who_and_when",
    "samples.adapters.mad",
    "samples.adapters.responses",
    "samples.adapters.generic",
    "samples.adapters.inspect_logs",
    "samples.adapters.asa_tau",
)
_REGISTRY: Registry[Adapter] = Registry("adapter", builtins=_BUILTIN_MODULES)


def register_adapter(adapter: Adapter) -> Adapter:
    """Add an adapter under ``adapter.name``; another adapter with the same name is refused."""
    if not isinstance(adapter, Adapter):
        raise TypeError(f"register_adapter: {adapter!r} does not implement the Adapter protocol (name, summary, options, locate, read)")
    return _REGISTRY.register(adapter.name, adapter)


def adapters() -> dict[str, Adapter]:
    return dict(_REGISTRY.items())


def get_adapter(name: str) -> Adapter:
    return _REGISTRY.get_one(name)


__all__ = ["Adapter", "AdapterBase", "BadRecord", "FieldProblem", "Item", "adapters", "get_adapter", "register_adapter"]
