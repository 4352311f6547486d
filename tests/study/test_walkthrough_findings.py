"""What walking the README's walkthroughs as a new user found, each through the CLI as a person meets it."""

from __future__ import annotations

from tests.study.helpers import REPO, accord

POLICY = REPO / "data" / "policies" / "screening.toml"


def test_the_gate_says_why_there_is_no_operating_characteristic_when_people_never_say_yes(tmp_path, capsys):
    """Found walking README walkthrough 2 on the demo: the human majority said "no" on every escalate unit and the
    gate printed the planner's parameter error ("positive_rate=0.0: expected a rate strictly between 0 and 1")."""
    rows = ["unit,rater,label,trajectory"]
    for i in range(30):  # three annotators say no everywhere; the judge says yes on every third unit
        rows += [f"u{i},{a},no,t{i // 3}" for a in ("ann_1", "ann_2", "ann_3")]
        rows.append(f"u{i},judge_a,{'yes' if i % 3 == 0 else 'no'},t{i // 3}")
    table = tmp_path / "panel.csv"
    table.write_text("\n".join(rows) + "\n")
    study = tmp_path / "study"
    code, _, err = accord(capsys, "import", "table", str(table), "--study", str(study), "--unit-column", "unit",
                          "--cluster-column", "trajectory", "--kind", "identify_turn", "--rater-column", "rater",
                          "--label-column", "label", "--judges", "judge_a")
    assert code == 0, err
    code, out, err = accord(capsys, "gate", str(study), "--policy", str(POLICY))
    assert code == 1, err
    assert ("operating characteristic: the human majority gives every unit the same label ('yes' on 0% of 30 "
            "units): the planner needs both labels") in out
    assert "positive_rate" not in out
