"""Files outside samples/ that can map a task to its model, a person or a judge label are owner-only whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from annotate.export import export_labels
from annotate.store import Store
from judges.cache import RequestCache
from samples.layout import StudyLayout
from samples.records import HumanLabel


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_cache_and_label_export_are_private_under_umask_zero(tmp_path):
    layout = StudyLayout(tmp_path / "study")
    old = os.umask(0)
    try:
        store = Store.open(layout.store)
        store.close()
        cache = RequestCache(layout.judge_cache)
        cache.close()
        label = HumanLabel(task_id="t_1", annotator="ann", label="yes", created_at=None, updated_at=None, backend="app")
        export_labels([label], layout.app_labels, format="jsonl")
    finally:
        os.umask(old)
    for path in (layout.store, layout.judge_cache, layout.app_labels):
        assert _mode(path) == 0o600, path
    for folder in (layout.labels_dir, layout.judges_dir):
        assert _mode(folder) == 0o700, folder
    for wal in layout.labels_dir.glob("store.sqlite-*"):
        assert _mode(wal) & 0o077 == 0, wal
