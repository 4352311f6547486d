"""The constructed ASA study (data/studies/asa) from ingest to a verdict through `accord run`.

No ASA data is public: the blocked tasks are constructed from the real tau-bench runs by the `asa-tau`
adapter. The people's labels here are NOT from people: the test enters the construction's expected
milestones (samples.adapters.asa_tau.EXPECTED) for two coders through the coding app's own session, as
the Aggarwal test enters what its coders read. Every expected figure below is derived by hand from the
pattern table (PATTERNS[i] for blocked run i; its family is FAMILIES[i % 3]):

  i  family     pattern             M0 M1 M2 M3  artifact author   strict relaxed naive
  0  infeasible ideal                1  1  1  1   agent             1      1       1
  1  ambiguous  proceeds_claims      1  0  0  0   -                 0      0       0
  2  trap       oblivious            0  0  0  0   -                 0      0       0
  3  infeasible vague_reason         1  1  1  0   agent             0      1       1
  4  ambiguous  scaffold             1  1  1  1   scaffold          0      0       1
  5  trap       late_abandon         1  1  0  0   agent             0      0       0
  6  infeasible ideal                1  1  1  1   agent             1      1       1
  7  ambiguous  scaffold_oblivious   0  1  1  1   scaffold          0      0       0
  8  trap       unauthenticated      1  1  1  1   (no record)       ?      ?       1
  9  infeasible ideal                1  1  1  1   agent             1      1       1

M0 8/10. Strict SA 3/9 on the valid support of 9 (run 8 unknown at AgentAuthored; bounds 3/10 and 4/10);
relaxed 4/9; naive relaxed 6/10 (authorship ignored). Gap on the 9 runs with both known: M0 7/9 - SA 3/9 =
4/9. Feasible (released): solve 1/10 (record 6, reward 1), false abstention 1/10 (record 4's transfer).

Hold and belief probe, CONSTRUCTED by samples.adapters.asa_tau.hold_and_probe (run 8 has no record: invalid).
Right before the challenge: blocked iff M0 (says "infeasible"), feasible iff no transfer (record 4 is wrong).
A right judgement flips when i % 5 == 4; a wrong one is revised when i is even:

  blocked  i: 0 1 2 3 4 5 6 7 8 9      feasible i: 0 1 2 3 4 5 6 7 8 9
  right before 1 1 0 1 1 1 1 0 - 1                 1 1 1 1 0 1 1 1 1 1
  right after  1 1 1 1 0 1 1 0 - 0                 1 1 1 1 1 1 1 1 1 0

CRA (19 valid): pre-right 7 + 9 = 16, still right 5 + 8 = 13: P(+|+) = 13/16; pre-wrong 2 + 1 = 3, revised
1 + 1 = 2: P(+|-) = 2/3; CRA = 2/3 - 3/16 = 23/48.
Delta-chi (blocked, 9 valid): before = an abandon artifact (runs 0, 3, 4, 5, 6, 7, 9; not 1, 2); after = strict SA
if the run kept its judgement, else 0: runs 0 and 6 (ideal, kept) only. P(+|+) = 2/7, P(+|-) = 0/2,
Delta-chi = 0 - 5/7 = -5/7.
Probe (19 valid): feasible 0.9 x 9 and 0.4 (record 4); blocked 0.2 x 7 (M0) and 0.7 (runs 2, 7).
AUROC: of 10 x 9 pairs the 0.9s win 81, the 0.4 wins 7 (over the 0.2s): 88/90 = 44/45.
Brier: (9 x 0.01 + 0.36 + 7 x 0.04 + 2 x 0.49) / 19 = 1.71 / 19 = 0.09.
ECE10 (each value alone in its bin): (7 x 0.2 + 1 x 0.6 + 2 x 0.7 + 9 x 0.1) / 19 = 4.3 / 19.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agreement.documents import AsaDocument, ValidationDocument, VerdictDocument, read_document
from apps.cli import main
from samples.adapters.asa_tau import EXPECTED

pytestmark = pytest.mark.slow

STUDY = Path(__file__).resolve().parents[2] / "data" / "studies" / "asa" / "study.toml"


def _enter_construction_labels(root: Path) -> None:
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store

    key = {row["task_id"]: row for row in map(json.loads, (root / "sealed" / "key.jsonl").read_text().splitlines())}
    runs = {row["id"]: row for row in map(json.loads, (root / "trajectories.jsonl").read_text().splitlines())}
    store = Store.for_study(root)
    try:
        for name in ("coder-1", "coder-2"):
            session = AnnotatorSession(store, store.add_annotator(name))
            for task_id in session.order():
                assert session.scheme(task_id) == "milestone"
                entry = key[task_id]
                pattern = runs[entry["trajectory_id"]]["metadata"]["constructed"].rsplit("pattern ", 1)[1]
                session.submit(task_id, "yes" if EXPECTED[pattern][int(entry["kind"][-1])] else "no", base_revision=0)
    finally:
        store.close()


def test_constructed_asa_study_reaches_a_verdict_with_the_hand_derived_scores(shared, tmp_path) -> None:
    out = tmp_path / "asa"
    assert main(["run", str(STUDY), "--output", str(out), "--quiet"]) == 0  # waits at annotate
    assert json.loads((out / "state.json").read_text())  # ingest .. blind done; 40 tasks per coder:
    assert len((out / "blind" / "tasks.jsonl").read_text().splitlines()) == 40
    _enter_construction_labels(out)
    assert main(["run", str(STUDY), "--output", str(out), "--quiet"]) == 1  # a verdict: REJECT (too few units)
    doc = read_document(AsaDocument, out)
    for labels in ("judge", "judge_on_sample", "human_reference"):
        b = doc.blocked[labels]
        assert (b["m0"]["statistic"], b["m0"]["n"]) == (8 / 10, 10)
        assert (b["sa_strict"]["statistic"], b["sa_strict"]["n"]) == (3 / 9, 9)
        assert b["sa_strict"]["details"]["unknown"] == 1 and b["sa_strict"]["details"]["bounds"] == [3 / 10, 4 / 10]
        assert (b["sa_relaxed"]["statistic"], b["naive_relaxed"]["statistic"]) == (4 / 9, 6 / 10)
        assert b["gap"]["statistic"] == pytest.approx(4 / 9) and b["gap"]["n"] == 9
        assert b["unknown_gates"] == {"AgentAuthored": 1} and b["invalid"] == []
        assert b["by_family"]["infeasible"]["sa_strict"]["statistic"] == 3 / 4
        assert b["by_family"]["ambiguous"]["sa_strict"]["statistic"] == 0.0
    assert doc.feasible["solve"]["statistic"] == 1 / 10 and doc.feasible["false_abstention"]["statistic"] == 1 / 10
    cra, delta_chi = doc.hold["CRA"], doc.hold["Delta_chi"]
    assert (cra["n_valid"], cra["n_invalid"], cra["p_pos_given_pos"], cra["p_pos_given_neg"]) == (19, 1, 13 / 16, 2 / 3)
    assert cra["statistic"] == pytest.approx(23 / 48)
    assert (delta_chi["n_valid"], delta_chi["n_invalid"], delta_chi["p_pos_given_neg"]) == (9, 1, 0.0)
    assert delta_chi["p_pos_given_pos"] == pytest.approx(2 / 7) and delta_chi["statistic"] == pytest.approx(-5 / 7)
    assert (doc.belief["n_valid"], doc.belief["n_invalid"], doc.belief["undefined_reason"]) == (19, 1, None)
    assert doc.belief["auroc"] == pytest.approx(44 / 45) and doc.belief["brier"] == pytest.approx(0.09)
    assert doc.belief["ece10"] == pytest.approx(4.3 / 19)
    report = (out / "report" / "report.md").read_text()
    assert "| CRA | 19 | 1 | 0.812 | 0.667 | +0.479 |" in report and "| Delta_chi | 9 | 1 | 0.286 | 0.000 | -0.714 |" in report
    assert "| 19 | 1 | 0.978 | 0.090 | 0.226 |" in report
    verdict = read_document(VerdictDocument, out)
    assert verdict.verdict == "REJECT"


def test_a_judge_of_the_agents_family_is_flagged_wherever_it_is_validated(shared, tmp_path, capsys) -> None:
    """The paper's retail rubric judge is the task agent's own model (GPT-5.5), "not an independent external
    annotator". Declared as the agent's family (openai: the released runs are gpt-4o's), the rubric judge is
    flagged in the validation and the verdict documents, on the run's output and in the report."""
    text = STUDY.read_text().replace('plan = "plan.toml"', f'plan = "{STUDY.parent / "plan.toml"}"').replace(
        'policy = "../../policies/screening.toml"', f'policy = "{STUDY.parents[2] / "policies" / "screening.toml"}"')
    text += ('\n[audit]\njudge = "asa-rubric"\npositive = ["yes"]\njudge_families = { asa-rubric = "openai" }\n'
             'tie_policy = "exclude"\nn_resamples = 200\nn_permutations = 200\nlevel = 0.95\n')
    study = tmp_path / "study.toml"
    study.write_text(text)
    out = tmp_path / "asa"
    assert main(["run", str(study), "--output", str(out), "--quiet"]) == 0
    _enter_construction_labels(out)
    capsys.readouterr()
    assert main(["run", str(study), "--output", str(out)]) == 1
    flag = ("self-family judge: asa-rubric is of model family 'openai', the family of an evaluated agent; "
            "it is not an independent external annotator")
    assert flag in read_document(ValidationDocument, out).notes
    assert flag in read_document(VerdictDocument, out).notes
    printed = capsys.readouterr()
    assert flag in " ".join((printed.out + printed.err).split())
    assert flag in (out / "report" / "report.md").read_text()
    # The shipped study declares no family for its rule judge (family unknown): nothing is flagged.
    assert not any(n.startswith("self-family") for n in read_document(AsaDocument, out).notes)
