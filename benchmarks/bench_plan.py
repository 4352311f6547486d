"""Planner benchmark: ``accord plan`` on the shipped strict policy, as a user runs it.

The whole process (interpreter start, imports, the search for the units needed per
criterion and for the policy, the 21-point OC curve, the table) with the ISE-like
design of the README's worked example; target under 10 s on the project's 2 cores.
No peer: no tool plans a validation against a gate policy.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.measure import best_of, seconds_text

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 10.0
ARGS = ["--policy", str(REPO / "data" / "policies" / "strict.toml"), "--positive-rate", "0.3",
        "--judge-agreement", "0.85", "--human-agreement", "0.85", "--annotators", "3",
        "--turns-per-trajectory", "3"]


def run(quick: bool = False) -> list[dict]:
    seconds, last = best_of([sys.executable, "-m", "apps", "plan", *ARGS], 1 if quick else 3, "accord plan",
                            cwd=REPO)
    units = next((line.split(":")[-1].strip() for line in last.stdout.splitlines()
                  if line.strip().startswith("policy:")), "?")
    return [{"benchmark": "accord plan, strict policy (units search + 21-point OC curve, 600 studies per point)",
             "accord": seconds_text(seconds), "peer": "", "ratio": "", "target": f"< {TARGET_SECONDS:.0f} s",
             "met": seconds < TARGET_SECONDS,
             "notes": f"whole process, median of {1 if quick else 3}; CPU {last.cpu_seconds:.2f} s; the design "
                      f"(positive rate 0.3, AC1 0.85, human agreement 0.85, 3 annotators, 3 turns per trajectory) "
                      f"needs {units} units"}]
