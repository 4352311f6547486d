"""Fixtures every test area shares: the shared/ data folder and the repo root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Session fixtures that live in their own modules (the Label Studio server, the demo study, a PostgreSQL cluster).
pytest_plugins = ["tests.support.labelstudio", "tests.support.demo", "tests.support.postgres",
                  "tests.support.ray_cluster"]

REPO = Path(__file__).resolve().parents[1]
# CI clones main into a folder with a copy of shared/ beside it; developers have it
# at ../shared too. ACCORD_SHARED overrides.
SHARED = Path(os.environ.get("ACCORD_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


SHARED_MISSING = "shared data folder not found"


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared/ folder; tests that read it skip with a reason when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"{SHARED_MISSING} at {SHARED} (set ACCORD_SHARED to the folder holding data/)")
    return SHARED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say how many tests skipped because the shared data folder is absent, so it is never silent."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if SHARED_MISSING in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"accord: {len(skipped)} test(s) skipped: {SHARED_MISSING} at {SHARED} "
                                    f"(set ACCORD_SHARED)", yellow=True, bold=True)


@pytest.fixture(scope="session")
def llama_server():
    """Both local models (SmolLM2, Gemma 3) behind one llama-server for the whole session.

    One server for every test area (judges, demo, study), started through
    judges.local_server; its pid goes to .run/llama-server-tests.pid so
    scripts/stop_services.sh ends a leftover. A missing build is a failure naming the
    install command, never a silent skip.
    """
    from judges.local_server import LlamaServer
    from samples.errors import InputError

    server = LlamaServer(name="llama-server-tests", parallel=4, ctx_size=8192)
    try:
        server.start()
    except InputError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.stop()
