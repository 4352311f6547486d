"""Write accord's small example inputs (seeded, so the files are byte-identical on rerun).

``identify_panel.csv``: a long labels table (``unit,rater,label,trajectory``) for the
Identify scheme (yes/no: "this turn identifies the conflict"). 20 trajectories x 3
turns = 60 units, three human annotators (ann_1..ann_3) and two judges (judge_a, a
careful judge; judge_b, a lenient one that says "yes" too often). Two human ratings
are missing on purpose, each on a unit where the two remaining annotators disagree,
so the human majority has two ties; judge_b left one unit unscored (a row with an
empty label), as an unparseable judge output is carried.

Run from the repository root: ``.venv/bin/python data/examples/make_examples.py``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from samples.canonical import sha256_hex  # noqa: E402  (repo root on the path first)
from samples.seed import DEFAULT_SEED  # noqa: E402

SEED = DEFAULT_SEED
N_TRAJECTORIES, TURNS = 20, 3
PREVALENCE = 0.35
# Chance that a rater reports the latent truth; otherwise it reports "yes" with
# probability YES_BIAS[rater] (so judge_b's errors lean towards "yes").
ACCURACY = {"ann_1": 0.85, "ann_2": 0.80, "ann_3": 0.82, "judge_a": 0.85, "judge_b": 0.70}
YES_BIAS = {"ann_1": 0.5, "ann_2": 0.5, "ann_3": 0.5, "judge_a": 0.5, "judge_b": 0.9}
# (dropped annotator, the two who stay): the first unit where those two disagree loses the rating
DROPS = (("ann_2", ("ann_1", "ann_3")), ("ann_3", ("ann_1", "ann_2")))
UNSCORED = {(17, "judge_b")}


def unit_id(trajectory: str, turn: int) -> str:
    """The Unit id convention: u_ + 20 hex of sha256 of [trajectory_id, kind, focus_turn]."""
    return "u_" + sha256_hex([trajectory, "identify_turn", turn])[:20]


def identify_panel(path: Path) -> None:
    rng = np.random.default_rng(SEED)
    n = N_TRAJECTORIES * TURNS
    truth = rng.random(n) < PREVALENCE
    says_yes = {}
    for rater, accuracy in ACCURACY.items():
        honest = rng.random(n) < accuracy
        guess = rng.random(n) < YES_BIAS[rater]
        says_yes[rater] = np.where(honest, truth, guess)
    missing = set()
    for dropped, (a, b) in DROPS:
        taken = {i for i, _ in missing}
        unit = next(i for i in range(n) if says_yes[a][i] != says_yes[b][i] and i not in taken)
        missing.add((unit, dropped))
    rows = []
    for rater in ACCURACY:
        for i in range(n):
            if (i, rater) in missing:
                continue
            trajectory = f"traj-{i // TURNS + 1:02d}"
            label = "" if (i, rater) in UNSCORED else ("yes" if says_yes[rater][i] else "no")
            rows.append((unit_id(trajectory, i % TURNS + 1), rater, label, trajectory))
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(("unit", "rater", "label", "trajectory"))
        writer.writerows(rows)


def main() -> None:
    identify_panel(HERE / "identify_panel.csv")


if __name__ == "__main__":
    main()
