"""The test tiers hold: a test that reaches a real service carries its marker, so `-m "not services"` starts none.

Checked on the tests this session collected and kept: in the in-process tier (`-m "not
services"`) that means none of them reaches a service fixture; in a full run, every one
that does is marked.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import SERVICE_FIXTURES, SERVICE_MARKERS


def test_every_collected_test_that_reaches_a_service_is_marked(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    assert request.node in items
    unmarked = []
    for item in items:
        uses = set(getattr(item, "fixturenames", ())) & SERVICE_FIXTURES.keys()
        postgres_engine = getattr(getattr(item, "callspec", None), "params", {}).get("engine") == "postgresql"
        needs = {SERVICE_FIXTURES[f] for f in uses} | ({"postgres"} if postgres_engine else set())
        missing = sorted(m for m in needs if item.get_closest_marker(m) is None)
        service = any(item.get_closest_marker(m) for m in SERVICE_MARKERS)
        if missing or service != (item.get_closest_marker("services") is not None):
            unmarked.append(f"{item.nodeid}: {missing or 'services'}")
    assert unmarked == []
    if request.config.getoption("markexpr") == "not services":
        assert not any(item.get_closest_marker("services") for item in items)


def test_the_tests_of_one_costly_service_share_one_xdist_group(request: pytest.FixtureRequest) -> None:
    """Under `--dist loadgroup` a group runs on one worker: every demo/llama test in `llama`, every Ray
    test in `ray` (even the ones that also reach llama-server), so each of these services starts once
    per service-tier run; the other service tests (Label Studio among them: one server per module) by
    module (as `--dist loadscope` would); the in-process tests in none."""
    expected = {"demo": "llama", "ray": "ray", "llama": "llama"}
    wrong = []
    for item in request.session.items:
        uses = [m for m in ("demo", "ray", "llama") if item.get_closest_marker(m)]
        groups = [mark.args[0] for mark in item.iter_markers("xdist_group")]
        if uses and groups != [expected[uses[0]]]:
            wrong.append(f"{item.nodeid}: {uses} in {groups}")
        module = item.nodeid.split("::")[0]
        if not uses and groups != ([module] if item.get_closest_marker("services") else []):
            wrong.append(f"{item.nodeid}: no costly service, yet in {groups}")
    assert wrong == []


def test_service_pid_files_and_names_are_per_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.servers import worker_tag

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert worker_tag() == "-gw1"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert worker_tag() == ""


def test_loadgroup_keeps_each_service_group_on_one_worker(tmp_path) -> None:
    """Real pytest-xdist on two workers with this conftest's hook: each group's tests all run on one worker
    (pytest-xdist 3.8 alone scatters them under pytest 9.2, see tests/conftest.py `_suffix_groups`)."""
    import re
    import subprocess
    import sys
    import tomllib

    from tests.conftest import REPO

    # the repo's addopts (which plugins load, as in make test) with the markers the hook adds
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    (tmp_path / "pytest.ini").write_text(f"[pytest]\naddopts = {addopts}\n"
                                         "markers =\n    demo\n    llama\n    ray\n    labelstudio\n    services\n")
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    (tmp_path / "test_groups.py").write_text(
        "import time\nimport pytest\n\n"
        "@pytest.mark.parametrize('i', range(4))\ndef test_free(i):\n    time.sleep(0.2)\n\n"
        "@pytest.mark.labelstudio\n@pytest.mark.parametrize('i', range(4))\ndef test_ls(i):\n    time.sleep(0.2)\n\n")
    for name in "abcd":  # service modules collected before the costly groups, as tests/annotate is before tests/study
        (tmp_path / f"test_{name}_module.py").write_text(
            "import time\nimport pytest\n\n"
            "@pytest.mark.labelstudio\n@pytest.mark.parametrize('i', range(2))\ndef test_module(i):\n    time.sleep(0.2)\n")
    (tmp_path / "test_z_costly.py").write_text(
        "import time\nimport pytest\n\n"
        "@pytest.mark.ray\n@pytest.mark.parametrize('i', range(4))\ndef test_ray(i):\n    time.sleep(0.2)\n\n"
        "@pytest.mark.llama\n@pytest.mark.parametrize('i', range(4))\ndef test_llama(i):\n    time.sleep(0.2)\n\n"
        "@pytest.mark.demo\n@pytest.mark.parametrize('i', range(4))\ndef test_demo(i):\n    time.sleep(0.2)\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-v",
                           "-p", "no:cacheprovider"],  # as make test runs the service tier
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    ran = re.findall(r"\[(gw\d)\] \[ *\d+%\] PASSED test_\w+\.py::(test_\w+)\[\d\](@\w+)?", done.stdout)
    assert len(ran) == 28, done.stdout[-2000:]
    workers = {name: {w for w, test, _ in ran if test == name} for name in ("test_llama", "test_demo", "test_ray", "test_ls")}
    assert all(len(on) == 1 for on in workers.values()), workers
    assert workers["test_llama"] == workers["test_demo"], workers  # the demo's llama-server serves the llama tests
    assert {test: suffix for _, test, suffix in ran if test not in ("test_free", "test_module")} == {
        "test_llama": "@llama", "test_demo": "@llama", "test_ray": "@ray", "test_ls": "@test_groups"}
    # The two costly groups are handed out first, one to each worker, although the file lists them last: the
    # longest chain (the demo's minutes of model calls) starts at once instead of after every other module.
    first_on = {worker: next(test for w, test, _ in ran if w == worker) for worker in ("gw0", "gw1")}
    assert sorted(first_on.values()) in (["test_demo", "test_ray"], ["test_llama", "test_ray"]), first_on
