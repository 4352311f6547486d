"""No module of the five packages grows past what a reader takes in at once (issue #27).

A module over ``LIMIT`` lines is split into modules that say what they hold (as
``annotate/labelstudio/`` and ``annotate/store/`` were). The modules still over it are
listed in ``ALLOWED`` with their length when the test was written: a listed module may
not grow, and leaves the list once it is split, so the list only shrinks.
"""

from __future__ import annotations

from tests.test_layers import module_files

LIMIT = 700
# Module -> its length (lines) when listed; each is to be split, none may be added.
ALLOWED: dict[str, int] = {
    "apps.stages": 1076,
    "agreement.validation": 833,
    "agreement.panels": 838,
    "agreement.report": 820,
    "agreement.documents": 740,
    "agreement.anytime": 728,
    "samples.scrub": 752,
}


def lengths() -> dict[str, int]:
    return {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in module_files().items()}


def test_no_module_is_over_the_limit_unless_listed():
    over = {name: n for name, n in lengths().items() if n > LIMIT and name not in ALLOWED}
    assert not over, f"modules over {LIMIT} lines: {over}; split them into modules that say what they hold"


def test_a_listed_module_does_not_grow_and_leaves_the_list_once_split():
    found = lengths()
    missing = sorted(set(ALLOWED) - set(found))
    assert not missing, f"listed modules that no longer exist: {missing}; remove them from ALLOWED"
    grown = {name: (found[name], ceiling) for name, ceiling in ALLOWED.items() if found[name] > ceiling}
    assert not grown, f"listed modules grew (lines now, when listed): {grown}; split them instead"
    fit = sorted(name for name in ALLOWED if found[name] <= LIMIT)
    assert not fit, f"now within {LIMIT} lines: {fit}; remove them from ALLOWED"

