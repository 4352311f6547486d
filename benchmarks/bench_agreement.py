"""Agreement benchmarks: accord beside judgecheck and irrCAC on the same synthetic panels.

Every time is a whole process as a user runs it (interpreter start, imports, file
reading, computing, printing), measured from this process; peers run from their
own isolated venvs (benchmarks/peers.py). Rows:

- ``accord agree`` full panel report with 10,000-resample CIs vs ``judgecheck report
  --intervals`` (1,000 resamples: judgecheck's fixed count) on 7x23 ... 20x1,000
  raters x items; target >= 50x faster on 20x1,000;
- Gwet's AC1 with its SE on 3 raters x 1,000 items, accord vs Python irrCAC 0.4.4:
  the values must agree to 1e-9;
- scaling on 3 raters: all coefficients + 10,000 bootstrap CIs on 10^3 (< 1 s) up to
  10^5 units, and a 3-judge pairwise table on 10^6 units with 1,000 resamples
  (< 30 s, < 2 GB peak RSS).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from benchmarks import failed_row
from benchmarks.measure import best_of, checked, ratio_text, run_command, seconds_text
from benchmarks.peers import IRRCAC, JUDGECHECK, ensure_venv
from benchmarks.synthetic import make_panel, write_judgecheck_dir, write_long_csv

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
JUDGECHECK_SIZES = ((7, 23), (7, 200), (12, 500), (20, 1_000))
JUDGES_IN_PANEL = 2  # the last two raters of a judgecheck-sized panel are accord's --judge raters
RESAMPLES = 10_000
SPEEDUP_TARGET = 50.0

# All coefficients on a long CSV, with a bootstrap of argv[2] resamples.
ALL_COEFFICIENTS = """
import sys
from agreement import compute, load_labels
data = load_labels(sys.argv[1])
results = compute(data, n_resamples=int(sys.argv[2]), cluster=False)  # every coefficient that fits 3 raters
for name, result in results.items():
    print(name, result.statistic, *result.confidence_interval(method="percentile"))
"""

AC1_ACCORD = """
import json, sys
from agreement import gwet_ac1, load_labels
result = gwet_ac1(load_labels(sys.argv[1]), n_resamples=0)  # analytic SE, as irrCAC
print(json.dumps({"ac1": result.statistic, "se": result.se, "pa": result.pa, "pe": result.pe}))
"""

AC1_IRRCAC = """
import json, sys
import pandas as pd
from irrCAC.raw import CAC
long = pd.read_csv(sys.argv[1])
wide = long.pivot(index="unit", columns="rater", values="label")
est = CAC(wide, digits=15).gwet()["est"]
print(json.dumps({"ac1": float(est["coefficient_value"]), "se": float(est["se"]),
                  "pa": float(est["pa"]), "pe": float(est["pe"])}))
