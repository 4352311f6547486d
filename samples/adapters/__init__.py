"""Adapter registry: source formats -> canonical ``Trajectory`` records.

Built-in adapters register themselves exactly as a third-party one would, by
calling ``register_adapter(instance)`` when their module is imported; the
registry imports the built-in modules on first use.
"""

from __future__ import annotations

import importlib

from samples.adapters.base import Adapter, AdapterBase, BadRecord, FieldProblem, Item
from samples.errors import InputError

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
_REGISTRY: dict[str, Adapter] = {}
_loaded = False


def register_adapter(adapter: Adapter) -> Adapter:
    """Add an adapter under ``adapter.name``; a second adapter with the same name is refused."""
    if not isinstance(adapter, Adapter):
        raise TypeError(f"register_adapter: {adapter!r} does not implement the Adapter protocol (name, summary, options, locate, read)")
    existing = _REGISTRY.get(adapter.name)
    if existing is not None and type(existing) is not type(adapter):
        raise ValueError(f"register_adapter: an adapter named {adapter.name!r} is already registered ({type(existing).__name__})")
    _REGISTRY[adapter.name] = adapter
    return adapter


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        for module in _BUILTIN_MODULES:
            importlib.import_module(module)
        _loaded = True


def adapters() -> dict[str, Adapter]:
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def get_adapter(name: str) -> Adapter:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown adapter {name!r}; choose from {sorted(_REGISTRY)}") from None


__all__ = ["Adapter", "AdapterBase", "BadRecord", "FieldProblem", "Item", "adapters", "get_adapter", "register_adapter"]
