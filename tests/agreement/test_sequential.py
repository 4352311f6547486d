"""Anytime-valid evidence (agreement.sequential) and the anytime gate (agreement.anytime)."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from agreement.sequential import betting_cs, e_bh, e_process

CONFSEQ_VENV = Path(os.environ.get("ACCORD_CACHE", Path.home() / ".cache" / "accord")) / "bench-venvs" / "confseq"


def test_e_bh_by_hand():
    # Wang & Ramdas (2022) e-BH: m = 4, q = 0.1, thresholds m / (q k) = 40, 20, 13.3, 10.
    # Sorted e-values 40, 25, 3, 1: k = 1 (40 >= 40) and k = 2 (25 >= 20) pass, k = 3, 4 do not -> reject 2.
    assert e_bh(np.array([3.0, 40.0, 1.0, 25.0]), 0.1).tolist() == [False, True, False, True]
    # None passes: 39 < 40.
    assert not e_bh(np.array([39.0, 1.0, 1.0, 1.0]), 0.1).any()
    assert e_bh(np.array([]), 0.1).size == 0


def test_betting_cs_equals_confseq_on_unclustered_data():
    """confseq 0.0.11 (Waudby-Smith & Ramdas' own code, isolated venv: scripts/confseq_venv.sh): the hedged betting
    CS with predictable-mixture bets, each side at alpha/2, truncation 1/2, convex combination, 1,000 breaks, running
    intersection; with every cluster of size 1 accord's CS must be the same sequence."""
    python = CONFSEQ_VENV / "bin" / "python"
    if not python.exists():
        pytest.fail(f"the confseq cross-check venv is missing at {CONFSEQ_VENV}: run bash scripts/confseq_venv.sh")
    rng = np.random.default_rng(7)
    samples = [(rng.random(150) < p).astype(float) for p in (0.1, 0.5, 0.85)] + [rng.beta(2, 5, 120)]
    script = ("import json, sys, numpy as np\nfrom confseq.betting import betting_cs\n"
              "out = []\nfor x in json.load(sys.stdin):\n"
              "    l, u = betting_cs(np.array(x), alpha=0.05, breaks=1000, running_intersection=True, convex_comb=True)\n"
              "    out.append([l.tolist(), u.tolist()])\nprint(json.dumps(out))\n")
    done = subprocess.run([str(python), "-c", script], input=json.dumps([s.tolist() for s in samples]),
                          capture_output=True, text=True, timeout=600, check=True)
    for x, (low, high) in zip(samples, json.loads(done.stdout)):
        cs = betting_cs(x, np.ones_like(x), alpha=0.05)
        assert cs.low == pytest.approx(np.array(low), abs=1e-9)
        assert cs.high == pytest.approx(np.array(high), abs=1e-9)


def _misses(paths: np.ndarray, truth: float, *, grid: int = 201) -> float:
    misses = 0
    for x in paths:
        cs = betting_cs(x, np.ones_like(x), alpha=0.05, grid=grid)
        misses += bool(np.any((cs.low > truth) | (cs.high < truth)))
    return misses / len(paths)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_time_uniform_coverage_where_a_fixed_interval_looked_at_every_unit_fails(p):
    """Looked at after every one of 300 units, the CS misses the truth somewhere on at most 5% of paths
    (200 paths: allow 3 SE), while the 95% Wilson interval read at every look misses far more often."""
    rng = np.random.default_rng(11)
    paths = (rng.random((200, 300)) < p).astype(float)
    assert _misses(paths, p) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 200)
    n = np.arange(1, 301)
    hat = np.cumsum(paths, axis=1) / n
    z = 1.959964
    centre = (hat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(hat * (1 - hat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    wilson_misses = np.mean(np.any((centre - half > p) | (centre + half < p), axis=1))
    assert wilson_misses > 0.2


def test_clustered_coverage_of_the_ratio_estimand():
    """Trajectories of 1-6 turns with a trajectory-level agreement rate (turns within one are correlated):
    the per-turn mean E[sum] / E[size] is covered at every look on at least 95% of paths."""
    rng = np.random.default_rng(3)
    misses, runs, truth = 0, 200, 0.8
    for _ in range(runs):
        sizes = rng.integers(1, 7, size=120)
        rates = rng.beta(8, 2, size=120)  # mean 0.8, independent of size
        sums = rng.binomial(sizes, rates)
        cs = betting_cs(sums, sizes, alpha=0.05, bound=6, grid=201)
        misses += bool(np.any((cs.low > truth) | (cs.high < truth)))
    assert misses / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)


def test_betting_cs_refuses_what_is_not_a_bounded_cluster_sum():
    with pytest.raises(ValueError, match="score sum in"):
        betting_cs(np.array([3.0]), np.array([2.0]), alpha=0.05)
    with pytest.raises(ValueError, match="alpha"):
        betting_cs(np.array([1.0]), np.array([1.0]), alpha=1.5)


def test_e_process_under_the_null_rarely_reaches_twenty_and_grows_under_an_alternative():
    """Ville: wealth of a bet against a true null passes 1/alpha = 20 with probability at most 5%."""
    rng = np.random.default_rng(5)
    epsilon, crossed = 0.1, 0
    for _ in range(300):
        d = rng.choice([-1.0, 0.0, 1.0], p=[0.3, 0.5, 0.2], size=400)  # mean -0.1 = -epsilon: the null's edge
        crossed += bool(np.any(e_process(d, np.ones_like(d), shift=epsilon) >= 20))
    assert crossed / 300 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)
    good = rng.choice([-1.0, 0.0, 1.0], p=[0.05, 0.45, 0.5], size=400)  # mean +0.45
    assert e_process(good, np.ones_like(good), shift=epsilon)[-1] > 1e6


@pytest.mark.parametrize(("coefficient", "per_cluster"), [("cohen_kappa", 1), ("gwet_ac1", 1), ("cohen_kappa", 3)])
def test_chance_corrected_bounds_cover_at_every_look(coefficient, per_cluster):
    """Judge and reference with a known joint law, P(J=1,R=1) = 0.25, P(1,0) = P(0,1) = 0.05, P(0,0) = 0.65:
    p_o = 0.9, p_J = p_R = 0.3. Kappa: p_e = 0.3 * 0.3 + 0.7 * 0.7 = 0.58, kappa = 0.32 / 0.42.
    AC1: pi = 0.3, p_e = 2 * 0.3 * 0.7 = 0.42, AC1 = 0.48 / 0.58. Single units use the paired-units
    sequence, clusters of 3 the three-sequence box."""
    from agreement.anytime import Stream, agreement_sequence

    truth = {"cohen_kappa": 0.32 / 0.42, "gwet_ac1": 0.48 / 0.58}[coefficient]
    rng = np.random.default_rng(9)
    cells = np.array([[1, 1], [1, 0], [0, 1], [0, 0]])
    misses, runs, n = 0, 100, 300
    for _ in range(runs):
        draw = cells[rng.choice(4, p=[0.25, 0.05, 0.05, 0.65], size=n)]
        look = np.arange(n) // per_cluster
        stream = Stream(units=tuple(map(str, range(n))), look=look, looks=int(look[-1]) + 1, judge=draw[:, 0],
                        unscored=np.zeros(n, bool), reference=draw[:, 1], humans=np.zeros((n, 0), np.int64),
                        annotators=(), categories=("no", "yes"), positive="yes", strata=np.array(["all"] * n),
                        bound=float(per_cluster))
        low, high, estimate, _, method = agreement_sequence(stream, coefficient, 0.05, grid=201)
        assert ("pairs of units" in method) == (per_cluster == 1)
        misses += bool(np.any((low > truth) | (high < truth)))
    assert misses / runs <= 0.05


@pytest.mark.parametrize("per_cluster", [1, 3])
def test_ac1_over_a_constant_covers_the_difference_and_rarely_passes_at_the_boundary(per_cluster):
    """A judge whose AC1 equals always-'no''s, looked at after every cluster. Reference share p_R = 0.3:
    always 'no' agrees 0.7 of the time, pi = 0.15, p_e = 2 * 0.15 * 0.85 = 0.255, AC1 = 0.445 / 0.745.
    The judge has p_J = p_R = 0.3, so p_e = 2 * 0.3 * 0.7 = 0.42, and needs p_o = 0.42 + 0.58 * AC1; it errs
    both ways with P(J=1,R=0) = P(J=0,R=1) = (1 - p_o) / 2. The difference is 0: the box's interval must
    hold 0 at every look in >= 95% of studies, and a lower bound above 0 (a PASS) at most 5% of the time."""
    from agreement.anytime import Stream, _ac1_over_constant

    constant = 0.445 / 0.745
    p_o = 0.42 + 0.58 * constant
    off = (1 - p_o) / 2
    rng = np.random.default_rng(11)
    cells = np.array([[1, 1], [1, 0], [0, 1], [0, 0]])
    misses, passes, runs, n = 0, 0, 150, 240
    for _ in range(runs):
        draw = cells[rng.choice(4, p=[0.3 - off, off, off, 0.7 - off], size=n)]
        look = np.arange(n) // per_cluster
        stream = Stream(units=tuple(map(str, range(n))), look=look, looks=int(look[-1]) + 1, judge=draw[:, 0],
                        unscored=np.zeros(n, bool), reference=draw[:, 1], humans=np.zeros((n, 0), np.int64),
                        annotators=(), categories=("no", "yes"), positive="yes", strata=np.array(["all"] * n),
                        bound=float(per_cluster))
        low, high, _ = _ac1_over_constant(stream, False, 1, np.ones(n, bool), 0.05, grid=201)
        misses += bool(np.any((low > 0) | (high < 0)))
        passes += bool(np.any(low > 0))
    assert misses / runs <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)
    assert passes / runs <= 0.05


