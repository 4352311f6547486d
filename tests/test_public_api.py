"""Each package's public API is its ``__init__`` (issue #27): other packages import only through it.

A package's ``__init__`` names every public name once, as the imports of its ``if TYPE_CHECKING:``
block (``samples.lazy.export_table``), lists them in ``__all__``, and imports each lazily on first use.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys

import pytest

from samples.lazy import export_table
from tests.test_layers import PACKAGES, REPO, module_files

# Every package __init__ with a lazy export table: the five packages' (apps exports `main` eagerly) and
# the demo fixture's.
LAZY = ("samples", "judges", "agreement", "annotate", "apps.demo")


def deep_cross_package_imports(source: str, own: str) -> list[str]:
    """The imports in ``source`` (code of package ``own``) that reach into another package's submodule."""
    deep = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            top = node.module.split(".")[0]
            if top in PACKAGES and top != own and node.module != top:
                deep.append(f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            deep += [f"{node.lineno}: import {a.name}" for a in node.names
                     if a.name.split(".")[0] in PACKAGES and a.name.split(".")[0] != own]
    return deep


def test_the_check_finds_deep_imports() -> None:
    # The detector on hand-made code of package agreement: every deep form is found, wherever it sits;
    # an import through the package, or of the package's own submodule, is not.
    source = ("from samples.errors import InputError\nimport judges.runner\n"
              "def f():\n    from annotate.store import Store\n"
              "if TYPE_CHECKING:\n    from samples.records import Unit\n"
              "from samples import InputError\nfrom agreement.gate import gate_study\nimport numpy.linalg\n")
    assert deep_cross_package_imports(source, "agreement") == [
        "1: from samples.errors import InputError", "2: import judges.runner",
        "4: from annotate.store import Store", "6: from samples.records import Unit"]


def test_package_code_imports_other_packages_only_through_their_init() -> None:
    deep = [f"{path.relative_to(REPO)}:{line}" for name, path in module_files().items()
            for line in deep_cross_package_imports(path.read_text(encoding="utf-8"), name.split(".")[0])]
    assert deep == []


def test_what_other_packages_import_is_in_the_export_table() -> None:
    # `from agreement import x` must name an exported name, not a module or a name the package
    # happens to hold (a module object imported this way depends on import order).
    missing = []
    for name, path in module_files().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in PACKAGES \
                    and node.module != name.split(".")[0]:
                exported = importlib.import_module(node.module).__all__
                missing += [f"{path.relative_to(REPO)}:{node.lineno} {node.module}.{a.name}"
                            for a in node.names if a.name not in exported]
    assert missing == []


@pytest.mark.parametrize("package", LAZY)
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    table = export_table(REPO.joinpath(*package.split("."), "__init__.py"))
    assert len(module.__all__) == len(set(module.__all__))
    assert sorted(module.__all__) == sorted(table)  # one list: what __all__ says is what the table imports
    unresolved = []
    for name in module.__all__:
        source, attribute = table[name]
        value = getattr(module, name)
        if value is not getattr(importlib.import_module(source), attribute):
            unresolved.append(name)
    assert unresolved == []
    assert set(module.__all__) <= set(dir(module))


def test_the_export_table_reads_the_type_checking_block(tmp_path) -> None:
    # What ast reads in a hand-made __init__: aliases, a parenthesised list, comments, blank lines; the
    # else branch, imports outside the block and plain/relative imports are no exports.
    init = tmp_path / "__init__.py"
    init.write_text('"""Doc."""\n\nfrom typing import TYPE_CHECKING\n\nfrom os import sep\n\n'
                    "if TYPE_CHECKING:  # the table\n    from pkg.a import A, f as g\n\n"
                    "    # a comment\n    from pkg.b import (\n        B,  # why\n        c,\n    )\n"
                    "    import pkg.d\n    from . import e\nelse:\n    from pkg.x import X\n\n"
                    '__all__ = ["A", "g"]\n', encoding="utf-8")
    assert export_table(init) == {"A": ("pkg.a", "A"), "g": ("pkg.a", "f"), "B": ("pkg.b", "B"), "c": ("pkg.b", "c")}


@pytest.mark.parametrize("package", LAZY)
def test_the_export_table_is_what_ast_reads(package: str) -> None:
    # The run-time reader compiles only the block; ast over the whole file is the reference.
    init = REPO.joinpath(*package.split("."), "__init__.py")
    reference = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                reference.update({a.asname or a.name: (statement.module, a.name) for a in statement.names})
    assert reference and export_table(init) == reference


@pytest.mark.parametrize("package", LAZY)
def test_no_exported_name_is_also_a_submodule(package: str) -> None:
    # Importing package.X rebinds the package's attribute X to that module, hiding an exported X.
    module = importlib.import_module(package)
    clash = {info.name for info in pkgutil.iter_modules(module.__path__)} & set(module.__all__)
    assert clash == set()


def test_an_unknown_name_is_an_attribute_error() -> None:
    import agreement

    with pytest.raises(AttributeError, match="module 'agreement' has no attribute 'gate_studies'"):
        agreement.gate_studies  # noqa: B018
    with pytest.raises(ImportError, match="cannot import name 'gate_studies'"):
        exec("from agreement import gate_studies")


def test_importing_a_package_imports_none_of_its_modules() -> None:
    # The exports are lazy: `import agreement` (as the CLI's start-up does) loads only the helper, and the
    # first use of a name loads the module holding it and what that module needs, not the whole package.
    code = ("import sys; import samples, judges, agreement, annotate\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'samples', 'judges', 'agreement', "
            "'annotate', 'numpy', 'pydantic', 'pandas'}))\n"
            "from samples import InputError\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'samples', 'numpy', 'pydantic'}))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    first, second = done.stdout.splitlines()
    assert first == str(["agreement", "annotate", "judges", "samples", "samples.lazy"])
    assert second == str(["samples", "samples.errors", "samples.lazy"])
