"""Active order on real labels: interval width against labels used, beside a uniform random sample.

On five alt-test datasets with categorical labels (``../shared/data/alttest``), the judge
is gpt-4o and its agreement with the human majority is the target. The human labels are
hidden and revealed as a sampling design asks: uniformly at random (the sample mean with
its Wald interval and the finite-population correction), or actively (agreement.active:
labelling probabilities from how many other-family judges, gemini-pro, llama-3.1 and
mistral-v0.3, give gpt-4o's label; the unbiased weighted estimate). The truth is the
agreement over every instance, so coverage is measured exactly over repeated draws.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from agreement.active import active_mean, cross_family_predictor, labelling_probabilities
from samples.seed import DEFAULT_SEED

DATASETS = ("mtbench", "framing", "cebab_aspects", "lgbteen", "wax")
JUDGE, OTHERS = "gpt-4o", ("gemini_pro", "llama-31", "mistral-v03")
SEED = DEFAULT_SEED


def shared_data() -> Path:
    root = Path(os.environ.get("ACCORD_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    return root / "data" / "alttest"


def dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(y, f): per instance with a human majority (ties dropped) and a judge label, y = judge matches the majority,
    f = the cross-family predictor."""
    folder = shared_data() / name
    humans = json.loads((folder / "human_annotations.json").read_text())
    llms = json.loads((folder / "llm_annotations.json").read_text())
    y, agreeing, voting = [], [], []
    for instance in sorted(set().union(*map(set, humans.values()))):
        votes: dict[str, int] = {}
        for labels in humans.values():
            if instance in labels and labels[instance] is not None:
                votes[str(labels[instance])] = votes.get(str(labels[instance]), 0) + 1
        if not votes or instance not in llms[JUDGE]:
            continue
        top = max(votes.values())
        winners = [k for k, v in votes.items() if v == top]
        if len(winners) > 1:
            continue
        judge = str(llms[JUDGE][instance])
        others = [str(llms[o][instance]) for o in OTHERS if instance in llms[o]]
        y.append(judge == winners[0])
        agreeing.append(sum(o == judge for o in others))
        voting.append(len(others))
    return np.array(y, dtype=float), cross_family_predictor(np.array(agreeing), np.array(voting))


def compare(y: np.ndarray, f: np.ndarray, *, share: float, runs: int, rng: np.random.Generator) -> dict[str, float]:
    """Mean interval width of uniform sampling at ``share`` of the units, of active sampling with the same number of
    labels and with half of them, and the active intervals' coverage of the full-data agreement."""
    n_pop, truth, z = y.size, float(y.mean()), 1.959964
    n = max(2, int(round(share * n_pop)))
    uniform = []
    for _ in range(runs):
        pick = rng.choice(n_pop, size=n, replace=False)
        p = y[pick].mean()
        uniform.append(2 * z * math.sqrt(max(p * (1 - p), 1e-12) / n * (1 - n / n_pop)))
    found = {"units": float(n_pop), "labels": float(n), "width_uniform": float(np.mean(uniform)),
             "correlation": float(np.corrcoef(f, y)[0, 1])}
    for name, budget in (("same", n), ("half", n / 2)):
        pi = labelling_probabilities(f, budget)
        widths, covered = [], 0
        for _ in range(runs):
            est = active_mean(y, f, pi, rng.random(n_pop) < pi)
            low, high = est.confidence_interval()
            widths.append(high - low)
            covered += low <= truth <= high
        found[f"width_{name}"], found[f"coverage_{name}"] = float(np.mean(widths)), covered / runs
    return found


def run(quick: bool = False) -> list[dict]:
    if not shared_data().is_dir():
        return [{"benchmark": "active order on real labels", "accord": "not measured", "peer": "", "ratio": "",
                 "target": "", "met": None, "notes": f"shared data not found at {shared_data()}"}]
    runs = 200 if quick else 1000
    rng = np.random.default_rng(SEED)
    rows = []
    for name in DATASETS:
        y, f = dataset(name)
        found = compare(y, f, share=0.3, runs=runs, rng=rng)
        same, half = found["width_same"] / found["width_uniform"], found["width_half"] / found["width_uniform"]
        rows.append({
            "benchmark": f"active order, {name}: interval width against a uniform random sample",
            "accord": f"same labels ({found['labels']:.0f}): {found['width_same']:.3f} (coverage "
                      f"{found['coverage_same']:.1%}); half: {found['width_half']:.3f} ({found['coverage_half']:.1%})",
            "peer": f"uniform random order, {found['labels']:.0f} labels: {found['width_uniform']:.3f}",
            "ratio": f"{same:.2f}x / {half:.2f}x width", "target": "half the labels: <= 1.00x width",
            "met": bool(half <= 1.0 and found["coverage_half"] >= 0.94),
            "notes": f"{found['units']:.0f} instances; judge gpt-4o vs the human majority; predictor: other-family "
                     f"judges giving gpt-4o's label (correlation with agreement {found['correlation']:.2f}); "
                     f"{runs} draws"})
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
