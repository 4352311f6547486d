"""A third party's gate criterion gates and plans as a built-in does (issue #27: capabilities on registered objects).

The plugin is a real installed distribution (``tests.test_plugins.install``: a module and its ``.dist-info``
in the ``accord.plugins`` entry-point group) registering ``kappa_floor``: a floor on Cohen's kappa against
the human majority, written against the public ``agreement.criteria`` API only. Nothing in accord names it; the
gate, the built-in criteria, the operating characteristic and ``accord plan`` reach it through the
``CRITERIA`` registry and its capabilities. The reference is the built-in ``agreement_floor`` on the same
coefficient, reference and bound: the two policies must give the same numbers everywhere except the
criterion's own type and name, which they can only if nothing special-cases a built-in's type name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agreement.criteria import register_criterion
from tests.agreement.test_study_io import write_ise_study
from tests.test_plugins import accord, install

PLUGIN = '''
"""accord_kappa_floor: the lower bound of Cohen's kappa (judge vs the human majority) at or above a floor."""

from agreement.criteria import AgreementBound, CriterionResult, register_criterion


@register_criterion("kappa_floor")
class KappaFloor:
    counts = False
    exclude_flagged = False
    labels = ()

    def __init__(self, table, where):
        self.bound = float(table["min_lower_bound"])
        self.name = table.get("name", "kappa floor")

    @property
    def agreement_bound(self):
        return AgreementBound(coefficient="cohen_kappa", reference="human_majority", bound=self.bound)

    def evaluate(self, evidence):
        result = evidence.agreement("cohen_kappa", "human_majority")
        ci = result.confidence_interval()
        return CriterionResult(name=self.name, type=self.type_name, test="kappa's lower bound at or above the floor",
                               value=result.statistic, ci_low=ci.low, ci_high=ci.high, ci_level=ci.level,
                               ci_method=ci.method, threshold=f"lower CI bound >= {self.bound}",
                               passed=bool(ci.low >= self.bound), details={"n_units": result.n})

    def plan(self):
        return lambda studies: studies.floor_passes("cohen_kappa", self.bound, strict=False)
