"""No settings change loses labels (issue #23): a finished study whose store location changes refuses to
run until the labels are moved (`accord store copy`) or the user says so (`--store-moved`), and
labels/human.jsonl is never rewritten from a store holding fewer labels without that flag."""

from __future__ import annotations

import json

from annotate.store import STORE_URL_ENV
from apps.study import load_study_file
from tests.study.helpers import accord, run_json
from tests.study.test_run_offline import _label_as_people, study_file  # noqa: F401 - the fixture


def _finished(study_file, capsys, monkeypatch):  # noqa: F811
    monkeypatch.delenv(STORE_URL_ENV, raising=False)
    root = load_study_file(study_file).output
    assert run_json(capsys, str(study_file))[1]["waiting"]
    _label_as_people(root)
    assert not run_json(capsys, str(study_file))[1]["waiting"]
    return root


def _move_store(study_file, url: str) -> None:  # noqa: F811
    text = study_file.read_text(encoding="utf-8")
    study_file.write_text(text.replace('backend = "app"', f'backend = "app"\noptions = {{ store = "{url}" }}'),
                          encoding="utf-8")


def test_a_new_store_location_refuses_to_run_until_told(study_file, tmp_path, capsys, monkeypatch):  # noqa: F811
    root = _finished(study_file, capsys, monkeypatch)
    labels = root / "labels" / "human.jsonl"
    before = labels.read_bytes()
    held = len(before.splitlines())
    assert held > 0
    resolved = (root / "study.json").read_bytes()
    _move_store(study_file, f"sqlite:///{tmp_path / 'elsewhere.sqlite'}")
    code, _, err = accord(capsys, "run", str(study_file))
    assert (root / "study.json").read_bytes() == resolved  # a failed run leaves the settings it found
    errors = [line for line in err.splitlines() if "error" in line]
    assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
    err = errors[0]
    assert f"holds {held} labels" in err and "accord store copy" in err and "--store-moved" in err
    assert labels.read_bytes() == before  # 84 -> 0 in the issue; nothing rewritten now
    monkeypatch.setenv(STORE_URL_ENV, f"sqlite:///{tmp_path / 'elsewhere.sqlite'}")  # the new store, by hand
    code, _, err = accord(capsys, "labels", "export", "--study", str(root))
    assert code == 2 and f"holds {held} labels" in err and labels.read_bytes() == before
    monkeypatch.delenv(STORE_URL_ENV)
    code, result = run_json(capsys, str(study_file), "--store-moved")  # said so: starts from the new store
    assert code == 0 and result["waiting"]
    assert labels.read_bytes() == b""


def test_labels_moved_with_store_copy_let_the_study_run_on(study_file, capsys, monkeypatch, postgres_url):  # noqa: F811
    root = _finished(study_file, capsys, monkeypatch)
    labels = root / "labels" / "human.jsonl"
    held = len(labels.read_bytes().splitlines())
    _move_store(study_file, postgres_url)
    code, _, err = accord(capsys, "run", str(study_file))
    assert code == 2 and f"holds {held} labels" in err and "accord store copy --study" in err and " --to " in err
    code, out, err = accord(capsys, "store", "copy", "--study", str(root), "--to", postgres_url, "--json")
    assert code == 0, err
    assert json.loads(out)["tables"]["labels"]["rows"] == held
    code, result = run_json(capsys, str(study_file))
    assert code in (0, 1) and not result["waiting"]
    assert len(labels.read_bytes().splitlines()) == held
