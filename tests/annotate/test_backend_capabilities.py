"""What callers ask a registered annotation backend by name, instead of testing its name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from annotate import (
    AppBackend,
    BackendType,
    Store,
    backend_names,
    get_backend_factory,
    register_backend,
)
from samples import SIMULATED, HumanLabel
from samples.layout import StudyLayout
from tests.annotate.helpers import write_study


def test_a_backend_without_the_capabilities_callers_ask_for_is_refused_when_registered():
    with pytest.raises(TypeError, match=r"annotation backend 'bare'.*labels_digest\(layout\), reports_status\(layout\)"):
        register_backend("bare", lambda **options: None)
    assert "bare" not in backend_names()


@pytest.mark.parametrize("name", ["app", "labelstudio"])
def test_the_built_in_backends_are_backend_types(name):
    registered = get_backend_factory(name)
    assert isinstance(registered, BackendType) and registered.name == name


def test_the_coding_app_reports_status_and_a_labels_digest_only_once_its_store_exists(tmp_path):
    root = write_study(tmp_path / "study")
    layout = StudyLayout(root)
    app = get_backend_factory("app")
    assert app.reports_status(layout) is False and app.labels_digest(layout) is None
    assert not layout.store.exists()  # asking created nothing
    backend = AppBackend(study=root)
    try:
        backend.push_files(root / "blind")
        token = backend.store.add_annotator("alice")
        assert app.reports_status(layout) is True
        empty = app.labels_digest(layout)
        # sha256 of the canonical JSON (sorted keys, compact) of the store's label rows: none yet.
        assert empty == hashlib.sha256(b"[]").hexdigest()
        backend.store.submit(token, "t_b2", "no", submission_id="submit-1")
        first = app.labels_digest(layout)
        rows = [row.model_dump(mode="json") for row in backend.store.labels()]
        reference = json.dumps(rows, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert first == hashlib.sha256(reference).hexdigest() and app.labels_digest(layout) == first
        backend.store.submit(token, "t_b2", "yes", submission_id="submit-2")  # an edit makes the labels stale
        assert app.labels_digest(layout) not in (first, empty)
    finally:
        backend.close()


def test_label_studio_labels_reach_the_study_only_through_pull(tmp_path):
    labelstudio = get_backend_factory("labelstudio")
    assert labelstudio.labels_digest(StudyLayout(tmp_path)) is None and labelstudio.reports_status(StudyLayout(tmp_path))
    backend = labelstudio(study=tmp_path, token="a-token", url="http://127.0.0.1:9")
    assert backend.panel_store() is None  # a simulated panel labels through the coding app's store only


def test_the_coding_app_backend_hands_a_simulated_panel_its_store(tmp_path):
    backend = AppBackend(study=write_study(tmp_path / "study"))
    try:
        assert isinstance(backend.panel_store(), Store) and backend.panel_store() is backend.store
    finally:
        backend.close()


def test_each_backend_says_what_people_do_while_accord_run_waits():
    layout = StudyLayout(Path("/studies/s1"))
    # The lines accord run printed before the backends said them (apps/stages.py's _instructions, by backend name).
    assert get_backend_factory("app").instructions(layout, {"bob": 2, "alice": 1}) == [
        "  1. give each annotator a token (once):  accord annotators add alice --study /studies/s1; "
        "accord annotators add bob --study /studies/s1",
        "  2. start the coding app:                 accord app --study /studies/s1",
    ]
    assert get_backend_factory("labelstudio").instructions(layout, {"bob": 2}) == [
        "  1. hand out the logins in /studies/s1/labels/labelstudio_annotators.json "
        "(accord ls status --study /studies/s1)",
        "  2. annotators label their own projects in Label Studio",
    ]


def test_a_label_says_whether_a_simulated_panel_gave_it():
    given = {"task_id": "t1", "annotator": "a", "label": "yes", "created_at": None, "updated_at": None}
    assert HumanLabel(**given, backend=SIMULATED).simulated
    assert not any(HumanLabel(**given, backend=name).simulated for name in ("app", "labelstudio", "import"))
