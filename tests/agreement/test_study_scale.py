"""The study layer's speed-ups (issue #27) change no number: ``accord validate`` and ``accord gate``
with the strict policy on the 1e3-unit benchmark study, run twice on copies of one study, write
byte-identical documents, and their headline numbers equal a textbook computation from the imported table.

The study is ``benchmarks/bench_study.py``'s (3 annotators, 2 judges, imported with ``accord import
table``), built and run through the real CLI. When the speed-ups landed, the documents were also
byte-identical to those of the code before them (commit 5e4b5b0 on main; 1e3, 1e4 and 1e5 units, checked
with sha256); later intentional changes to the documents (e.g. the interval method strings) make such a
snapshot obsolete, so the suite checks what must hold at every commit: determinism and the numbers.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_study import POLICY, REPO, write_study

# The module fixture runs validate and gate through the CLI on two copies (15 s on 2 idle cores).
pytestmark = pytest.mark.slow

DOCUMENTS = ("validation/validation.json", "gate/verdict.json", "gate/history.jsonl")
ANNOTATORS = ("ann_1", "ann_2", "ann_3")


def accord(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apps", *args], cwd=REPO, capture_output=True, text=True,
                          check=False)


def _validate_and_gate(study: Path) -> None:
    validate = accord("validate", str(study), "--json")
    assert validate.returncode == 0, validate.stderr
    gate = accord("gate", str(study), "--policy", str(POLICY.relative_to(REPO)), "--json")
    assert gate.returncode == 1, gate.stderr  # REJECT: the family contrast is unmeasurable (one family)


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("scale")
    study = write_study(1_000, work)
    again = work / "again" / study.name
    shutil.copytree(study, again)
    shutil.copy(study.parent / f"panel_{study.name.split('_')[1]}.csv", again.parent)
    for each in (study, again):
        _validate_and_gate(each)
    return study, again


@pytest.fixture(scope="module")
def gated(studies: tuple[Path, Path]) -> Path:
    return studies[0]


@pytest.mark.parametrize("name", DOCUMENTS)
def test_documents_are_byte_identical_across_runs(studies: tuple[Path, Path], name: str) -> None:
    first, second = ((study / name).read_bytes() for study in studies)
    assert hashlib.sha256(first).hexdigest() == hashlib.sha256(second).hexdigest()


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
