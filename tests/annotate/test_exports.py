"""Other packages reach annotate through its ``__init__``: what they import is in its export table."""

from __future__ import annotations

import ast
import pkgutil

import annotate
from tests.test_layers import REPO, module_files

# annotate.labelstudio is a package with its own export table; its server settings' environment variable
# names (TOKEN_ENV, ...) are Label Studio's, too vague a name at the annotate level.
SUBPACKAGES = {"annotate.labelstudio"}


def test_every_exported_name_resolves():
    missing = [name for name in annotate.__all__ if getattr(annotate, name, None) is None]
    assert not missing, missing


def test_no_exported_name_is_also_a_module_of_annotate():
    # Importing annotate.X sets the package's attribute X to that module, hiding an exported X.
    modules = {info.name for info in pkgutil.iter_modules(annotate.__path__)}
    assert not modules & set(annotate.__all__), sorted(modules & set(annotate.__all__))


def test_other_packages_import_annotate_only_through_its_init():
    deep = []
    for name, path in module_files().items():
        if name.split(".")[0] == "annotate":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("annotate."):
                if node.module not in SUBPACKAGES:
                    deep.append(f"{path.relative_to(REPO)}:{node.lineno} from {node.module}")
            elif isinstance(node, ast.Import):
                deep += [f"{path.relative_to(REPO)}:{node.lineno} import {a.name}" for a in node.names if a.name.startswith("annotate.")]
    assert not deep, deep
