"""Fixtures for the coding-app tests: a loaded study store with annotators and their tokens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from annotate.app_backend import AppBackend
from annotate.store import STORE_URL_ENV, Store
from tests.annotate.helpers import write_study

ENGINES = ("sqlite", "postgresql")
# The PostgreSQL case reaches the cluster at run time (getfixturevalue), so it carries the marker here.
ENGINE_PARAMS = [pytest.param(e, marks=pytest.mark.postgres) if e == "postgresql" else e for e in ENGINES]


def pytest_generate_tests(metafunc) -> None:
    """Modules that set ``BOTH_ENGINES = True`` run every test that uses a store on both engines."""
    if "engine" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_ENGINES", False):
        metafunc.parametrize("engine", ENGINE_PARAMS, indirect=True)


@pytest.fixture
def engine(request, monkeypatch) -> str:
    """The store engine of a test (SQLite unless parametrized: ``BOTH_ENGINES``). For PostgreSQL,
    ACCORD_STORE_URL names a fresh database of the session's cluster, so every ``Store.for_study``
    (AppBackend, the CLI, the app) of the test opens it."""
    name = getattr(request, "param", "sqlite")
    if name == "postgresql":
        monkeypatch.setenv(STORE_URL_ENV, request.getfixturevalue("postgres_url"))
    else:
        monkeypatch.delenv(STORE_URL_ENV, raising=False)
    return name


@pytest.fixture
def store_location(engine, tmp_path) -> str | Path:
    """Where a test's own store goes: a SQLite file, or the test's PostgreSQL database."""
    import os

    return tmp_path / "labels" / "store.sqlite" if engine == "sqlite" else os.environ[STORE_URL_ENV]


@dataclass
class LoadedStudy:
    root: Path
    store: Store
    tokens: dict[str, str]


@pytest.fixture
def loaded_study(tmp_path: Path, engine: str) -> LoadedStudy:
    root = write_study(tmp_path / "study")
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    tokens = {name: backend.store.add_annotator(name) for name in ("alice", "bob", "carol")}
    tokens["judy"] = backend.store.add_annotator("judy", "adjudicator")
    return LoadedStudy(root=root, store=backend.store, tokens=tokens)


@dataclass
class RunningApp:
    url: str
    study: LoadedStudy


@pytest.fixture(scope="session")
def running_app(tmp_path_factory) -> RunningApp:
    """One `accord app` server for the browser tests (each test uses its own annotators)."""
    from tests.annotate.server import coding_app

    root = write_study(tmp_path_factory.mktemp("browser") / "study")
    store = AppBackend(study=root).store
    tokens = {name: store.add_annotator(name) for name in ("alice", "bob", "carol")}
    tokens["judy"] = store.add_annotator("judy", "adjudicator")
    with coding_app(root) as url:
        yield RunningApp(url=url, study=LoadedStudy(root=root, store=store, tokens=tokens))
