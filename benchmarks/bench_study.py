"""The study layer at population scale: ``accord validate`` and ``accord gate`` (strict policy).

An imported study of 3 annotators and 2 judges (a seeded synthetic panel, 3 units per
trajectory, positive rate 0.3, every rater right 90% of the time) at 1e3, 1e4 and 1e5
units, made with ``accord import table``; each command is timed as a user runs it
(whole process, wall and CPU time, peak RSS of the child). Targets from issue #27 at
1e5 units: validate under 15 s, gate with data/policies/strict.toml under 30 s and
2 GB. No peer: no tool gates a judge on a study.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.measure import Run, checked, run_command, seconds_text
from benchmarks.synthetic import make_panel

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "data" / "policies" / "strict.toml"
SIZES = (1_000, 10_000, 100_000)
RATERS = ("ann_1", "ann_2", "ann_3", "judge_a", "judge_b")
TARGETS = {"validate": (15.0, None), "gate": (30.0, 2.0)}  # seconds, GB at the largest size


def write_study(n: int, work: Path) -> Path:
    """The panel as a long CSV, imported into a fresh study folder by the CLI."""
    panel = make_panel(n, len(RATERS), prevalence=0.3, accuracy=0.9, units_per_cluster=3)
    labels = np.asarray(panel.categories)[panel.codes]
    units, clusters = panel.unit_ids(), np.char.add("t", panel.clusters.astype(str))
    lines = ["unit,rater,label,trajectory"]
    for j, rater in enumerate(RATERS):
        lines += [f"{u},{rater},{label},{c}" for u, label, c in zip(units, labels[:, j], clusters)]
    table = work / f"panel_{n}.csv"
    table.write_text("\n".join(lines) + "\n")
    study = work / f"study_{n}"
    checked(run_command([sys.executable, "-m", "apps", "import", "table", str(table), "--study", str(study),
                         "--unit-column", "unit", "--cluster-column", "trajectory", "--kind", "identify_turn",
                         "--rater-column", "rater", "--label-column", "label", "--judges", "judge_a,judge_b"],
                        cwd=REPO), f"accord import table ({n} units)")
    return study


def row(command: str, n: int, run: Run, largest: bool, load: float) -> dict:
    gib = run.peak_rss_bytes / 2**30
    seconds, memory = TARGETS[command]
    target = (f"< {seconds:.0f} s" + (f" and < {memory:.0f} GB" if memory else "")) if largest else ""
    met = (run.seconds < seconds and (memory is None or gib < memory)) if largest else None
    what = "accord validate" if command == "validate" else "accord gate --policy strict.toml"
    return {"benchmark": f"{what}, {n:,} units (3 annotators, 2 judges)",
            "accord": f"{seconds_text(run.seconds)}, peak RSS {gib:.2f} GB", "peer": "", "ratio": "",
            "target": target, "met": met,
            "notes": f"whole process on an imported study; CPU {run.cpu_seconds:.1f} s; exit {run.returncode}; "
                     f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores, shared)"}


def run(quick: bool = False) -> list[dict]:
    sizes = SIZES[:2] if quick else SIZES
    rows = []
    work = Path(tempfile.mkdtemp(prefix="accord-bench-study-"))
    try:
        for n in sizes:
            study = write_study(n, work)
            load = os.getloadavg()[0]
            validate = checked(run_command([sys.executable, "-m", "apps", "validate", str(study), "--json"],
                                           cwd=REPO), f"accord validate ({n} units)")
            rows.append(row("validate", n, validate, n == SIZES[-1], load))
            load = os.getloadavg()[0]
            gate = run_command([sys.executable, "-m", "apps", "gate", str(study), "--policy", str(POLICY), "--json"],
                               cwd=REPO)
            if gate.returncode not in (0, 1):  # ACCEPT or REJECT are outcomes; 2 or a crash is not
                checked(gate, f"accord gate ({n} units)")
            rows.append(row("gate", n, gate, n == SIZES[-1], load))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows
