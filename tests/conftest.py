"""Fixtures every test area shares: the shared/ data folder and the repo root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.servers import worker_tag

# Session fixtures that live in their own modules (the Label Studio server, the demo study, a PostgreSQL cluster).
pytest_plugins = ["tests.support.labelstudio", "tests.support.demo", "tests.support.postgres",
                  "tests.support.ray_cluster"]

REPO = Path(__file__).resolve().parents[1]
# CI clones main into a folder with a copy of shared/ beside it; developers have it
# at ../shared too. ACCORD_SHARED overrides.
SHARED = Path(os.environ.get("ACCORD_SHARED", REPO.parent / "shared"))


# A test that reaches one of these session fixtures (directly or through another fixture)
# starts that real service, so it carries the service's marker whether or not its author
# wrote it: `-m "not services"` then starts none of them. Fixtures reached at run time
# (request.getfixturevalue) mark their parameters instead (tests/annotate/conftest.py,
# tests/test_readme.py); tests that open chromium or a server by hand mark themselves.
SERVICE_FIXTURES = {"postgres": "postgres", "labelstudio_server": "labelstudio", "llama_server": "llama",
                    "demo_study": "demo", "ray_cluster": "ray"}
SERVICE_MARKERS = ("postgres", "labelstudio", "llama", "browser", "demo", "ray")
# Under `--dist loadgroup` (make test's service tier on several workers) the tests of one costly
# session service share an xdist group, so one worker runs them all and the service starts once;
# the first marker that matches names the group (the demo's llama-server serves the other llama
# tests). The other service tests (a PostgreSQL cluster, a browser, Label Studio: one server per
# module) are grouped by module, as `--dist loadscope` would, so a module's fixtures are built once
# and the modules spread over the workers.
SERVICE_GROUPS = (("demo", "llama"), ("ray", "ray"), ("llama", "llama"))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        for fixture in SERVICE_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(SERVICE_FIXTURES[fixture])
        if any(item.get_closest_marker(name) for name in SERVICE_MARKERS):
            item.add_marker("services")
        if item.get_closest_marker("services") and item.get_closest_marker("xdist_group") is None:
            group = next((group for marker, group in SERVICE_GROUPS if item.get_closest_marker(marker)),
                         item.nodeid.split("::")[0])
            item.add_marker(pytest.mark.xdist_group(group))
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        _suffix_groups(items)
        # Longest group first: xdist hands out groups in collection order, so the demo's llama group (the
        # longest, minutes of model calls) starts at once on one worker while the other takes the rest.
        first: dict[str, int] = {}
        for _, group in SERVICE_GROUPS:  # a group's first listing ranks it ("llama" is listed twice)
            first.setdefault(group, len(first))
        items.sort(key=lambda item: min((first.get(str(mark.args[0]), len(first))
                                         for mark in item.iter_markers("xdist_group") if mark.args), default=len(first)))


def _suffix_groups(items) -> None:
    """Give each grouped item the ``@group`` node-id suffix that ``--dist loadgroup`` schedules by.

    pytest-xdist 3.8 writes it to ``item._nodeid``, which pytest 9.2 no longer reads (the id
    lives in ``item._id``), so without this every group is scattered over the workers and each
    worker starts its own demo, llama-server, Ray cluster and Label Studio.
    """
    from _pytest.nodeid import coerce_node_id

    for item in items:
        names = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group") if mark.args})
        suffix = f"@{'_'.join(names)}"
        if names and not item.nodeid.endswith(suffix):
            item._id = coerce_node_id(item.nodeid + suffix)


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

    server = LlamaServer(name=f"llama-server-tests{worker_tag()}", parallel=4, ctx_size=8192)
    try:
        server.start()
    except InputError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.stop()
