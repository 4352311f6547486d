"""The benchmarks harness (python -m benchmarks) and the synthetic panels both tools read."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from agreement import load_labels
from benchmarks import ROW_KEYS, failed_row
from benchmarks.__main__ import END, START, check_row, discover, markdown_table, replace_between_markers
from benchmarks.measure import run_command
from benchmarks.synthetic import make_panel, write_judgecheck_dir, write_long_csv

ROW = {"benchmark": "b", "accord": "0.41 s", "peer": "x: 2 s", "ratio": "4.9x faster", "target": "< 1 s",
       "met": True, "notes": "n"}


def test_discovery_finds_this_area():
    assert "agreement" in discover()


def test_rows_are_checked_against_the_contract():
    assert check_row(dict(ROW), "a") == ROW
    with pytest.raises(ValueError, match="exactly the keys"):
        check_row({k: v for k, v in ROW.items() if k != "notes"}, "a")
    with pytest.raises(ValueError, match="'met' must be"):
        check_row({**ROW, "met": "yes"}, "a")
    with pytest.raises(ValueError, match="'accord' must be a string"):
        check_row({**ROW, "accord": 0.41}, "a")
    assert set(failed_row("b", RuntimeError("boom\nmore"))) == set(ROW_KEYS)
    assert failed_row("b", RuntimeError("boom\nmore"))["notes"] == "benchmark failed: RuntimeError: boom"


def test_markdown_and_readme_markers():
    table = markdown_table([ROW, {**ROW, "met": None, "notes": "a | b"}, {**ROW, "met": False}])
    lines = table.strip().splitlines()
    assert lines[0] == "| " + " | ".join(ROW_KEYS) + " |" and len(lines) == 5
    assert "| yes |" in lines[2] and "| - |" in lines[3] and "a \\| b" in lines[3] and "**no**" in lines[4]
    readme = f"intro\n{START}\nold table\n{END}\noutro\n"
    updated = replace_between_markers(readme, table)
    assert updated.startswith("intro\n" + START + "\n") and updated.endswith(END + "\noutro\n")
    assert "old table" not in updated and table in updated
    assert replace_between_markers("no markers here", table) is None


def test_run_command_reports_time_exit_code_and_peak_memory():
    # the child touches ~200 MB and spins on the CPU, so its own rusage (wait4) must show both
    child = "import sys; b = bytearray(200 << 20); sum(range(3_000_000)); print('hi'); sys.exit(3)"
    run = run_command([sys.executable, "-c", child])
    assert run.returncode == 3 and run.stdout == "hi\n"
    assert run.peak_rss_bytes > 200 << 20
    assert 0 < run.cpu_seconds and 0 < run.seconds


def test_synthetic_panel_is_seeded_and_both_formats_hold_the_same_ratings(tmp_path):
    panel = make_panel(120, 5, missing=0.2)
    assert np.array_equal(panel.codes, make_panel(120, 5, missing=0.2).codes)
    assert not np.array_equal(panel.codes, make_panel(120, 5, missing=0.2, seed=1).codes)
    assert ((panel.codes >= 0).sum(axis=1) >= 1).all() and (panel.codes < 0).any()

    data = load_labels(write_long_csv(panel, tmp_path / "p.csv"), cluster="cluster")
    folder = write_judgecheck_dir(panel, tmp_path / "jc")
    units = list(panel.unit_ids())
    for j, rater in enumerate(panel.raters):
        lines = [json.loads(x) for x in (folder / f"{rater}.jsonl").read_text().splitlines()]
        from_jsonl = {x["findingId"]: x["label"] for x in lines}
        expected = {units[i]: panel.categories[c] for i, c in enumerate(panel.codes[:, j]) if c >= 0}
        assert from_jsonl == expected
        column = data.codes[:, data.rater_index(rater)]
        from_csv = {u: data.categories[c] for u, c in zip(data.units, column) if c >= 0}
        assert from_csv == expected
    assert len(set(data.clusters)) == 40  # 3 units per cluster
