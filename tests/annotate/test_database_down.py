"""While the store's PostgreSQL server is down, the coding app shows a plain page that retries, never a
traceback; a submit while it is down says "Not saved" and keeps the form; after the server is back the
same page works again and no acknowledged label was lost (issue #23).

The test stops and restarts a PostgreSQL cluster of its own (fast shutdown), never the session's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from annotate.app_backend import AppBackend
from annotate.store import STORE_URL_ENV, Store
from apps.cli import main
from tests.annotate.helpers import write_study
from tests.annotate.test_app import APP, button, drawn, submit
from tests.support.postgres import REPO, temporary_cluster

if TYPE_CHECKING:  # streamlit is imported where the app runs, not when the suite is collected
    from streamlit.testing.v1 import AppTest


def _warnings(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning)


@pytest.fixture
def cluster():
    try:
        with temporary_cluster(pid_file=REPO / ".run" / "postgres-down-test.pid") as running:
            yield running
    except RuntimeError as error:
        pytest.fail(str(error))


@pytest.mark.slow  # 12 s on 2 idle cores: make test runs it, make test-fast does not
def test_the_coding_app_waits_for_the_database_and_loses_nothing(cluster, tmp_path: Path, monkeypatch, capsys):
    from streamlit.testing.v1 import AppTest

    url = cluster.create_database("down")
    monkeypatch.setenv(STORE_URL_ENV, url)
    root = write_study(tmp_path / "study")
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    token = backend.store.add_annotator("alice")
    backend.store.close()
    monkeypatch.setenv("ACCORD_STUDY", str(root))

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.text_input(key="token_input").input(token)
    button(at, "Sign in").click().run()
    assert not at.exception
    first = drawn(at)["form"]["heading"]  # alice's first unit: t_a1, an identify_trajectory

    cluster._script("stop")
    try:
        at.run()  # the page re-reads the store: the database is gone
        assert not at.exception, at.exception
        assert "The label database is not answering" in _warnings(at), (at.error, at.markdown, at.main)
        capsys.readouterr()
        assert main(["annotators", "list", "--study", str(root)]) == 2  # the CLI: one line
        err = capsys.readouterr().err
        assert "not answering" in err or "cannot open" in err
        assert err.count("\n") == 1 and "Traceback" not in err
    finally:
        cluster._script("start")
    at.run()
    assert not at.exception and "not answering" not in _warnings(at)
    assert drawn(at)["form"]["heading"] == first
    submit(at, label="no")
    assert not at.exception
    store = Store.for_study(root)
    try:
        assert [(label.task_id, label.label) for label in store.labels()] == [("t_a1", "no")]
    finally:
        store.close()
