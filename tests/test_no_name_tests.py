"""No code outside a registry tests a registered provider's or backend's name (issue #27).

Capabilities live on the registered objects (``judges.providers.base.ProviderKind``,
``judges.engines.Engine``, ``annotate.base`` backends, ``samples.kinds`` unit kinds), so a
third party's provider or backend is treated as a built-in. A comparison such as
``spec.provider == "rule"`` or ``backend in ("app", "labelstudio")`` re-creates the special case;
this AST scan over the five packages fails on one. A registry module (where the named objects
are defined and registered) may speak of its own names.

Gate criteria likewise (``agreement.criteria.CRITERIA``: the planner, the policy loader and every view ask a
criterion for ``plan()``, ``agreement_bound``, ``counts``, ...): a comparison against a registered criterion
type's name fails anywhere, except inside the class registered under that name.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("samples", "agreement", "annotate", "judges", "apps")
NAMES = frozenset({"rule", "local", "openai", "anthropic", "ray", "app", "labelstudio", "simulated"})
# The modules that define and register the named objects: they alone may speak of their own names.
REGISTRY_MODULES = frozenset({
    "judges/providers/base.py", "judges/providers/sdk.py", "judges/providers/rule.py", "judges/engines.py",
    "judges/ray_engine.py",  # the Ray engine's own module
    "annotate/base.py", "annotate/app_backend.py", "annotate/labelstudio/backend.py", "samples/label_sources.py",
    "annotate/store/study.py",  # the coding app's registered settings (AppSettings) and where its store is
})
# Name tests some other branch still has to replace by a capability; empty now. A new one anywhere fails.
PENDING: Counter[tuple[str, str]] = Counter()


def _named(node: ast.expr, names: frozenset[str]) -> list[str]:
    """The registered names a comparison operand spells out: a string, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in names else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _named(element, names)]
    return []


def name_tests(source: str, names: frozenset[str] = NAMES) -> list[tuple[int, str]]:
    """(line, name) of every ``==``/``!=``/``in``/``not in`` comparison against a registered name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
            if isinstance(op, (ast.Eq, ast.NotEq)):
                found += [(node.lineno, name) for name in _named(left, names) + _named(right, names)]
            elif isinstance(op, (ast.In, ast.NotIn)):
                found += [(node.lineno, name) for name in _named(right, names)]
    return found


def _criterion_classes(tree: ast.Module) -> list[tuple[str, int, int]]:
    """(type name, first line, last line) of every class decorated ``@register_criterion("type name")``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for decorator in node.decorator_list:
                if (isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "register_criterion"
                        and decorator.args and isinstance(decorator.args[0], ast.Constant)):
                    out.append((decorator.args[0].value, node.lineno, node.end_lineno or node.lineno))
    return out


def criterion_type_tests(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, type name) of every comparison against a criterion type's name outside the class registered
    under that name."""
    own = _criterion_classes(ast.parse(source))
    return [(line, name) for line, name in name_tests(source, names)
            if not any(name == kind and first <= line <= last for kind, first, last in own)]


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
              'e == "ray"\nf in (g, "x")\nh = "openai"\ni == "vllm"\n')
    assert name_tests(source) == [(1, "rule"), (2, "local"), (3, "app"), (3, "labelstudio"), (4, "simulated"),
                                  (5, "ray")]


def test_no_registered_name_is_tested_outside_its_registry() -> None:
    assert [path for path in sorted(REGISTRY_MODULES) if not (REPO / path).is_file()] == []  # no stale exemption
    counts = Counter((path, name) for path, hits in scan().items() for _, name in hits)
    new = {key: n for key, n in counts.items() if n > PENDING.get(key, 0)}
    where = [f"{path}:{line}: compares against {name!r}" for path, hits in scan().items() for line, name in hits
             if (path, name) in new]
    assert not new, ("ask the registered object for a capability instead of testing its name:\n" + "\n".join(where))
    # A pending entry that is gone must leave the list, so it cannot hide a new one later.
    assert not [key for key in PENDING if counts.get(key, 0) < PENDING[key]], f"stale PENDING entries: {dict(PENDING)}"


def test_no_criterion_type_is_tested_outside_its_class() -> None:
    from agreement.criteria import CRITERIA

    names = frozenset(CRITERIA)
    assert {"agreement_floor", "beats_baselines", "tracks_input", "human_ceiling", "unscored_share"} <= names
    source = ('@register_criterion("tracks_input")\nclass T:\n    def f(self, c):\n        return c == "tracks_input"\n'
              'def g(c):\n    return c.type_name == "agreement_floor" or c.type in ("beats_baselines", "x")\n')
    assert criterion_type_tests(source, names) == [(6, "agreement_floor"), (6, "beats_baselines")]
    hits = {relative: found for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))
            if (found := criterion_type_tests(path.read_text(encoding="utf-8"), names))
            for relative in [path.relative_to(REPO).as_posix()]}
    assert hits == {}, ("ask the registered criterion for a capability (agreement.criteria.Criterion) instead of "
                        f"testing its type name: {hits}")
