"""The study layer's speed-ups (issue #27) change no document: ``accord validate`` and ``accord gate``
with the strict policy on the 1e3-unit benchmark study write byte-for-byte what they wrote before.

The study is ``benchmarks/bench_study.py``'s (3 annotators, 2 judges, imported with ``accord import
table``), built and run through the real CLI. The reference hashes were produced by the code before
the speed-ups (commit 5e4b5b0 on main) with exactly these commands, from the repository root:
``python -m apps validate STUDY --json`` then ``python -m apps gate STUDY --policy
data/policies/strict.toml --json``. The same commands on the 1e4-unit study gave validation
05a09cf1..., verdict 026e2184..., history 7c777736... before and after (checked by hand, not here: too
slow for the suite). The headline numbers are also recomputed here from the imported table with
textbook formulas, so a changed hash is easy to tell from a changed statistic.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_study import POLICY, REPO, write_study

BEFORE = {  # sha256 of each document written by the code before the speed-ups (module docstring)
    "validation/validation.json": "373652451d0cbfafc3dc4d5ef6d238b15c928c5b209c29cdd5215205ab15f3a6",
    "gate/verdict.json": "a09bda5dfa31868bc19313c7a2525ef32ec605306e436f852f677467ac314b21",
    "gate/history.jsonl": "9c1551e8b641cd1c2894a7699668fd82928c06105f959eb563b9c176020b311d",
}
ANNOTATORS = ("ann_1", "ann_2", "ann_3")


def accord(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apps", *args], cwd=REPO, capture_output=True, text=True,
                          check=False)


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("scale")
    study = write_study(1_000, work)
    validate = accord("validate", str(study), "--json")
    assert validate.returncode == 0, validate.stderr
    gate = accord("gate", str(study), "--policy", str(POLICY.relative_to(REPO)), "--json")
    assert gate.returncode == 1, gate.stderr  # REJECT: the family contrast is unmeasurable (one family)
    return study


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_documents_are_byte_identical_to_before(gated: Path, name: str) -> None:
    assert hashlib.sha256((gated / name).read_bytes()).hexdigest() == BEFORE[name]


def _labels(study: Path) -> dict[str, dict[str, str]]:
    """rater -> unit -> label, from the CSV the study was imported from (not from accord's readers)."""
    table = study.parent / f"panel_{study.name.split('_')[1]}.csv"
    out: dict[str, dict[str, str]] = {}
    with open(table, newline="") as handle:
        for row in csv.DictReader(handle):
            out.setdefault(row["rater"], {})[row["unit"]] = row["label"]
    return out


def _ac1_kappa(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Gwet's AC1 and Cohen's kappa of two binary raters (Gwet 2008, eq. 4; Cohen 1960)."""
    agree = float(np.mean(a == b))
    pa, pb = float(np.mean(a)), float(np.mean(b))
    pi = (pa + pb) / 2
    chance_ac1 = 2 * pi * (1 - pi)  # sum over the 2 categories of pi_k (1 - pi_k), divided by q - 1 = 1
    chance_kappa = pa * pb + (1 - pa) * (1 - pb)
    return (agree - chance_ac1) / (1 - chance_ac1), (agree - chance_kappa) / (1 - chance_kappa)


def test_headline_numbers_match_a_textbook_computation(gated: Path) -> None:
    labels = _labels(gated)
    units = sorted(labels["judge_a"])
    votes = np.array([[labels[a][u] == "yes" for a in ANNOTATORS] for u in units])
    majority = votes.sum(axis=1) >= 2  # three binary votes never tie
    verdict = json.loads((gated / "gate/verdict.json").read_text())
    assert verdict["verdict"] == "REJECT"
    pairs = [(i, k) for i in range(3) for k in range(i + 1, 3)]
    among = np.mean([np.mean(votes[:, i] == votes[:, k]) for i, k in pairs])
    for judge in ("judge_a", "judge_b"):
        said = np.array([labels[judge][u] == "yes" for u in units])
        ac1, kappa = _ac1_kappa(said, majority)
        criteria = {c["name"]: c for c in verdict["judges"][judge]["criteria"]}
        assert criteria["gwet_ac1 vs human majority, lower bound"]["value"] == pytest.approx(ac1, abs=1e-12)
        assert criteria["cohen_kappa vs human majority, lower bound"]["value"] == pytest.approx(kappa, abs=1e-12)
        with_judge = np.mean([np.mean(said == votes[:, i]) for i in range(3)])
        ceiling = criteria["human ceiling (percent_agreement)"]["value"]
        assert ceiling == pytest.approx(with_judge - among, abs=1e-12)
        outcomes = Counter(c["passed"] for c in criteria.values())
        assert outcomes == Counter({True: 8, False: 1}) and not criteria["family contrast"]["passed"]


@pytest.mark.parametrize("values", [["a"], ["a", None], ["a", float("nan")], {"c"}, [1, "a"], [], ("b", "x")])
@pytest.mark.parametrize("dtype", ["str", object])
def test_isin_answers_as_pandas_isin(values: object, dtype: object) -> None:
    import pandas as pd

    from agreement.study_io import isin

    column = pd.Series(["a", "b", None, "c", "a"], index=[5, 6, 7, 8, 9], dtype=dtype)
    expected = column.isin(list(values) if isinstance(values, set) else values)  # pandas' own (slow) answer
    got = isin(column, values)
    assert got.tolist() == expected.tolist() and list(got.index) == [5, 6, 7, 8, 9]
