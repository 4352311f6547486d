"""Unit-kind behaviour comes from the registered kind, never from its name (issue #27).

The per-response analyses (EHQ, the decision tables) read the units whose kind says it is one
model response as a whole (``response_unit``; ``samples.kinds.response_kinds``). A third
party's kind with the capability is read as the built-in ``response`` is, and no package code
compares a kind against a built-in kind's name outside the registry module.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from samples.kinds import _KINDS as kinds_registry
from samples.kinds import get_kind, register_kind, response_kinds
from samples.records import UNIT_KINDS

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("samples", "judges", "annotate", "agreement", "apps")
REGISTRY_MODULES = frozenset({"samples/kinds.py", "samples/records.py"})  # where the kinds are defined and listed


def kind_name_tests(source: str) -> list[tuple[int, str]]:
    """(line, name) of every ==/!=/in/not in comparison against a built-in unit kind's name."""
    def named(node: ast.expr) -> list[str]:
        if isinstance(node, ast.Constant) and node.value in UNIT_KINDS:
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [name for element in node.elts for name in named(element)]
        return []

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    found += [(node.lineno, name) for name in named(left) + named(right)]
                elif isinstance(op, (ast.In, ast.NotIn)):
                    found += [(node.lineno, name) for name in named(right)]
    return found


def test_the_scan_sees_a_kind_name_test() -> None:
    source = 'a = row.get("kind") == "response"\nb = kind in ("identify_turn", "x")\nc = "response"\nd = k != "other"\n'
    assert kind_name_tests(source) == [(1, "response"), (2, "identify_turn")]


def test_no_kind_name_is_tested_outside_the_registry() -> None:
    where = [f"{path.relative_to(REPO).as_posix()}:{line}: compares against {name!r}"
             for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))
             if path.relative_to(REPO).as_posix() not in REGISTRY_MODULES
             for line, name in kind_name_tests(path.read_text(encoding="utf-8"))]
    assert not where, "ask the registered kind (samples.kinds) for a capability:\n" + "\n".join(where)


# --- a third party's response kind reads as the built-in one ------------------------------------------------


def _study(root: Path, kind: str) -> Path:
    """Six single-turn responses of two models, their units of ``kind`` and two judges' decision labels."""
    from samples.layout import StudyLayout

    layout = StudyLayout.of(root)
    layout.judges_dir.mkdir(parents=True)
    answers = ["Paris", "", "I am not sure", "Lyon", "Paris", "no idea"]
    trajectories, units, labels = [], [], []
    for i, answer in enumerate(answers):
        model = "m1" if i < 3 else "m2"
        trajectories.append({"id": f"{model}::q{i}", "backbone": model, "family": model, "dataset": "d",
                             "final_answer": answer, "metadata": {"usage": {"cost": 0.001}}})
        units.append({"unit_id": f"u{i}", "trajectory_id": f"{model}::q{i}", "kind": kind, "text": answer})
        for judge in ("strict", "semantic"):
            label = None if (judge == "strict" and i % 3 == 2) else ("DECLINE" if "not" in answer or "no " in answer
                                                                     else "ANSWER")
            labels.append({"unit_id": f"u{i}", "judge": judge, "label": label, "fingerprint": "fp",
                           "parse_status": "ok" if label else "unscored"})
    for path, rows in ((layout.trajectories, trajectories), (layout.units, units), (layout.judge_labels, labels)):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def _decisions(root: Path) -> dict:
    from agreement.decisions import DecisionSettings, decision_study
    from samples.layout import StudyLayout

    settings = DecisionSettings(strict_parser="strict", semantic_parser="semantic", roster_dataset=None,
                                composition_dataset=None, cell_field="cell", outcome_field=None,
                                lower_bound_share=0.5, margin=0.1, level=0.95, n_resamples=50, seed=20261129)
    body = decision_study(StudyLayout.of(root), settings)
    body.pop("fingerprints")
    return body


def test_a_plugin_kind_with_the_capability_is_read_as_a_response(tmp_path) -> None:
    from samples.errors import InputError

    assert response_kinds() == {"response"}  # of the built-ins, only `response` is one model response as a whole
    answer = dataclasses.replace(get_kind("response"), name="long_answer")
    plain = dataclasses.replace(get_kind("response"), name="plain_answer", response_unit=False)
    try:
        register_kind(answer)
        register_kind(plain)
        assert response_kinds() == {"response", "long_answer"}
        built_in = _decisions(_study(tmp_path / "builtin", "response"))
        assert built_in["rows"][0]["n"] == 6
        assert _decisions(_study(tmp_path / "plugin", "long_answer")) == built_in
        with pytest.raises(InputError, match="judge 'strict' has no labels on response units"):
            _decisions(_study(tmp_path / "plain", "plain_answer"))
    finally:
        kinds_registry.unregister("long_answer")
        kinds_registry.unregister("plain_answer")
    assert response_kinds() == {"response"}
