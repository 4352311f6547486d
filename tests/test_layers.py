"""The five packages layer one way, with no import circle (an AST import graph of the source).

apps -> (agreement, annotate, judges) -> samples; agreement, the statistics engine and
the study layer over it, never imports judges or annotate (the study's labels reach it
as files). Every import counts, also one inside a function: a lazy import still ties
the two modules together, it only hides the knot until run time. A package's export table (the
``if TYPE_CHECKING:`` imports of its ``__init__``, imported lazily by ``samples.lazy``) is no import
of its own: ``from agreement import gate_study`` counts as an import of the module the table names.
"""

from __future__ import annotations

import ast
from pathlib import Path

from samples.lazy import export_table

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("samples", "agreement", "annotate", "judges", "apps")
# A package may import only from the packages listed for it (and itself).
ALLOWED = {"samples": set(), "agreement": {"samples"}, "annotate": {"samples"}, "judges": {"samples"},
           "apps": {"samples", "agreement", "annotate", "judges"}}
# No circle is tolerated: a new one fails here (issue #27 removed the last ones by moving shared
# definitions down to the module they belong to).
KNOWN_CIRCLES: list[list[str]] = []


def module_files() -> dict[str, Path]:
    files = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def run_time_nodes(path: Path) -> list[ast.AST]:
    """The nodes of ``path``, without a package ``__init__``'s export table (imported only when a name is used)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if path.name == "__init__.py":
        tree.body = [node for node in tree.body if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                                                        and node.test.id == "TYPE_CHECKING")] + [
            statement for node in tree.body if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING" for statement in node.orelse]
    return list(ast.walk(tree))


def exported_from(tables: dict[str, dict[str, tuple[str, str]]], package: str, name: str) -> list[str]:
    """The modules ``from package import name`` loads through export tables (one re-exporting another's)."""
    modules: list[str] = []
    while name in tables.get(package, {}) and len(modules) < len(tables):  # bounded: a table naming itself ends
        package, name = tables[package][name]
        modules.append(package)
    return modules


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from a import b`` counts ``a.b`` when it is a module, and
    the module ``a``'s export table names for ``b``)."""
    files = module_files()
    tables = {name: export_table(path) for name, path in files.items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in run_time_nodes(path):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names),
                           *(m for alias in node.names for m in exported_from(tables, base, alias.name))]
            else:
                continue
            graph[name] |= {t for t in targets if t in files and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_graph_sees_the_packages() -> None:
    graph = import_graph()
    assert {name.split(".")[0] for name in graph} == set(PACKAGES)
    assert "samples.errors" in graph["agreement.plan"]  # `from samples import InputError`, through the export table


def test_circles_are_found() -> None:
    # The detector itself, on a hand-made graph: a <-> b and c -> d -> e -> c are circles, f -> a is not.
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert circles(graph) == [["a", "b"], ["c", "d", "e"]]


def test_no_import_circle_beyond_the_known_ones() -> None:
    assert circles(import_graph()) == KNOWN_CIRCLES


def test_packages_import_only_downwards() -> None:
    wrong = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets
                   if b.split(".")[0] != a.split(".")[0] and b.split(".")[0] not in ALLOWED[a.split(".")[0]])
    assert wrong == []
