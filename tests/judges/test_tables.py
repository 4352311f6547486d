"""The labels table and its log: torn last lines, repeated keys, older tables, temporaries, bad rows and unit files."""

from __future__ import annotations

import json

import pytest

from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_label_rows, read_labels, read_units
from samples.errors import InputError
from samples.layout import StudyLayout
from tests.judges.units import response_unit


def _aggarwal_run(tmp_path, units):
    return run_judges(units, [build_judge({"provider": "rule", "model": "aggarwal"})], StudyPaths.in_dir(tmp_path))


def _answer_units(n: int, tag: str = "t"):
    return [response_unit(f"{tag}{i}", "<answer>\nDECISION: ANSWER\n</answer>") for i in range(n)]


def test_paths_of_a_study_are_the_layouts() -> None:
    layout = StudyLayout.of("/srv/study")
    paths = StudyPaths.in_dir(layout.judges_dir)
    assert (paths.labels, paths.label_log, paths.runs, paths.cache, paths.lock) == (
        layout.judge_labels, layout.judge_label_log, layout.judge_runs, layout.judge_cache, layout.judge_lock)


def test_torn_last_log_line_is_skipped_by_readers_and_cut_by_the_next_run(tmp_path) -> None:
    units = _answer_units(3)
    _aggarwal_run(tmp_path, units)
    log = tmp_path / "label_log.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    torn = b"".join(lines[:2]) + lines[2][:40]  # the kill landed mid-write, before the table was rebuilt
    log.write_bytes(torn)
    (tmp_path / "labels.jsonl").unlink()
    table, rows = read_label_rows(log)
    assert (len(table), rows) == (2, 2)
    assert log.read_bytes() == torn  # a reader never cuts: a run may be appending
    stats = _aggarwal_run(tmp_path, units).judges[0]
    assert (stats.already_done, stats.calls) == (2, 1)
    assert read_label_rows(log)[1] == 3 and log.read_bytes().endswith(b"\n")
    assert len(read_labels(tmp_path / "labels.jsonl")) == 3


def test_the_table_has_one_row_per_key_the_last_logged(tmp_path) -> None:
    units = _answer_units(2, "d")
    _aggarwal_run(tmp_path, units)
    log = tmp_path / "label_log.jsonl"
    first = read_label_rows(log)[0][(units[0].unit_id, "rule:aggarwal", 0)]
    replaced = first.model_copy(update={"label": "decline", "raw_output": "edited"})
    log.write_bytes(log.read_bytes() + replaced.model_dump_json().encode() + b"\n")  # a later row, same key
    assert read_label_rows(log)[1] == 3
    assert _aggarwal_run(tmp_path, units).judges[0].already_done == 2
    table, rows = read_label_rows(tmp_path / "labels.jsonl")
    assert rows == 2 and table[(units[0].unit_id, "rule:aggarwal", 0)].raw_output == "edited"
    lines = (tmp_path / "labels.jsonl").read_text().splitlines()
    keys = [(json.loads(line)["unit_id"], json.loads(line)["judge"]) for line in lines]
    assert keys == sorted(keys)


def test_a_table_written_before_the_log_existed_keeps_its_rows(tmp_path) -> None:
    units = _answer_units(3, "old")
    _aggarwal_run(tmp_path, units)
    (tmp_path / "label_log.jsonl").unlink()
    labels = tmp_path / "labels.jsonl"
    lines = labels.read_text().splitlines(keepends=True)
    labels.write_text(lines[0] + lines[0] + lines[1] + lines[2][:30])  # the old writer's repeated key and torn line
    stats = _aggarwal_run(tmp_path, units).judges[0]
    assert (stats.already_done, stats.calls) == (2, 1)
    table, rows = read_label_rows(labels)
    assert rows == len(table) == 3


def test_temporaries_left_by_a_killed_rewrite_are_removed(tmp_path) -> None:
    units = _answer_units(2, "tmp")
    _aggarwal_run(tmp_path, units)
    stale = [tmp_path / ".labels.jsonl.k1ll3d.tmp", tmp_path / "labels.jsonl.tmp"]
    for path in stale:
        path.write_text("half a table")
    _aggarwal_run(tmp_path, units)
    assert not any(path.exists() for path in stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.sqlite", "label_log.jsonl", "labels.jsonl", "runs.jsonl"]


def test_a_foreign_row_names_its_line(tmp_path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"unit_id": "u_1"}\n')
    with pytest.raises(InputError, match="labels.jsonl:1: not a JudgeLabel row"):
        read_labels(labels)


def test_unit_file_errors_name_line_and_field(tmp_path) -> None:
    path = tmp_path / "units.jsonl"
    good = response_unit("ok", "fine")
    path.write_text(good.model_dump_json() + "\nnot json\n" + '{"unit_id": "u_2", "trajectory_id": "t", "kind": "essay", "text": "x"}\n')
    with pytest.raises(InputError) as error:
        read_units(path)
    message = str(error.value)
    assert "units.jsonl:2: not JSON" in message and "units.jsonl:3: field kind" in message
    path.write_text(good.model_dump_json() + "\n" + good.model_dump_json() + "\n")
    with pytest.raises(InputError, match="repeated unit_id"):
        read_units(path)
    with pytest.raises(InputError, match="not found"):
        read_units(tmp_path / "missing.jsonl")


def test_a_run_stopped_by_an_error_leaves_a_table_of_what_it_logged(tmp_path) -> None:
    units = _answer_units(6, "stop")
    seen = []

    def stop_after_two(label) -> None:
        seen.append(label)
        if len(seen) == 2:
            raise OSError("No space left on device")  # mid-run

    judge = build_judge({"provider": "rule", "model": "aggarwal"})
    with pytest.raises(OSError, match="No space"):
        run_judges(units, [judge], StudyPaths.in_dir(tmp_path), on_label=stop_after_two)
    table, rows = read_label_rows(tmp_path / "labels.jsonl")
    logged = read_labels(tmp_path / "label_log.jsonl")
    assert 2 <= rows == len(table) == len(logged) and table == logged  # (calls already in flight finish)
    assert _aggarwal_run(tmp_path, units).judges[0].already_done == rows
    assert len(read_labels(tmp_path / "labels.jsonl")) == 6