'''

HEAD = """[policy]
name = "plugin"
description = "a third party's floor"
level = 0.95
tie_policy = "exclude"
n_resamples = 300
seed = 20261129

[[criteria]]
"""
PLUGIN_FLOOR = 'type = "kappa_floor"\nmin_lower_bound = 0.5\n'
BUILT_IN_FLOOR = 'type = "agreement_floor"\ncoefficient = "cohen_kappa"\nreference = "human_majority"\nmin_lower_bound = 0.5\n'
DESIGN = ("--positive-rate", "0.3", "--judge-agreement", "0.7", "--human-agreement", "0.85", "--annotators", "3",
          "--studies", "100", "--json")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    install(site, "accord-kappa-floor", "accord_kappa_floor", PLUGIN)
    return site


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("study")  # 127 validated units: above the intervals' MIN_UNITS (100)
    write_ise_study(root, judge_accuracy=0.97, human_accuracy=0.82, unscored=4, sample_share=0.8)
    return root


def in_process(capsys, *argv: str) -> tuple[int, str]:
    """The built-in policy needs no plugin: the CLI in this process (the code ``accord`` runs, without a
    subprocess's start-up), as (exit code, stdout)."""
    from apps.cli import main

    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def policies(tmp_path: Path) -> tuple[Path, Path]:
    plugin, built_in = tmp_path / "plugin.toml", tmp_path / "built_in.toml"
    plugin.write_text(HEAD + PLUGIN_FLOOR, encoding="utf-8")
    built_in.write_text(HEAD + BUILT_IN_FLOOR, encoding="utf-8")
    return plugin, built_in


@pytest.mark.slow
def test_a_plugin_criterion_gates_as_the_built_in_floor_does(site, study, tmp_path, capsys) -> None:
    plugin, built_in = policies(tmp_path)
    argv = ("gate", str(study), "--judge", "identify@j", "--json")
    done = accord(site, *argv, "--policy", str(plugin))
    assert done.returncode == 0, done.stderr  # ACCEPT
    code, out = in_process(capsys, *argv, "--policy", str(built_in))
    assert code == 0, out  # ACCEPT
    mine, theirs = (json.loads(text)["judges"]["identify@j"] for text in (done.stdout, out))
    assert [c["type"] for c in mine["criteria"]] == ["kappa_floor", "beats_baselines", "tracks_input"]
    assert [c["type"] for c in theirs["criteria"]] == ["agreement_floor", "beats_baselines", "tracks_input"]
    floor, reference = mine["criteria"][0], theirs["criteria"][0]
    assert floor["passed"] and reference["passed"]
    assert (floor["value"], floor["ci_low"], floor["ci_high"]) == (reference["value"], reference["ci_low"],
                                                                  reference["ci_high"])
    # The built-ins read the plugin's floor (agreement_bound): beats_baselines on its coefficient, both on its
    # reference; without it beats_baselines would compare percent agreement only.
    assert "cohen_kappa" in mine["criteria"][1]["name"]
    assert mine["criteria"][1:] == theirs["criteria"][1:]
    # The operating characteristic is read on the plugin's coefficient and planned with its check.
    oc = mine["operating_characteristic"]
    assert oc["coefficient"] == "cohen_kappa" and oc["not_planned"] == []
    assert oc == theirs["operating_characteristic"]

    # Without the plugin its type is unknown: nothing else made it a criterion.
    bare = accord(tmp_path / "empty", "gate", str(study), "--policy", str(plugin), "--judge", "identify@j")
    assert bare.returncode == 2 and "criterion #1: type: unknown criterion type 'kappa_floor'" in bare.stderr


@pytest.mark.slow
def test_a_plugin_criterion_is_planned_as_the_built_in_floor_is(site, tmp_path, capsys) -> None:
    plugin, built_in = policies(tmp_path)
    done = accord(site, "plan", "--policy", str(plugin), *DESIGN)
    assert done.returncode == 0, done.stderr
    code, out = in_process(capsys, "plan", "--policy", str(built_in), *DESIGN)
    assert code == 0, out
    mine, theirs = json.loads(done.stdout), json.loads(out)
    assert mine["design"]["coefficient"] == "cohen_kappa"  # the default axis: the first floor's coefficient
    assert list(mine["units_needed"]) == ["kappa floor", "beats constant answers (cohen_kappa, percent_agreement)",
                                          "tracks the input (cohen_kappa vs human majority > 0.0)", "policy"]
    assert list(mine["units_needed"].values()) == list(theirs["units_needed"].values())
    assert mine["not_planned"] == {} and mine["oc_curve"]["floors"] == [0.5]
    assert list(mine["oc_curve"]["p_accept"].values()) == list(theirs["oc_curve"]["p_accept"].values())
    assert mine["oc_curve"]["true_agreement"] == theirs["oc_curve"]["true_agreement"]


def test_a_criterion_without_its_capabilities_is_refused_where_it_registers() -> None:
    class Half:
        counts = False

        def evaluate(self, evidence):  # pragma: no cover - never built
            raise AssertionError

    with pytest.raises(TypeError, match=r"criterion type 'half': Half lacks \['plan', 'agreement_bound', "
                                         r"'exclude_flagged', 'labels'\]"):
        register_criterion("half")(Half)


def test_the_registry_alone_knows_every_built_in_criterion_type(tmp_path) -> None:
    """A fresh process importing only ``agreement.criteria`` (as a plugin does) finds the built-in types: the
    registry imports ``agreement.builtin_criteria`` on its first look-up, not the gate. The nine names are
    the types data/policies/README.md documents."""
    import os
    import subprocess
    import sys

    code = ("import sys, json\nfrom agreement.criteria import CRITERIA\n"
            "before = 'agreement.builtin_criteria' in sys.modules\n"
            "print(json.dumps([before, sorted(CRITERIA), 'agreement.gate' in sys.modules]))\n")
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo)}, check=False)
    assert done.returncode == 0, done.stderr
    before, names, gate = json.loads(done.stdout)
    assert (before, gate) == (False, False)
    assert names == ["agreement_floor", "alt_test", "beats_baselines", "family_contrast", "human_ceiling",
                     "min_units_per_stratum", "preregistration", "tracks_input", "unscored_share"]