"""


def _accord(*args: str) -> list[str]:
    return [PYTHON, "-m", "apps", *args]


def judgecheck_rows(work: Path, *, quick: bool) -> list[dict]:
    judgecheck = ensure_venv(JUDGECHECK) / "judgecheck"
    sizes = JUDGECHECK_SIZES[:2] if quick else JUDGECHECK_SIZES
    rows = []
    for n_raters, n_items in sizes:
        panel = make_panel(n_items, n_raters)
        csv_path = write_long_csv(panel, work / f"panel_{n_raters}x{n_items}.csv")
        folder = write_judgecheck_dir(panel, work / f"judgecheck_{n_raters}x{n_items}")
        judges = [arg for rater in panel.raters[-JUDGES_IN_PANEL:] for arg in ("--judge", rater)]
        ours, ours_run = best_of(_accord("agree", str(csv_path), *judges, "--bootstrap", str(RESAMPLES)),
                                 1 if quick else 3, "accord agree", cwd=REPO)
        big = (n_raters, n_items) == JUDGECHECK_SIZES[-1]
        peer, peer_run = best_of([str(judgecheck), "report", str(folder), "--intervals", "--labels", "yes,no",
                           "--positive-label", "yes"], 1 if big or quick else 3, "judgecheck report")
        rows.append({
            "benchmark": f"panel report {n_raters} raters x {n_items:,} items",
            "accord": seconds_text(ours),
            "peer": f"judgecheck 0.2.0: {seconds_text(peer)}",
            "ratio": ratio_text(peer, ours),
            "target": f">= {SPEEDUP_TARGET:.0f}x faster than judgecheck" if big else "",
            "met": (peer / ours >= SPEEDUP_TARGET) if big else None,
            "notes": (f"accord agree: {n_raters - JUDGES_IN_PANEL} humans + {JUDGES_IN_PANEL} judges, "
                      f"{RESAMPLES:,}-resample CIs on every panel; judgecheck --intervals: "
                      "Fleiss/alpha/pairwise kappa, 1,000 resamples; whole process, median wall time of runs; "
                      f"CPU time (last run) {ours_run.cpu_seconds:.2f} s vs {peer_run.cpu_seconds:.2f} s"),
        })
    return rows


def irrcac_rows(work: Path, *, quick: bool) -> list[dict]:
    python = ensure_venv(IRRCAC) / "python"
    panel = make_panel(1_000, 3, categories=("a", "b", "c"), prevalence=0.5, missing=0.1)
    csv_path = write_long_csv(panel, work / "panel_3x1000.csv")
    repeats = 1 if quick else 3
    ours, ours_run = best_of([PYTHON, "-c", AC1_ACCORD, str(csv_path)], repeats, "accord AC1", cwd=REPO)
    peer, peer_run = best_of([str(python), "-c", AC1_IRRCAC, str(csv_path)], repeats, "irrCAC AC1")
    mine, theirs = json.loads(ours_run.stdout), json.loads(peer_run.stdout)
    gap = max(abs(mine[k] - theirs[k]) for k in ("ac1", "se", "pa", "pe"))
    return [{
        "benchmark": "Gwet AC1 + SE, 3 raters x 1,000 items (10% missing)",
        "accord": f"{seconds_text(ours)} (AC1 {mine['ac1']:.6f}, SE {mine['se']:.6f})",
        "peer": f"irrCAC 0.4.4: {seconds_text(peer)} (AC1 {theirs['ac1']:.6f}, SE {theirs['se']:.6f})",
        "ratio": ratio_text(peer, ours),
        "target": "values agree to 1e-9",
        "met": gap <= 1e-9,
        "notes": f"largest difference in AC1/SE/pa/pe: {gap:.2e}; whole process incl. reading the CSV",
    }]


def scaling_rows(work: Path, *, quick: bool) -> list[dict]:
    rows = []
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    for n in sizes:
        csv_path = write_long_csv(make_panel(n, 3), work / f"scale_{n}.csv")
        seconds, _ = best_of([PYTHON, "-c", ALL_COEFFICIENTS, str(csv_path), str(RESAMPLES)], 1 if quick else 3,
                             "all coefficients", cwd=REPO)
        rows.append({
            "benchmark": f"all coefficients + {RESAMPLES:,} bootstrap CIs, 3 raters x {n:,} units",
            "accord": seconds_text(seconds), "peer": "", "ratio": "",
            "target": "< 1 s" if n == 1_000 else "",
            "met": seconds < 1.0 if n == 1_000 else None,
            "notes": "whole process: load_labels(CSV) + compute(every coefficient), i.i.d. unit resampling",
        })
    n = 100_000 if quick else 1_000_000
    panel = make_panel(n, 3, rater_prefix="judge_")
    csv_path = write_long_csv(panel, work / f"pairs_{n}.csv")
    judges = [arg for rater in panel.raters for arg in ("--judge", rater)]
    run = checked(run_command(_accord("agree", str(csv_path), *judges, "--bootstrap", "1000"), cwd=REPO),
                  "accord agree (3 judges)")
    gib = run.peak_rss_bytes / 2**30
    rows.append({
        "benchmark": f"3-judge pairwise table, {n:,} units, 1,000 resamples",
        "accord": f"{seconds_text(run.seconds)}, peak RSS {gib:.2f} GB", "peer": "", "ratio": "",
        "target": "< 30 s and < 2 GB" if n == 1_000_000 else "",
        "met": (run.seconds < 30 and gib < 2) if n == 1_000_000 else None,
        "notes": f"accord agree on a long CSV ({3 * n:,} rows), whole process; peak RSS of the child (wait4)",
    })
    return rows


def run(quick: bool = False) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="accord-bench-") as tmp:
        for group in (judgecheck_rows, irrcac_rows, scaling_rows):
            try:
                rows += group(Path(tmp), quick=quick)
            except Exception as error:  # one failing comparison must not hide the others
                rows.append(failed_row(f"agreement: {group.__name__}", error))
    return rows
