"""Fixtures for the coding-app tests: a loaded study store with annotators and their tokens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from annotate.app_backend import AppBackend
from annotate.store import Store
from tests.annotate.helpers import write_study


@dataclass
class LoadedStudy:
    root: Path
    store: Store
    tokens: dict[str, str]


@pytest.fixture
def loaded_study(tmp_path: Path) -> LoadedStudy:
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
