"""The real studies as `make demo` runs them first: ``bash scripts/real_studies.sh``.

Thirteen studies on real human labels (data/studies/, read from the shared data folder; no model
is called), each into a fresh study folder, then again with every stage's fingerprint matching.
Timed as a user runs it (whole process tree: wall and CPU time). Target from issue #25: under
60 s in all on this machine. The peer is the script's former way, measured in the same run: one
``accord run`` per study, in turn (each process loading the libraries again).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import Run, run_command, seconds_text

REPO = Path(__file__).resolve().parents[1]
ACCORD = Path(sys.executable).with_name("accord")
TARGET_S = 60.0
COPIED = ("data", "scripts")
"""Copied into the scratch checkout: study files resolve their outputs next to themselves (studies/real/)."""


def _checkout(work: Path) -> Path:
    """A scratch checkout: the study files and the script copied, everything else linked, no studies/ folder."""
    root = work / "repo"
    root.mkdir()
    for entry in REPO.iterdir():
        if entry.name in COPIED:
            shutil.copytree(entry, root / entry.name)
        elif entry.name not in {"studies", ".run", ".git"}:
            (root / entry.name).symlink_to(entry)
    return root


def _environment() -> dict[str, str]:
    shared = os.environ.get("ACCORD_SHARED") or str(REPO.parent / "shared")
    return {**os.environ, "PYTHONPATH": str(REPO), "ACCORD": str(ACCORD), "ACCORD_SHARED": shared}


def _studies(root: Path) -> list[str]:
    """The script's study files, in its order (read from the script itself, so the peer runs the same set)."""
    script = f'cd {root}; eval "$(sed -n "/^first=/p;/^rest=/p" scripts/real_studies.sh)"; echo $first $rest'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()


def _peer(root: Path) -> Run:
    """One `accord run STUDY --quiet` per study, in turn, into fresh folders."""
    loop = " ".join(f"{ACCORD} run {study} --quiet; [ $? -le 1 ] || exit 2;" for study in _studies(root))
    shutil.rmtree(root / "studies", ignore_errors=True)
    return run_command(["bash", "-c", f"cd {root}; {loop}"], env=_environment())


def _row(benchmark: str, run: Run, load: float, *, target: bool, peer: Run | None = None) -> dict:
    met = (run.returncode == 0 and run.seconds < TARGET_S) if target else None
    return {"benchmark": benchmark, "accord": f"{seconds_text(run.seconds)}, CPU {run.cpu_seconds:.1f} s",
            "peer": f"{seconds_text(peer.seconds)}, CPU {peer.cpu_seconds:.1f} s" if peer else "",
            "ratio": f"{peer.seconds / run.seconds:.1f}x faster" if peer and run.seconds > 0 else "",
            "target": f"< {TARGET_S:.0f} s" if target else "", "met": met,
            "notes": f"exit {run.returncode}; {len(run.stdout.splitlines())} lines printed; load average "
                     f"{load:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores, shared)"}


def run(quick: bool = False) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="accord-bench-real-"))
    try:
        root = _checkout(work)
        peer = None if quick else _peer(root)
        shutil.rmtree(root / "studies", ignore_errors=True)
        load = os.getloadavg()[0]
        fresh = run_command(["bash", str(root / "scripts" / "real_studies.sh")], env=_environment())
        rows = [_row("bash scripts/real_studies.sh: 13 real studies into fresh folders (every core)", fresh, load,
                     target=True, peer=peer)]
        load = os.getloadavg()[0]
        again = run_command(["bash", str(root / "scripts" / "real_studies.sh")], env=_environment())
        rows.append(_row("bash scripts/real_studies.sh again: every stage's fingerprint matches (nothing recomputed)",
                         again, load, target=False))
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
