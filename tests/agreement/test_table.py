"""Loading labels tables: formats, conventions and one-line errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from agreement import RatingData, compute, load_labels
from samples.errors import InputError

ROWS = [
    # unit, rater, label, trajectory, weight
    ("u1", "ann", "yes", "t1", 2.0),
    ("u1", "bob", "yes", "t1", 2.0),
    ("u1", "judge", "no", "t1", 2.0),
    ("u2", "ann", "no", "t1", 1.0),
    ("u2", "bob", "", "t1", 1.0),  # unscored: carried as missing
    ("u2", "judge", "no", "t1", 1.0),
    ("u3", "ann", "yes", "t2", 4.0),
    ("u3", "judge", "yes", "t2", 4.0),
]


def write_csv(path, rows, header=("unit", "rater", "label", "trajectory", "weight")):
    lines = [",".join(header)] + [",".join(str(x) for x in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_jsonl(path, rows):
    with path.open("w") as handle:
        for unit, rater, label, trajectory, weight in rows:
            handle.write(json.dumps({"unit": unit, "rater": rater, "label": label or None, "trajectory": trajectory, "weight": weight}) + "\n")
    return path


def frame(rows):
    return pd.DataFrame(rows, columns=["unit", "rater", "label", "trajectory", "weight"]).replace({"label": {"": None}})


def expected_codes():
    # categories sorted: no=0, yes=1; raters in first-appearance order ann, bob, judge
    return np.array([[1, 1, 0], [0, -1, 0], [1, -1, 1]])


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet", "frame"])
def test_every_source_gives_the_same_table(tmp_path, kind):
    if kind == "csv":
        source = write_csv(tmp_path / "labels.csv", ROWS)
    elif kind == "jsonl":
        source = write_jsonl(tmp_path / "labels.jsonl", ROWS)
    elif kind == "parquet":
        source = tmp_path / "labels.parquet"
        frame(ROWS).to_parquet(source)
    else:
        source = frame(ROWS)
    data = load_labels(source, cluster="trajectory", weight="weight")
    assert data.raters == ("ann", "bob", "judge")
    assert data.categories == ("no", "yes")
    assert list(data.units) == ["u1", "u2", "u3"]
    np.testing.assert_array_equal(data.codes, expected_codes())
    assert list(data.clusters) == ["t1", "t1", "t2"]
    np.testing.assert_array_equal(data.unit_weights, [2.0, 1.0, 4.0])


def test_declared_categories_keep_order_and_unused_categories(tmp_path):
    source = write_csv(tmp_path / "labels.csv", ROWS)
    data = load_labels(source, categories=["yes", "no", "unsure"])
    assert data.categories == ("yes", "no", "unsure")
    assert data.codes[0].tolist() == [0, 0, 1]
    # Brennan-Prediger uses q = 3 declared categories: pe = 1/3 (refs README item 11).
    result = compute(data, ["brennan_prediger"], n_resamples=0)["brennan_prediger"]
    assert result.pe == pytest.approx(1 / 3)


def test_numeric_labels_sort_numerically_and_score_by_value(tmp_path):
    rows = [("a", "r1", "10", "t", 1), ("a", "r2", "2", "t", 1), ("b", "r1", "1", "t", 1), ("b", "r2", "2", "t", 1)]
    data = load_labels(write_csv(tmp_path / "n.csv", rows))
    assert data.categories == ("1", "2", "10")
    np.testing.assert_array_equal(data.category_scores, [1.0, 2.0, 10.0])


def test_declared_numeric_categories_match_csv_strings(tmp_path):
    rows = [("a", "r1", "1", "t", 1), ("a", "r2", "3", "t", 1)]
    data = load_labels(write_csv(tmp_path / "n.csv", rows), categories=[1, 2, 3])
    assert data.codes.tolist() == [[0, 2]]


def one_line_error(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def test_missing_column_is_named(tmp_path):
    source = write_csv(tmp_path / "labels.csv", ROWS, header=("unit", "annotator", "label", "trajectory", "weight"))
    with pytest.raises(InputError) as excinfo:
        load_labels(source)
    message = one_line_error(excinfo)
    assert "labels.csv" in message and "'rater'" in message and "annotator" in message


def test_missing_cluster_column_is_named(tmp_path):
    with pytest.raises(InputError, match="cluster column 'traj'"):
        load_labels(write_csv(tmp_path / "labels.csv", ROWS), cluster="traj")


def test_rater_labelling_a_unit_twice_names_unit_rater_and_lines(tmp_path):
    rows = ROWS + [("u2", "ann", "yes", "t1", 1.0)]
    with pytest.raises(InputError) as excinfo:
        load_labels(write_csv(tmp_path / "labels.csv", rows))
    message = one_line_error(excinfo)
    assert "'ann'" in message and "'u2'" in message and "twice" in message
    assert "lines 5 and 10" in message


def test_label_outside_declared_categories(tmp_path):
    with pytest.raises(InputError) as excinfo:
        load_labels(write_csv(tmp_path / "labels.csv", ROWS), categories=["yes", "unsure"])
    message = one_line_error(excinfo)
    assert "'no'" in message and "line 4" in message and "allowed" in message


def test_empty_table(tmp_path):
    source = write_csv(tmp_path / "labels.csv", [])
    with pytest.raises(InputError, match="empty"):
        load_labels(source)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        load_labels(empty)
    nothing = tmp_path / "nothing.csv"
    nothing.write_text("")
    with pytest.raises(InputError, match="empty"):
        load_labels(nothing)


def test_single_rater(tmp_path):
    rows = [row for row in ROWS if row[1] == "ann"]
    with pytest.raises(InputError) as excinfo:
        load_labels(write_csv(tmp_path / "labels.csv", rows))
    assert "at least two raters" in one_line_error(excinfo) and "'ann'" in str(excinfo.value)
    with pytest.raises(InputError, match="at least two raters"):
        RatingData.from_matrix([["a"], ["b"]])


def test_bad_json_line_and_missing_field_are_named(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"unit": "u1", "rater": "a", "label": "yes"}\n{not json}\n')
    with pytest.raises(InputError, match=r"line 2: invalid JSON"):
        load_labels(path)
    path.write_text('{"unit": "u1", "rater": "a", "label": "yes"}\n{"unit": "u1", "label": "no"}\n')
    with pytest.raises(InputError, match=r"line 2: missing rater field 'rater'"):
        load_labels(path)


def test_inconsistent_cluster_and_bad_weight(tmp_path):
    rows = [("u1", "a", "yes", "t1", 1), ("u1", "b", "yes", "t2", 1)]
    with pytest.raises(InputError, match=r"unit 'u1' has 'trajectory' 't1' at line 2 but 't2' at line 3"):
        load_labels(write_csv(tmp_path / "c.csv", rows), cluster="trajectory")
    rows = [("u1", "a", "yes", "t1", -1), ("u1", "b", "yes", "t1", -1)]
    with pytest.raises(InputError, match=r"line 2: 'weight' is '-1'; expected a number > 0"):
        load_labels(write_csv(tmp_path / "w.csv", rows), weight="weight")


def test_special_files_are_refused_by_type_not_called_missing(tmp_path):
    # Issue #23 re-probe: /dev/zero and a FIFO were reported as "no such file" (one line, but wrong).
    with pytest.raises(InputError, match="is a character device, not a regular file"):
        load_labels("/dev/zero")
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(InputError, match="is a named pipe"):
        load_labels(tmp_path / "pipe.csv")


def test_unsupported_file_type_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_labels(tmp_path / "absent.csv")
    other = tmp_path / "labels.txt"
    other.write_text("x")
    with pytest.raises(InputError, match="unsupported file type"):
        load_labels(other)


def test_from_matrix_missing_values_and_dataframe():
    matrix = [["a", None, "b"], [float("nan"), "b", ""], ["a", "a", "a"]]
    data = RatingData.from_matrix(matrix, raters=["x", "y", "z"], units=["p", "q", "r"])
    assert data.codes.tolist() == [[0, -1, 1], [-1, 1, -1], [0, 0, 0]]
    df = pd.DataFrame(matrix, columns=["x", "y", "z"], index=["p", "q", "r"])
    from_df = RatingData.from_matrix(df)
    assert from_df.raters == ("x", "y", "z") and list(from_df.units) == ["p", "q", "r"]
    np.testing.assert_array_equal(from_df.codes, data.codes)


def test_select_raters_and_units():
    data = RatingData.from_matrix([[1, 2, 1], [2, 2, None]], raters=["a", "b", "c"], clusters=["t", "s"])
    pair = data.select_raters(["c", "a"])
    assert pair.raters == ("c", "a") and pair.codes.tolist() == [[0, 0], [-1, 1]]
    first = data.select_units(np.array([True, False]))
    assert first.n_units == 1 and list(first.clusters) == ["t"]
    with pytest.raises(InputError, match="unknown rater 'zz'"):
        data.select_raters(["a", "zz"])
    with pytest.raises(InputError, match="expected 2 booleans"):
        data.select_units(np.array([True]))


def test_codes_are_read_only():
    data = RatingData.from_matrix([[1, 2], [2, 2]])
    with pytest.raises(ValueError):
        data.codes[0, 0] = 1


def test_reading_csv_does_not_import_pandas(tmp_path):
    source = write_csv(tmp_path / "labels.csv", ROWS)
    code = (
        "import sys; from agreement import load_labels, compute;"
        f"d = load_labels({str(source)!r}, cluster='trajectory');"
        "compute(d, n_resamples=100);"
        "print('pandas' in sys.modules, 'scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_large_csv_reader_matches_small_csv_reader(tmp_path, monkeypatch):
    """Files above the size threshold go through pyarrow; both readers must agree exactly."""
    import agreement.label_files as table

    source = write_csv(tmp_path / "labels.csv", ROWS)
    small = load_labels(source, cluster="trajectory", weight="weight")
    monkeypatch.setattr(table, "_ARROW_CSV_BYTES", 0)
    large = load_labels(source, cluster="trajectory", weight="weight")
    assert large.raters == small.raters and large.categories == small.categories
    np.testing.assert_array_equal(large.codes, small.codes)
    assert list(large.units) == list(small.units) and list(large.clusters) == list(small.clusters)
    np.testing.assert_array_equal(large.unit_weights, small.unit_weights)
    with pytest.raises(InputError, match="twice"):
        load_labels(write_csv(tmp_path / "dup.csv", ROWS + [("u1", "ann", "no", "t1", 2.0)]))
    bad = tmp_path / "bad.csv"
    bad.write_text("unit,rater,label\nu1,a,yes\nu1,b\n")
    with pytest.raises(InputError) as excinfo:
        load_labels(bad)
    assert "bad.csv" in one_line_error(excinfo)


@pytest.fixture(params=["csv module", "pyarrow"])
def csv_reader(request, monkeypatch):
    """Both CSV readers (files above the size threshold go through pyarrow) must refuse alike."""
    from agreement import label_files as table

    if request.param == "pyarrow":
        monkeypatch.setattr(table, "_ARROW_CSV_BYTES", 0)
    return request.param


def test_a_csv_byte_that_is_not_utf8_is_named_with_its_line_and_offset(tmp_path, csv_reader):
    path = tmp_path / "t.csv"
    path.write_bytes(b"unit,rater,label\nu1,r1,\xc3\xa9\nu1,r2,\xff\n")  # \xc3\xa9: a valid two-byte é
    # offset by hand: "unit,rater,label\n" is 17 bytes, "u1,r1,\xc3\xa9\n" 9, "u1,r2," 6 -> 32
    with pytest.raises(InputError) as excinfo:
        load_labels(path)
    assert one_line_error(excinfo) == f"{path}, line 3: not UTF-8 (invalid start byte: byte 0xff at offset 32)"


def test_a_multibyte_character_across_read_blocks_is_not_an_error(tmp_path):
    from agreement.label_files import _not_utf8

    path = tmp_path / "t.csv"
    path.write_bytes(b"a" * ((1 << 20) - 1) + "é".encode() + b"\n\xff")  # é's two bytes straddle the first block
    assert str(_not_utf8(path)) == f"{path}, line 2: not UTF-8 (invalid start byte: byte 0xff at offset {(1 << 20) + 2})"


@pytest.mark.parametrize("text", ['u2,r2,"no\n', 'u2,r2,"no\nu3,r1,yes\nu3,r2,yes\n'])
def test_an_unterminated_quote_is_refused_with_the_line_of_its_row(tmp_path, csv_reader, text):
    path = tmp_path / "t.csv"
    path.write_text("unit,rater,label\nu1,r1,yes\nu1,r2,no\nu2,r1,no\n" + text)
    with pytest.raises(InputError) as excinfo:
        load_labels(path)
    assert one_line_error(excinfo) == f"{path}, line 5: a quoted field is never closed (the file ends inside quotes)"


def test_quoted_fields_with_commas_newlines_and_doubled_quotes_still_read(tmp_path, csv_reader):
    path = tmp_path / "t.csv"
    path.write_text('unit,rater,label\n"u,1",r1,"say ""yes"""\n"u,1",r2,"multi\nline"\n')
    data = load_labels(path)
    assert list(data.units) == ["u,1"] and data.categories == ("multi\nline", 'say "yes"')


