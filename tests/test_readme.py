"""Every README command block marked `<!-- runnable -->` runs as written.

Blocks run with bash (errexit) from a scratch mirror of the repository (symlinks to
its top-level entries, a fresh `studies/`, and `../shared` pointing at the shared
data), so they write nothing into the checkout and cannot reuse an earlier run.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

_BLOCK = re.compile(r"<!-- runnable -->\s*\n```sh\n(.*?)```", re.S)


def runnable_blocks() -> list[str]:
    return _BLOCK.findall((REPO / "README.md").read_text(encoding="utf-8"))


def test_readme_has_runnable_blocks() -> None:
    assert len(runnable_blocks()) >= 2


@pytest.mark.parametrize("index", range(len(runnable_blocks())))
def test_readme_block_runs(index: int, tmp_path: Path, shared: Path) -> None:
    mirror = tmp_path / "repo"
    mirror.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in {"studies", ".run", ".git"}:
            (mirror / entry.name).symlink_to(entry)
    (tmp_path / "shared").symlink_to(shared.resolve())
    block = runnable_blocks()[index]
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=mirror, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "COLUMNS": "160"})
    assert result.returncode == 0, f"README block {index} failed:\n{block}\n--- stderr:\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr
