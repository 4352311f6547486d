"""PEP 562 lazy exports, so `import agreement` (and the CLI start-up) stays cheap.

A package's ``__init__`` names its public API once, as imports inside ``if TYPE_CHECKING:``
(what type checkers and readers see), lists it in ``__all__``, and at run time defines
``__getattr__, __dir__ = lazy_exports(__name__)``: the first use of a name imports the module
the ``TYPE_CHECKING`` block names for it, so a command pays only for the modules it touches.
"""

from __future__ import annotations

import importlib
import sys

# The ast module's node types, from the built-in module it wraps: `import ast` alone would cost about as
# much as the rest of `import samples`.
from _ast import If, ImportFrom, Module, Name, PyCF_ONLY_AST
from collections.abc import Callable
from pathlib import Path
from typing import Any


def export_table(init_file: Path) -> dict[str, tuple[str, str]]:
    """Public name -> (module, attribute), read from the ``if TYPE_CHECKING:`` imports of ``init_file``
    (only that block is compiled: the first use of a name stays cheap)."""
    lines = init_file.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith("if TYPE_CHECKING:")), len(lines))
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "\n", "#")), len(lines))
    table: dict[str, tuple[str, str]] = {}
    block = compile("".join(lines[start:end]), str(init_file), "exec", PyCF_ONLY_AST)
    assert isinstance(block, Module)
    for node in block.body:
        if isinstance(node, If) and isinstance(node.test, Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ImportFrom) and statement.module and not statement.level:
                    table.update({alias.asname or alias.name: (statement.module, alias.name)
                                  for alias in statement.names})
    return table


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, resolving its exports on first use."""
    module = sys.modules[package]
    table: dict[str, tuple[str, str]] = {}

    def __getattr__(name: str) -> Any:
        if not table:
            table.update(export_table(Path(module.__file__ or "")))
        try:
            source, attribute = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(source), attribute)
        setattr(module, name, value)  # later uses skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *getattr(module, "__all__", ())})

    return __getattr__, __dir__