def test_a_jsonl_nan_label_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"unit": "u1", "rater": "r1", "label": "yes"}\n{"unit": "u1", "rater": "r2", "label": NaN}\n')
    with pytest.raises(InputError) as excinfo:
        load_labels(path)
    assert one_line_error(excinfo).startswith(f"{path}, line 2: invalid JSON (NaN is not a finite number")


def test_a_jsonl_line_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"unit": "u1", "rater": "r1", "label": "yes"}\n{"unit": "u1", "rater": "r2", "label": "\xff"}\n')
    with pytest.raises(InputError, match=r"line 2: not UTF-8"):
        load_labels(path)


MIXED = [("u1", "r1", 1), ("u1", "r2", "yes"), ("u2", "r1", "no"), ("u2", "r2", "no")]


def test_numbers_beside_text_in_one_label_column_are_refused_naming_both_rows(tmp_path, csv_reader):
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text("".join(json.dumps({"unit": u, "rater": r, "label": x}) + "\n" for u, r, x in MIXED))
    with pytest.raises(InputError) as excinfo:
        load_labels(jsonl)
    assert one_line_error(excinfo) == (f"{jsonl}: labels mix numbers and text (1 at line 1, 'yes' at line 2); "
                                       "give one kind of label, or declare the categories")
    likert = write_csv(tmp_path / "t.csv", [("u1", "a", 4), ("u1", "b", 5), ("u2", "a", "N/A"), ("u2", "b", 2)],
                       header=("unit", "rater", "label"))
    where = ("line 2", "line 4") if csv_reader == "csv module" else ("row 1", "row 3")  # pyarrow counts rows
    with pytest.raises(InputError, match=rf"labels mix numbers and text \('4' at {where[0]}, 'N/A' at {where[1]}\)"):
        load_labels(likert)
    # numpy makes the mixed list text ('1'), which still reads as a number
    with pytest.raises(InputError, match=r"labels mix numbers and text \('1' at row 1, column 'x', 'yes' at row 1, column 'y'\)"):
        RatingData.from_matrix([[1, "yes"], ["no", "no"]], raters=["x", "y"])


def test_declared_categories_decide_the_kinds_of_labels(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"unit": u, "rater": r, "label": x}) + "\n" for u, r, x in MIXED))
    data = load_labels(path, categories=["1", "yes", "no"])
    assert data.codes.tolist() == [[0, 1], [2, 2]]


def test_numeric_ordinal_labels_alone_keep_their_values(tmp_path, csv_reader):
    path = write_csv(tmp_path / "t.csv", [("u1", "a", 1), ("u1", "b", 10), ("u2", "a", 2), ("u2", "b", "")],
                     header=("unit", "rater", "label"))
    data = load_labels(path)
    assert data.categories == ("1", "2", "10")  # numeric order, not spelling order
    np.testing.assert_array_equal(data.category_scores, [1.0, 2.0, 10.0])
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text("".join(json.dumps({"unit": u, "rater": r, "label": x}) + "\n"
                             for u, r, x in [("u1", "a", 1), ("u1", "b", 2.5), ("u2", "a", 2), ("u2", "b", None)]))
    assert load_labels(jsonl).categories == (1, 2, 2.5)
