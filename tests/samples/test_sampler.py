"""Stratified sampler: allocation exactness, one unit per trajectory, exact inclusion
probabilities (brute-force enumeration of the documented design, plus the empirical
frequency over many seeds), shortfalls and byte-level determinism."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from samples.errors import InputError
from samples.ingest import ingest
from samples.plans import SamplingPlan, load_plan
from samples.sampler import DEFAULT_SEED, draw, largest_remainder, sample_study
from samples.synthetic import write_ise_jsonl
from samples.units import unit_id

REPO = Path(__file__).resolve().parents[2]


def plan(**fields) -> SamplingPlan:
    base = {"name": "t", "kinds": ["identify_turn"], "one_per_trajectory": False}
    return SamplingPlan.model_validate({**base, **fields})


# ---------------------------------------------------------------- allocation

def test_largest_remainder_hand_derived() -> None:
    # quotas 4*(5,3,2)/10 = 2.0, 1.2, 0.8 -> floors 2,1,0, one left to the largest remainder (0.8)
    assert largest_remainder(4, np.array([5, 3, 2])).tolist() == [2, 1, 1]
    # 7*(10,5,5)/20 = 3.5, 1.75, 1.75 -> 3,1,1 + 2 to the .75s (tie: earlier first)
    assert largest_remainder(7, np.array([10, 5, 5])).tolist() == [3, 2, 2]


def _frame(sizes: dict[str, int]) -> pd.DataFrame:
    rows = [(f"u{g}{i}", f"t{g}{i}", g) for g, n in sizes.items() for i in range(n)]
    return pd.DataFrame(rows, columns=["unit_id", "trajectory_id", "g"])


def _taken(d, column="stratum") -> dict[str, int]:
    return dict(Counter(d.stratum))


def test_allocations_are_exact() -> None:
    frame = _frame({"a": 5, "b": 3, "c": 2})
    assert _taken(draw(frame, plan(strata=["g"], allocation="proportional", n=4))) == {"g=a": 2, "g=b": 1, "g=c": 1}
    assert _taken(draw(frame, plan(strata=["g"], allocation="equal", n=5))) == {"g=a": 2, "g=b": 2, "g=c": 1}
    fixed = draw(frame, plan(strata=["g"], allocation="fixed", n_per_stratum=2, n_by_stratum={"g=a": 4}))
    assert _taken(fixed) == {"g=a": 4, "g=b": 2, "g=c": 2}


def test_positive_share_allocation() -> None:
    frame = _frame({"p1": 4, "p2": 2, "n1": 10, "n2": 5, "n3": 5})
    d = draw(frame, plan(strata=["g"], allocation="positive_share", n=10,
                         positive={"field": "g", "values": ["p1", "p2"], "share": 0.3}))
    # n_pos = 3 -> (4,2) gives 2,1; n_neg = 7 -> (10,5,5) gives 3,2,2
    assert _taken(d) == {"g=p1": 2, "g=p2": 1, "g=n1": 3, "g=n2": 2, "g=n3": 2}


def test_shortfall_reported_not_padded() -> None:
    frame = _frame({"a": 5, "b": 3})
    d = draw(frame, plan(strata=["g"], allocation="fixed", n_per_stratum=4, n_by_stratum={"g=z": 2}))
    assert _taken(d) == {"g=a": 4, "g=b": 3}
    assert sorted(d.shortfalls, key=lambda s: s["stratum"]) == [
        {"stratum": "g=b", "requested": 4, "available": 3, "shortfall": 1},
        {"stratum": "g=z", "requested": 2, "available": 0, "shortfall": 2}]
    assert d.inclusion_prob[np.array(d.stratum) == "g=b"].tolist() == [1.0, 1.0, 1.0]


# ------------------------------------------------- exact inclusion probabilities

# A population whose trajectories span both label strata, with hardness on some negatives.
POP = [  # unit, trajectory, label, hardness
    ("u01", "t1", "yes", 0), ("u02", "t1", "no", 1), ("u03", "t1", "no", 0),
    ("u04", "t2", "no", 1), ("u05", "t2", "no", 0),
    ("u06", "t3", "yes", 0), ("u07", "t3", "yes", 0),
    ("u08", "t4", "no", 0),
    ("u09", "t5", "yes", 0), ("u10", "t5", "no", 0),
    ("u11", "t6", "no", 1), ("u12", "t6", "no", 1), ("u13", "t6", "no", 0),
    ("u14", "t7", "no", 0), ("u15", "t7", "no", 0),
    ("u16", "t8", "yes", 0),
]


def brute_force(pop, n_by_label: dict[str, int], *, one_per_trajectory: bool, hard: bool) -> dict[str, Fraction]:
    """Exact P(unit sampled) by enumerating every equally likely outcome of the design
    as documented in samples/sampler.py, written independently of it."""
    if one_per_trajectory:
        trajectories: dict[str, list] = {}
        for row in pop:
            trajectories.setdefault(row[1], []).append(row)
        elements = []  # (label, tier, candidate units)
        for rows in trajectories.values():
            label = "yes" if any(r[2] == "yes" for r in rows) else "no"  # positive stratum has priority
            units = [r for r in rows if r[2] == label]
            tier = "easy"
            if hard and label == "no" and any(r[3] > 0 for r in units):
                tier, units = "hard", [r for r in units if r[3] > 0]
            elements.append((label, tier, [r[0] for r in units]))
    else:
        elements = [(r[2], "hard" if hard and r[2] == "no" and r[3] > 0 else "easy", [r[0]]) for r in pop]
    prob: dict[str, Fraction] = {r[0]: Fraction(0) for r in pop}
    for label, n in n_by_label.items():
        groups = {t: [e for e in elements if e[0] == label and e[1] == t] for t in ("hard", "easy")}
        n_hard = min(n, len(groups["hard"]))
        takes = {"hard": n_hard, "easy": min(n - n_hard, len(groups["easy"]))}
        for tier, members in groups.items():
            combos = list(itertools.combinations(range(len(members)), takes[tier]))
            for combo in combos:
                # every choice of one representative per chosen element is equally likely
                choices = list(itertools.product(*(members[i][2] for i in combo)))
                for choice in choices:
                    for u in choice:
                        prob[u] += Fraction(1, len(combos) * len(choices))
    return prob


CASES = [
    pytest.param(False, False, {"yes": 3, "no": 5}, id="units"),
    pytest.param(True, False, {"yes": 2, "no": 2}, id="one-per-trajectory"),
    pytest.param(False, True, {"yes": 2, "no": 5}, id="units-hard"),
    pytest.param(True, True, {"yes": 2, "no": 3}, id="one-per-trajectory-hard"),
]


def _pop_frame() -> pd.DataFrame:
    return pd.DataFrame(POP, columns=["unit_id", "trajectory_id", "label", "hardness"])


def _pop_plan(one: bool, hard: bool, n: dict) -> SamplingPlan:
    return plan(strata=["label"], allocation="fixed", n_by_stratum={f"label={k}": v for k, v in n.items()},
                one_per_trajectory=one, positive={"field": "label", "values": ["yes"]},
                hard_negatives={"scorer": "uncertainty_language"} if hard else None)


@pytest.mark.parametrize(("one", "hard", "n"), CASES)
def test_inclusion_probabilities_match_brute_force(one: bool, hard: bool, n: dict) -> None:
    exact = brute_force(POP, n, one_per_trajectory=one, hard=hard)
    frame, p = _pop_frame(), _pop_plan(one, hard, n)
    counts: Counter[str] = Counter()
    seeds = 1200
    for seed in range(seeds):
        d = draw(frame, p, seed=seed)
        ids = frame["unit_id"].to_numpy()[d.rows]
        for u, pi in zip(ids, d.inclusion_prob):
            assert pi == pytest.approx(float(exact[u]), rel=1e-12), (u, seed)
        if one:
            assert len(set(frame["trajectory_id"].to_numpy()[d.rows])) == d.n
        counts.update(ids)
    for u, p_exact in exact.items():
        p_hat = counts[u] / seeds
        se = max(float(np.sqrt(float(p_exact) * (1 - float(p_exact)) / seeds)), 1e-9)
        assert abs(p_hat - float(p_exact)) <= 4.5 * se, (u, p_hat, p_exact)


def test_outside_frame_units_counted() -> None:
    d = draw(_pop_frame(), _pop_plan(True, False, {"yes": 2, "no": 2}), seed=1)
    by = {c.stratum: c for c in d.counts}
    # t1's and t5's "no" units are outside the frame: their trajectories represent "yes"
    assert by["label=no"].outside_frame == 3
    assert by["label=yes"].frame_size == 4 and by["label=no"].frame_size == 4


def test_one_per_trajectory_on_a_large_population() -> None:
    rng = np.random.default_rng(5)
    n = 20000
    frame = pd.DataFrame({"unit_id": [f"u{i:06d}" for i in range(n)],
                          "trajectory_id": [f"t{i // 8:05d}" for i in range(n)],
                          "a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["p", "q"], n)})
    d = draw(frame, plan(strata=["a", "b"], allocation="proportional", n=1500, one_per_trajectory=True))
    chosen = frame["trajectory_id"].to_numpy()[d.rows]
    assert d.n == 1500 and len(set(chosen)) == 1500


def test_input_order_does_not_change_the_draw() -> None:
    frame = _pop_frame()
    p = _pop_plan(True, True, {"yes": 2, "no": 3})
    a = draw(frame, p, seed=7)
    shuffled = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)
    b = draw(shuffled, p, seed=7)
    assert frame["unit_id"].to_numpy()[a.rows].tolist() == shuffled["unit_id"].to_numpy()[b.rows].tolist()
    assert a.inclusion_prob.tolist() == b.inclusion_prob.tolist()


def test_bad_arguments() -> None:
    with pytest.raises(InputError, match="seed=-1"):
        draw(_pop_frame(), _pop_plan(False, False, {"yes": 1}), seed=-1)
    dup = pd.concat([_pop_frame(), _pop_frame().head(1)])
    with pytest.raises(InputError, match="u01.*more than once"):
        draw(dup, _pop_plan(False, False, {"yes": 1}))


# --------------------------------------------------------- study-level sampling

@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("study")
    source = write_ise_jsonl(root / "runs.jsonl", 400, seed=11)
    ingest([source], root, adapter="ise")
    # a judge over whole trajectories: flag + first recognition turn (ISE A.3), some unscored
    rng = random.Random(3)
    rows = []
    for line in (root / "units.jsonl").read_text().splitlines():
        unit = json.loads(line)
        if unit["kind"] != "identify_trajectory":
            continue
        r = rng.random()
        label = None if r < 0.05 else ("yes" if r < 0.35 else "no")
        first = rng.randrange(len(unit["turns"])) if label == "yes" else -1
        rows.append({"unit_id": unit["unit_id"], "judge": "identify@gpt5", "sample_index": 0, "label": label,
                     "first_turn": first, "parse_status": "ok" if label else "unscored", "fingerprint": "fp"})
    (root / "judges").mkdir()
    (root / "judges" / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_ise_identify_plan_end_to_end(study: Path) -> None:
    manifest = sample_study(study, REPO / "data" / "plans" / "ise_identify.toml")
    rows = [json.loads(line) for line in (study / "sample" / "sample.jsonl").read_text().splitlines()]
    assert len(rows) == manifest["sampled"] == 50
    assert len({r["trajectory_id"] for r in rows}) == 50
    labels = {json.loads(l)["unit_id"]: json.loads(l) for l in (study / "judges" / "labels.jsonl").read_text().splitlines()}
    positives = [r for r in rows if "judge:identify@gpt5=yes" in r["stratum"]]
    assert len(positives) == 25
    for r in positives:  # a positive turn is the judge's first recognition turn
        whole = labels[unit_id(r["trajectory_id"], "identify_trajectory")]
        assert whole["label"] == "yes" and whole["first_turn"] == r["focus_turn"]
    for r in rows:  # context attached: turns 0..focus, the last one is the unit's text
        assert len(r["turns"]) == r["focus_turn"] + 1 and r["turns"][-1] == r["text"]
        assert 0 < r["inclusion_prob"] <= 1
    assert {s["stratum"].split("|")[-1] for s in manifest["strata"]} >= {"tier=hard", "tier=easy"}
    assert any("(unscored)" in s["stratum"] for s in manifest["strata"])
    assert manifest["seed"] == DEFAULT_SEED and manifest["plan"]["name"] == "ise-identify-turns"


def _sample_bytes(study: Path, env_seed: str) -> bytes:
    code = ("import sys; from samples.sampler import sample_study; "
            "sample_study(sys.argv[1], sys.argv[2])")
    env = {**os.environ, "PYTHONHASHSEED": env_seed}
    subprocess.run([sys.executable, "-c", code, str(study), str(REPO / "data" / "plans" / "ise_identify.toml")],
                   check=True, cwd=REPO, env=env)
    return (study / "sample" / "sample.jsonl").read_bytes() + (study / "sample" / "manifest.json").read_bytes()


def test_determinism_across_processes_and_hash_seeds(study: Path) -> None:
    first = _sample_bytes(study, "0")
    assert _sample_bytes(study, "12345") == first
    sample_study(study, REPO / "data" / "plans" / "ise_identify.toml")
    assert (study / "sample" / "sample.jsonl").read_bytes() + (study / "sample" / "manifest.json").read_bytes() == first


def test_seed_changes_the_sample(study: Path) -> None:
    sample_study(study, REPO / "data" / "plans" / "ise_identify.toml", seed=1)
    one = (study / "sample" / "sample.jsonl").read_bytes()
    sample_study(study, REPO / "data" / "plans" / "ise_identify.toml", seed=2)
    assert (study / "sample" / "sample.jsonl").read_bytes() != one


def test_plan_errors_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text('name = "x"\nkinds = ["identify_turn"]\nallocation = "proportional"\none_per_trajectory = true\n')
    with pytest.raises(InputError, match="needs n"):
        load_plan(path)
    path.write_text('name = "x"\nkinds = ["turns"]\nallocation = "fixed"\nn_per_stratum = 1\none_per_trajectory = true\n')
    with pytest.raises(InputError, match=r"kinds \['turns'\] are not unit kinds"):
        load_plan(path)
    path.write_text('name = "x"\nkinds = ["identify_turn"]\nallocation = "fixed"\nn_per_stratum = 1\n')
    with pytest.raises(InputError, match="field 'one_per_trajectory': Field required"):
        load_plan(path)
    path.write_text("name = \n")
    with pytest.raises(InputError, match="invalid TOML"):
        load_plan(path)


def test_all_example_plans_load() -> None:
    plans = sorted((REPO / "data" / "plans").glob("*.toml"))
    assert len(plans) >= 4
    for path in plans:
        load_plan(path)


def test_hardness_scorers() -> None:
    from samples.hardness import make_scorer

    judges = make_scorer("judge_disagreement", judges=["a", "b"])
    assert judges.score({}, {"a": "yes", "b": "no"}) == 1.0
    assert judges.score({}, {"a": "no", "b": "no"}) == 0.0
    assert judges.score({}, {"a": "no", "b": None}) == 0.0  # unscored is not a disagreement
    words = make_scorer("uncertainty_language")
    assert words.score({"text": "Sources disagree; however I am not sure."}, {}) == 3.0  # disagree, however, not sure
    assert words.score({"text": "The answer is 42."}, {}) == 0.0
    with pytest.raises(InputError, match="at least two judges"):
        make_scorer("judge_disagreement", judges=["a"])
    with pytest.raises(InputError, match="hard_negatives.scorer: unknown hardness scorer .vibes.; known:"):
        make_scorer("vibes")


def test_who_and_when_plan_on_real_runs(shared: Path, tmp_path: Path) -> None:
    ingest(sorted((shared / "data" / "who_and_when").rglob("*.json")), tmp_path, adapter="who-and-when",
           kinds=["identify_turn"])
    manifest = sample_study(tmp_path, REPO / "data" / "plans" / "who_and_when_turns.toml")
    rows = [json.loads(l) for l in (tmp_path / "sample" / "sample.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and len({r["trajectory_id"] for r in rows}) == 40 and manifest["shortfalls"] == []
    # p = (10 / runs in the cell) * (1 / agent turns of the run): recomputed from the trajectories
    turns = Counter(json.loads(l)["trajectory_id"] for l in (tmp_path / "units.jsonl").read_text().splitlines())
    cells = Counter()
    seen = set()
    for line in (tmp_path / "units.jsonl").read_text().splitlines():
        unit = json.loads(line)
        if unit["trajectory_id"] not in seen:
            seen.add(unit["trajectory_id"])
            cells[(unit["strata"]["agent"], unit["strata"]["dataset"])] += 1
    for r in rows:
        cell = (r["strata"]["agent"], r["strata"]["dataset"])
        assert r["inclusion_prob"] == pytest.approx(10 / cells[cell] / turns[r["trajectory_id"]], rel=1e-12)