def test_paired_kappa_sequence_by_hand():
    """Four units, two pairs. Pair 1: (J, R) = (1, 1), (0, 0): A = 1, kappa cross terms 1[J_a = R_b] = 1[1 = 0] = 0,
    1[J_b = R_a] = 1[0 = 1] = 0, so B = 0. Pair 2: (1, 0), (1, 1): A = 1/2, cross 1[1 = 1] = 1, 1[1 = 0] = 0, B = 1/2.
    Running estimate after pair 2: (sum A - sum B) / (pairs - sum B) = (1.5 - 0.5) / (2 - 0.5) = 2/3."""
    from agreement.sequential import chance_corrected_cs

    cs, second = chance_corrected_cs(np.array([1, 0, 1, 1]), np.array([1, 0, 0, 1]), "cohen_kappa", alpha=0.05)
    assert second.tolist() == [1, 3]
    assert cs.statistic.tolist() == pytest.approx([1.0, 2 / 3])
    assert cs.low[-1] <= 2 / 3 <= cs.high[-1]


def _write_table(path: Path, *, n: int, judge_error: float, positives: float = 0.12, seed: int = 0) -> None:
    """n units, 12% positives, three annotators each wrong on 12% of units, one judge wrong on ``judge_error``."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < positives
    flip = lambda rate: truth ^ (rng.random(n) < rate)  # noqa: E731
    columns = {"a1": flip(0.12), "a2": flip(0.12), "a3": flip(0.12), "judge": flip(judge_error)}
    lines = ["item," + ",".join(columns)]
    for u in range(n):
        lines.append(f"i{u:04d}," + ",".join("yes" if columns[c][u] else "no" for c in columns))
    path.write_text("\n".join(lines) + "\n")


def _anytime_policy(tmp_path: Path, source: Path) -> Path:
    text = source.read_text().replace("[policy]\n", "[policy]\nmonitoring = \"anytime\"\n", 1)
    policy = tmp_path / f"anytime-{source.name}"
    policy.write_text(text)
    return policy


@pytest.fixture
def imported(tmp_path):
    from apps.cli import main

    def make(n: int, judge_error: float, positives: float = 0.12) -> Path:
        table, study = tmp_path / f"t{n}.csv", tmp_path / f"s{n}"
        _write_table(table, n=n, judge_error=judge_error, positives=positives)
        assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "item", "--kind",
                     "escalate_final", "--annotator-columns", "a1,a2,a3", "--judge-columns", "judge"]) == 0
        return study

    return make


def test_anytime_policy_decides_a_good_judge_before_the_last_look(imported, repo, tmp_path, capsys):
    """Half positives: a constant answer's AC1 (0.20 for always 'no') is far below a judge wrong on 2% of units,
    so the built-in baseline criterion can be decided too (at 12% positives always 'no' has AC1 0.87)."""
    from apps.cli import main

    study = imported(300, 0.02, positives=0.5)
    policy = _anytime_policy(tmp_path, repo / "data" / "policies" / "screening.toml")
    capsys.readouterr()
    assert main(["gate", str(study), "--policy", str(policy), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)["judges"]["judge"]
    sequential = body["sequential"]
    assert body["verdict"] == "ACCEPT" and sequential["outcome"] == "ACCEPT"
    assert sequential["labelling"].startswith("no annotator orders")
    assert 0 < sequential["units_at_decision"] < 300
    assert {c["decision"] for c in sequential["criteria"]} == {"PASS"}
    assert all("confidence sequence" in c["method"] or "e-process" in c["method"] for c in sequential["criteria"])


def test_fifty_units_with_strong_evidence_are_decided_anytime_but_too_small_for_the_fixed_gate(
        imported, repo, capsys):
    """The ISE D.2 size (50 units): the fixed-n gate refuses it as too small; the anytime gate decides it."""
    from apps.cli import main

    study = imported(50, 0.0)
    screening = repo / "data" / "policies" / "screening.toml"
    capsys.readouterr()
    assert main(["gate", str(study), "--policy", str(screening), "--json"]) == 1
    fixed = json.loads(capsys.readouterr().out)["judges"]["judge"]
    assert any("too small" in (c["reason"] or "") for c in fixed["criteria"])
    assert main(["gate", str(study), "--policy", str(screening), "--sequential"]) in (0, 1)
    out = capsys.readouterr().out
    assert "anytime (95%, valid at every look):" in out
    assert "ACCEPT at look" in out or "REJECT at look" in out


def test_anytime_gate_continues_while_planned_labels_are_missing(imported, repo, tmp_path, capsys):
    from agreement.study_io import load_study
    from apps.cli import main
    from samples.layout import StudyLayout

    study = imported(120, 0.3)  # a poor judge: nothing is decided quickly
    human = load_study(study).human
    orders = {a: sorted(set(human.loc[human["annotator"] == a, "task_id"])) + ["t_not_labelled_yet"]
              for a in sorted(set(human["annotator"]))}
    layout = StudyLayout.of(study)
    layout.orders.parent.mkdir(parents=True, exist_ok=True)
    layout.orders.write_text(json.dumps(orders))
    policy = _anytime_policy(tmp_path, repo / "data" / "policies" / "strict.toml")
    capsys.readouterr()
    code = main(["gate", str(study), "--policy", str(policy), "--json"])
    body = json.loads(capsys.readouterr().out)
    sequential = body["judges"]["judge"]["sequential"]
    assert sequential["labelling"] == "3 of 363 planned labels (blind/orders.json) are not in yet"
    assert sequential["labelling_complete"] is False
    # The family contrast has no sequential form: until labelling ends the study can be rejected, never accepted.
    assert "family contrast" in sequential["end_only"]
    assert sequential["outcome"] in ("CONTINUE", "REJECT")
    assert code == 1 and body["verdict"] == sequential["outcome"]


@pytest.mark.slow  # 16 s on 2 idle cores: make test runs it, make test-fast does not
def test_plan_sequential_reports_units_to_a_decision_beside_the_fixed_design(repo, capsys):
    """Screening policy, AC1 floor 0.3, with its built-in baselines, labelling stopped at 300 units; the fixed-n
    answer stands beside it."""
    from apps.cli import main

    assert main(["plan", "--policy", str(repo / "data" / "policies" / "screening.toml"), "--positive-rate", "0.3",
                 "--judge-agreement", "0.85", "--human-agreement", "0.85", "--annotators", "3", "--studies", "50",
                 "--sequential", "--max-units", "300", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    points = {round(p["agreement"], 3): p for p in body["sequential"]}
    assert set(points) == {0.3, 0.85}
    good, floor = points[0.85], points[0.3]
    # By 300 units the good judge is rarely rejected and accepted at least as often as one at the floor, which
    # is (nearly) never accepted: the anytime gate's error control, not its speed (the README gives the cost).
    assert good["reject"] <= 0.1 and good["accept"] >= floor["accept"] and good["p90_units"] <= 300
    assert floor["accept"] <= 0.1
    for p in points.values():
        assert p["accept"] + p["reject"] + p["undecided"] == pytest.approx(1.0)
    assert body["units_needed"]["policy"] is not None
