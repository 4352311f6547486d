"""`accord run` stops on a scheme mismatch: the offline study (rule judges answering in the decision scheme,
people coding EHQ's four classes) without its [[label_map]] runs up to the people, and once they have labelled,
stops at validation with one line naming both schemes (exit 2), writing no validation, audit or verdict."""

from __future__ import annotations

from apps.study import load_study_file
from tests.study.helpers import REPO, accord, run_json, statuses
from tests.study.test_run_offline import PLAN, STUDY, _label_as_people


def test_run_stops_on_judge_and_people_in_different_schemes(tmp_path, shared, capsys) -> None:
    data = shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json"
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    unmapped = STUDY[:STUDY.index("[[label_map]]")]
    assert "label_map" not in unmapped
    study_file = tmp_path / "study.toml"
    study_file.write_text(unmapped.format(data=data, policy=REPO / "data" / "policies" / "screening.toml"),
                          encoding="utf-8")
    root = load_study_file(study_file).output

    code, result = run_json(capsys, str(study_file))
    assert code == 0 and statuses(result)["annotate"] == "waiting"
    _label_as_people(root)
    code, out, err = accord(capsys, "run", str(study_file))
    assert code == 2, (out, err)
    errors = [line for line in err.splitlines() if "error" in line]  # stderr also carries the stages' progress
    assert len(errors) == 1 and "Traceback" not in err, err
    assert err.splitlines()[-1] == errors[0] and errors[0].startswith("accord run: error: ")
    assert "[6/10] validate" in err  # it stopped where judge and human labels first meet
    assert "unit kind 'response': judge 'aggarwal-s" in errors[0] and "labels in scheme 'decision'" in errors[0]
    assert "the human labels are in scheme 'ehq4'" in errors[0] and "[[label_map]]" in errors[0]
    for written in ("validation/validation.json", "audit", "gate/verdict.json", "report"):
        assert not (root / written).exists(), written
