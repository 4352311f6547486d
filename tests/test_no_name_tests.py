"""No code outside a registry tests a registered provider's or backend's name (issue #27).

Capabilities live on the registered objects (``judges.providers.base.ProviderKind``,
``judges.engines.Engine``, ``annotate.base`` backends, ``samples.kinds`` unit kinds), so a
third party's provider or backend is treated as a built-in. A comparison such as
``spec.provider == "rule"`` or ``backend in ("app", "labelstudio")`` re-creates the special case;
this AST scan over the five packages fails on one. A registry module (where the named objects
are defined and registered) may speak of its own names.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("samples", "agreement", "annotate", "judges", "apps")
NAMES = frozenset({"rule", "local", "openai", "anthropic", "app", "labelstudio", "simulated"})
# The modules that define and register the named objects: they alone may speak of their own names.
REGISTRY_MODULES = frozenset({
    "judges/providers/base.py", "judges/providers/sdk.py", "judges/providers/rule.py", "judges/engines.py",
    "annotate/base.py", "annotate/app_backend.py", "annotate/labelstudio/backend.py", "samples/label_sources.py",
    "annotate/store/study.py",  # the coding app's registered settings (AppSettings) and where its store is
})
# Name tests some other branch still has to replace by a capability; empty now. A new one anywhere fails.
PENDING: Counter[tuple[str, str]] = Counter()


def _named(node: ast.expr) -> list[str]:
    """The registered names a comparison operand spells out: a string, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _named(element)]
    return []


def name_tests(source: str) -> list[tuple[int, str]]:
    """(line, name) of every ``==``/``!=``/``in``/``not in`` comparison against a registered name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
            if isinstance(op, (ast.Eq, ast.NotEq)):
                found += [(node.lineno, name) for name in _named(left) + _named(right)]
            elif isinstance(op, (ast.In, ast.NotIn)):
                found += [(node.lineno, name) for name in _named(right)]
    return found


def scan() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if relative not in REGISTRY_MODULES and (hits := name_tests(path.read_text(encoding="utf-8"))):
                out[relative] = hits
    return out


def test_the_scan_sees_each_form() -> None:
    source = ('a == "rule"\n"local" != b\nc in ("app", "labelstudio")\nd not in ["simulated"]\n'
              'e == "ray"\nf in (g, "x")\nh = "openai"\n')
    assert name_tests(source) == [(1, "rule"), (2, "local"), (3, "app"), (3, "labelstudio"), (4, "simulated")]


def test_no_registered_name_is_tested_outside_its_registry() -> None:
    assert [path for path in sorted(REGISTRY_MODULES) if not (REPO / path).is_file()] == []  # no stale exemption
    counts = Counter((path, name) for path, hits in scan().items() for _, name in hits)
    new = {key: n for key, n in counts.items() if n > PENDING.get(key, 0)}
    where = [f"{path}:{line}: compares against {name!r}" for path, hits in scan().items() for line, name in hits
             if (path, name) in new]
    assert not new, ("ask the registered object for a capability instead of testing its name:\n" + "\n".join(where))
    # A pending entry that is gone must leave the list, so it cannot hide a new one later.
    assert not [key for key in PENDING if counts.get(key, 0) < PENDING[key]], f"stale PENDING entries: {dict(PENDING)}"
