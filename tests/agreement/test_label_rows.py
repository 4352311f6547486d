"""Label rows outside the scheme are errors, not categories: a human row (any backend's file), an adjudication
or a judge row whose label the unit kind's scheme does not have stops validate, gate and audit with one line
naming the row's file:line, its unit, the label and the scheme's labels, before anything is written; an
unscored judge row is not a label and stays unscored."""

from __future__ import annotations

import json

import pytest

from agreement.study_io import labels_table, load_study
from apps.cli import main
from samples.errors import InputError
from samples.jsonl import write_jsonl
from samples.layout import StudyLayout
from tests.agreement.test_gate_baselines import HEAD
from tests.agreement.test_gate_schemes import mixed_study  # noqa: F401  (a fixture)
from tests.agreement.test_study_io import judge_label
from tests.agreement.test_validation import write_two_coder_study

SCHEME = "unit kind 'escalate_final''s scheme 'escalate' ['yes', 'no']"


def _rewrite(path, line: int, **fields) -> None:
    """Change fields of row ``line`` (1-based) of a JSONL file."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[line - 1].update(fields)
    write_jsonl(path, rows)


def _files(root) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _every_path_stops(root, tmp_path, capsys, expected: str, *, judge: str = "esc@j", positive: str = "yes") -> None:
    (tmp_path / "p.toml").write_text(HEAD + '\n[[criteria]]\ntype = "unscored_share"\nmax_share = 0.1\n')
    before = _files(root)
    capsys.readouterr()
    for args in (["validate", str(root)], ["gate", str(root), "--policy", str(tmp_path / "p.toml")],
                 ["audit", str(root), "--positive", positive, "--judge", judge]):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert expected in err, err
    assert _files(root) == before  # nothing written: no document, no history


@pytest.mark.parametrize("file, line, label", [("labels/labelstudio.jsonl", 3, "Yes"),  # a Label Studio pull, a typo
                                               ("labels/human.jsonl", 1, "maybe")])  # the coding app's export
def test_a_human_row_outside_the_scheme_names_its_row(tmp_path, capsys, file, line, label):
    root = write_two_coder_study(tmp_path / "s")
    _rewrite(root / file, line, label=label)
    unit = json.loads((root / file).read_text().splitlines()[line - 1])["task_id"].removeprefix("t_")
    _every_path_stops(root, tmp_path, capsys,
                      f"{root}/{file}:{line}: unit '{unit}': the human label '{label}' is not a label of {SCHEME}")


def test_a_judge_row_outside_the_scheme_names_its_row(tmp_path, capsys):
    root = write_two_coder_study(tmp_path / "s")
    layout = StudyLayout.of(root)
    _rewrite(layout.judge_labels, 4, label="NO")
    _rewrite(layout.judge_labels, 7, label="unsure")
    _every_path_stops(root, tmp_path, capsys, f"{root}/judges/labels.jsonl:4: unit 'u04': judge 'esc@j' label 'NO' is "
                                              f"not a label of {SCHEME} (and 1 more row(s))")


def test_an_adjudication_outside_the_scheme_names_its_row(tmp_path):
    root = write_two_coder_study(tmp_path / "s")
    layout = StudyLayout.of(root)
    rows = layout.app_labels.read_text().splitlines()
    line = next(i for i, r in enumerate(rows, 1) if json.loads(r)["role"] == "adjudication")
    _rewrite(layout.app_labels, line, label="YES")
    with pytest.raises(InputError, match=rf"{layout.app_labels}:{line}: adjudicated label 'YES' of unit 'u\d+' is not "
                                         rf"a label of unit kind 'escalate_final''s scheme 'escalate'"):
        labels_table(load_study(root))


def test_unscored_judge_rows_are_not_labels(tmp_path, capsys):
    """A judge row with no label keeps its reason and counts as unscored; it is never checked as a label."""
    root = write_two_coder_study(tmp_path / "s")
    layout = StudyLayout.of(root)
    rows = [json.loads(x) for x in layout.judge_labels.read_text().splitlines()]
    rows[4] = judge_label(rows[4]["unit_id"], "esc@j", None, reason="wrong_format: 'Maybe?'")
    write_jsonl(layout.judge_labels, rows)
    table = labels_table(load_study(root))
    unscored = table[(table["source"] == "judge") & table["label"].isna()]
    assert list(unscored["unscored_reason"]) == ["wrong_format: 'Maybe?'"]
    capsys.readouterr()
    assert main(["validate", str(root), "--n-resamples", "200", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["sections"][0]["unscored"]["esc@j"] == {"unscored": 1, "total": 10, "reasons": {"wrong_format": 1}}



def test_a_scheme_mismatch_stops_every_path_writing_nothing(mixed_study, tmp_path, capsys):  # noqa: F811
    """Judge in ANSWER/DECLINE, people in EHQ's classes, no [[label_map]] (tests/study/test_run_schemes.py:
    the same through `accord run`)."""
    _every_path_stops(mixed_study, tmp_path, capsys, "unit kind 'response': judge 'dec' labels in scheme 'decision'",
                      judge="dec", positive="DECLINE")


def test_score_refuses_a_judge_row_outside_the_scheme_on_an_unsampled_unit(tmp_path, capsys):
    """The score reads every judge row of the population, not only the sampled units: a "maybe" there is
    an error naming its row, never read as an unscored trajectory."""
    from tests.agreement.test_study_io import write_ise_study

    write_ise_study(tmp_path, per_cell=10)
    layout = StudyLayout.of(tmp_path)
    sampled = {json.loads(x)["unit_id"] for x in layout.key.read_text().splitlines()}
    rows = [json.loads(x) for x in layout.judge_labels.read_text().splitlines()]
    line = next(i for i, r in enumerate(rows, 1) if r["judge"] == "escalate@j" and r["unit_id"] not in sampled)
    _rewrite(layout.judge_labels, line, label="maybe")
    before = _files(tmp_path)
    capsys.readouterr()
    assert main(["score", str(tmp_path), "--identify-judge", "identify@j", "--escalate-judge", "escalate@j",
                 "--correctness-judge", "correct@j", "--force", "--n-resamples", "200"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert (f"{tmp_path}/judges/labels.jsonl:{line}: unit '{rows[line - 1]['unit_id']}': judge 'escalate@j' label "
            f"'maybe' is not a label of unit kind 'escalate_final''s scheme 'escalate' ['yes', 'no']") in err
    assert _files(tmp_path) == before
