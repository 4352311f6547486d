"""Isolated virtual environments for peer tools measured beside accord.

Peers pin versions that must never enter accord's own environment (irrCAC 0.4.4
pins scipy 1.12 / numpy 1.26), so each gets its own venv under
``$ACCORD_CACHE/bench-venvs/<name>`` (default ``~/.cache/accord``). Creation is
idempotent: a ``.installed`` stamp records the exact requirement list, and a venv
whose stamp differs is rebuilt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class Peer:
    """A peer tool: its venv name and the exact requirements pip installs into it."""

    name: str
    requirements: tuple[str, ...]


JUDGECHECK = Peer(name="judgecheck", requirements=("judgecheck==0.2.0",))
IRRCAC = Peer(name="irrcac", requirements=("irrCAC==0.4.4",))


def cache_root() -> Path:
    return Path(os.environ.get("ACCORD_CACHE") or Path.home() / ".cache" / "accord")


def venv_dir(peer: Peer) -> Path:
    return cache_root() / "bench-venvs" / peer.name


def ensure_venv(peer: Peer) -> Path:
    """Create (once) the peer's venv and return its ``bin`` directory."""
    root = venv_dir(peer)
    stamp = root / ".installed"
    wanted = "\n".join(peer.requirements)
    if stamp.is_file() and stamp.read_text() == wanted:
        return root / "bin"
    if root.exists():
        shutil.rmtree(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    print(f"benchmarks: creating the {peer.name} venv in {root} ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *peer.requirements], check=True)
    stamp.write_text(wanted)
    return root / "bin"
