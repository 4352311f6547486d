"""The labels table file: torn last lines, repeated keys, bad rows and bad unit files."""

from __future__ import annotations

import pytest

from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_label_rows, read_labels, read_units
from samples.errors import InputError

from tests.judges.units import response_unit


def _aggarwal_run(tmp_path, units):
    return run_judges(units, [build_judge({"provider": "rule", "model": "aggarwal"})], StudyPaths.in_dir(tmp_path))


def test_torn_last_line_is_cut_and_the_unit_relabelled(tmp_path) -> None:
    units = [response_unit(f"t{i}", "<answer>\nDECISION: ANSWER\n</answer>") for i in range(3)]
    _aggarwal_run(tmp_path, units)
    labels = tmp_path / "labels.jsonl"
    lines = labels.read_text().splitlines(keepends=True)
    labels.write_text("".join(lines[:2]) + lines[2][:40])  # the kill landed mid-write
    stats = _aggarwal_run(tmp_path, units).judges[0]
    assert (stats.already_done, stats.calls) == (2, 1)
    table, rows = read_label_rows(labels)
    assert rows == 3 and len(table) == 3


def test_repeated_keys_left_by_a_kill_are_compacted_by_the_next_run(tmp_path) -> None:
    units = [response_unit(f"d{i}", "<answer>\nDECISION: DECLINE\n</answer>") for i in range(2)]
    _aggarwal_run(tmp_path, units)
    labels = tmp_path / "labels.jsonl"
    first = labels.read_text().splitlines(keepends=True)[0]
    labels.write_text(labels.read_text() + first)  # a replacement row appended, rewrite never happened
    assert read_label_rows(labels)[1] == 3
    stats = _aggarwal_run(tmp_path, units).judges[0]
    assert stats.already_done == 2
    table, rows = read_label_rows(labels)
    assert rows == 2 and len(table) == 2


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
