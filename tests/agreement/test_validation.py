"""accord validate on a synthetic ISE study: pairs, disagreements, per-class report, weights, notes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import precision_recall_fscore_support

from agreement.study_io import labels_table, load_study
from agreement.validation import format_validation, validate_table
from apps.cli import main
from samples.errors import InputError
from samples.jsonl import write_jsonl
from samples.layout import StudyLayout
from tests.agreement.test_study_io import human_label, judge_label, write_ise_study


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """ISE study plus a second, lenient Identify judge (says yes on 30% of the units the first says no)."""
    root = tmp_path_factory.mktemp("validation")
    write_ise_study(root, unscored=5)
    rows = [json.loads(line) for line in (root / "judges" / "labels.jsonl").read_text().splitlines()]
    rng = np.random.default_rng(3)
    extra = []
    for row in rows:
        if row["judge"] == "identify@j":
            label = row["label"] if row["label"] == "yes" or rng.random() > 0.3 else "yes"
            extra.append(judge_label(row["unit_id"], "identify@lenient", label or "no"))
    write_jsonl(root / "judges" / "labels.jsonl", rows + extra)
    return root


def majority(table: pd.DataFrame) -> pd.Series:
    humans = table[table["source"] == "human"]
    counts = humans.groupby(["unit", "label"]).size().unstack(fill_value=0)
    top = counts.max(axis=1)
    tied = (counts.eq(top, axis=0)).sum(axis=1) > 1
    return counts.idxmax(axis=1)[~tied]


def test_judge_pairs_overall_and_by_setting_split_with_directional_disagreements(study):
    table = labels_table(load_study(study))
    result = validate_table(table[table["kind"] == "identify_trajectory"], tie_policy="exclude", n_resamples=300)
    section = result.section("identify_trajectory")
    pair = section.report.judge_pairs[0].pairs[0]
    a = table[table["rater"] == pair.rater_a].set_index("unit")["label"]
    b = table[table["rater"] == pair.rater_b].set_index("unit")["label"]
    both = a.notna() & b.reindex(a.index).notna()
    a, b = a[both], b.reindex(a.index)[both]
    counts = {(x, y): n for x, y, n in pair.disagreements()}
    assert counts.get(("no", "yes"), 0) == int(((a == "no") & (b == "yes")).sum())
    assert counts.get(("yes", "no"), 0) == int(((a == "yes") & (b == "no")).sum())
    assert pair.results["percent_agreement"].statistic == pytest.approx((a == b).mean())
    groups = {t.subgroup for t in section.subgroup_pairs}
    assert groups == {"setting=controlled", "split=conflict", "split=control"}


def test_per_class_report_matches_sklearn(study):
    table = labels_table(load_study(study))
    part = table[table["kind"] == "identify_trajectory"]
    result = validate_table(part, tie_policy="exclude", n_resamples=300)
    ref = next(r for r in result.section("identify_trajectory").report.references if r.rater == "identify@j")
    truth = majority(part)
    judge = part[part["rater"] == "identify@j"].set_index("unit")["label"].dropna()
    units = truth.index.intersection(judge.index)
    p, r, f, _ = precision_recall_fscore_support(truth[units], judge[units], labels=["yes", "no"], zero_division=0)
    got = {c.label: c for c in ref.per_class}
    assert [got["yes"].precision, got["no"].precision] == pytest.approx(p)
    assert [got["yes"].recall, got["no"].recall] == pytest.approx(r)
    assert [got["yes"].f1, got["no"].f1] == pytest.approx(f)


def test_unscored_counted_and_baselines_on_the_judges_units(study):
    table = labels_table(load_study(study))
    part = table[table["kind"] == "identify_trajectory"]
    result = validate_table(part, tie_policy="exclude", n_resamples=300)
    section = result.section("identify_trajectory")
    rows = part[part["rater"] == "identify@j"]
    assert section.unscored["identify@j"]["unscored"] == int(rows["label"].isna().sum())
    assert section.unscored["identify@j"]["reasons"] == {"wrong_format": int(rows["label"].isna().sum())}
    truth = majority(part)
    scored = rows[rows["label"].notna()]["unit"]
    n = int(truth.index.isin(set(scored)).sum())
    base = section.baselines["identify@j"]["always-negative"]
    assert base.agreement.n_units == n
    assert base.accuracy == pytest.approx((truth[truth.index.isin(set(scored))] == "no").mean())


def test_weighted_estimates_use_inclusion_probabilities(tmp_path):
    write_ise_study(tmp_path)
    key_path = tmp_path / "sealed" / "key.jsonl"
    keys = [json.loads(line) for line in key_path.read_text().splitlines()]
    for k in keys:  # conflict units were sampled at 0.8, control at 0.2
        k["inclusion_prob"] = 0.8 if k["strata"]["split"] == "conflict" else 0.2
    write_jsonl(key_path, keys)
    table = labels_table(load_study(tmp_path))
    part = table[table["kind"] == "escalate_final"]
    plain = validate_table(part, tie_policy="exclude", n_resamples=300)
    weighted = validate_table(part, tie_policy="exclude", n_resamples=300, weighted=True)
    truth = majority(part)
    judge = part[part["rater"] == "escalate@j"].set_index("unit")
    units = truth.index.intersection(judge["label"].dropna().index)
    agree = (truth[units] == judge.loc[units, "label"]).astype(float)
    w = judge.loc[units, "weight"]

    def pa(result):
        return result.sections[0].report.judges_vs_humans[0].vs_majority.results["percent_agreement"].statistic

    assert pa(plain) == pytest.approx(agree.mean())
    assert pa(weighted) == pytest.approx((agree * w).sum() / w.sum())
    assert "reweighted" in " ".join(weighted.notes)


def test_simulated_annotators_are_named_in_every_output(tmp_path, capsys):
    write_ise_study(tmp_path, backend="simulated")
    assert main(["validate", str(tmp_path), "--n-resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SIMULATED ANNOTATORS")
    saved = json.loads((tmp_path / "validation" / "validation.json").read_text())
    assert saved["simulated"] and "SIMULATED ANNOTATORS" in saved["notes"][0]


def test_cli_json_is_deterministic_and_errors_exit_2(study, capsys, tmp_path):
    assert main(["validate", str(study), "--n-resamples", "200", "--json"]) == 0
    first = capsys.readouterr().out
    assert main(["validate", str(study), "--n-resamples", "200", "--json"]) == 0
    assert capsys.readouterr().out == first
    body = json.loads(first)
    assert {s["kind"] for s in body["sections"]} == {"identify_trajectory", "escalate_final", "correctness"}
    assert any("no overall section" in note for note in body["notes"])
    assert main(["validate", str(tmp_path / "nothing")]) == 2
    assert main(["validate", str(study), "--tie-policy", "coin-flip"]) == 2
    assert "tie_policy" in capsys.readouterr().err


def test_overall_section_pools_kinds_of_one_scheme(study):
    table = labels_table(load_study(study))
    part = table[table["kind"] == "identify_trajectory"].copy()
    turns = part.copy()
    turns["kind"] = "identify_turn"  # the same labels presented as a second Identify kind
    turns["unit"] = turns["unit"] + "-turn"
    result = validate_table(pd.concat([part, turns]), tie_policy="exclude", n_resamples=200)
    overall = result.section("all")
    assert overall.n_units == 2 * result.section("identify_trajectory").n_units


def test_text_summary_mentions_baselines(study):
    table = labels_table(load_study(study))
    text = format_validation(validate_table(table[table["kind"] == "escalate_final"], tie_policy="exclude",
                                            n_resamples=200))
    assert "baseline always-negative" in text and "vs majority" in text


# Two coders (c1 in the coding app, c2 in Label Studio) on ten Escalate units, adjudications from the app:
#   unit  c1   c2   adjudicated  judge
#   u01   yes  yes  -            yes
#   u02   yes  yes  -            yes
#   u03   yes  yes  -            no
#   u04   no   no   -            no
#   u05   no   no   -            no
#   u06   no   no   yes          yes   (the adjudicator overrules an agreed label: "changed")
#   u07   yes  no   yes          yes   (tie resolved)
#   u08   yes  no   yes, then no yes   (tie resolved; the later adjudication counts: no)
#   u09   no   yes  no           no    (tie resolved)
#   u10   no   yes  -            yes   (still tied: excluded)
TWO_CODERS = {
    "u01": ("yes", "yes", None, "yes"), "u02": ("yes", "yes", None, "yes"), "u03": ("yes", "yes", None, "no"),
    "u04": ("no", "no", None, "no"), "u05": ("no", "no", None, "no"), "u06": ("no", "no", "yes", "yes"),
    "u07": ("yes", "no", "yes", "yes"), "u08": ("yes", "no", "no", "yes"), "u09": ("no", "yes", "no", "no"),
    "u10": ("no", "yes", None, "yes"),
}


def write_two_coder_study(root):
    layout = StudyLayout.of(root)
    key, app, ls, judge = [], [], [], []
    for i, (unit, (c1, c2, adjudicated, j)) in enumerate(TWO_CODERS.items()):
        task = f"t_{unit}"
        key.append(dict(task_id=task, unit_id=unit, trajectory_id=f"traj-{i}", kind="escalate_final",
                        strata=dict(agent="A", backbone="m", family="f", dataset="d", setting="controlled",
                                    split="none"), stratum="all", inclusion_prob=1.0))
        app.append(human_label(task, "c1", c1))
        ls.append(human_label(task, "c2", c2, backend="labelstudio"))
        if unit == "u08":  # an earlier adjudication by another adjudicator, superseded by the later one
            app.append(human_label(task, "judy", "yes", role="adjudication") | {"updated_at": "2026-11-28T00:00:00Z"})
        if adjudicated:
            app.append(human_label(task, "kim", adjudicated, role="adjudication"))
        judge.append(judge_label(unit, "esc@j", j))
    write_jsonl(layout.key, key)
    write_jsonl(layout.app_labels, app)
    write_jsonl(layout.labelstudio_labels, ls)
    write_jsonl(layout.judge_labels, judge)
    return root


def test_judge_vs_resolved_reference_matches_the_hand_derivation(tmp_path):
    study = load_study(write_two_coder_study(tmp_path))
    table = labels_table(study)
    section = validate_table(table, tie_policy="exclude", n_resamples=200).section("escalate_final")
    # Initial human-human agreement, independent labels only: c1 and c2 agree on 6 of 10 units; each says yes
    # on 5, so p_e = 0.5 and Cohen's kappa = (0.6 - 0.5) / 0.5 = 0.2 (an adjudicator counted as a rater would
    # change both).
    assert section.report.humans == ("c1", "c2")
    assert section.report.human_panel.mean_pairwise_agreement == pytest.approx(0.6)
    # Against the initial majority (u01-u06; u07-u10 tied and excluded): judge yes/no on reference yes
    # (u01-u03) = 2/1, on reference no (u04-u06) = 1/2: accuracy 4/6, both marginals 3/6, p_e = 0.5,
    # kappa = (4/6 - 1/2) / (1/2) = 1/3; yes: P 2/3, R 2/3.
    initial = section.versus("esc@j", "human_majority")
    assert initial.agreement.n_units == 6 and initial.accuracy == pytest.approx(4 / 6)
    assert initial.agreement.results["cohen_kappa"].statistic == pytest.approx(1 / 3)
    # Resolved reference: u01-u05 as the majority, u06 yes, u07 yes, u08 no (latest), u09 no, u10 excluded: 9 units.
    # Reference yes = u01, u02, u03, u06, u07: judge yes on 4 (u03 no) -> TP 4, FN 1.
    # Reference no = u04, u05, u08, u09: judge no on 3 (u08 yes) -> TN 3, FP 1.
    # accuracy 7/9; p_e = (5/9)(5/9) + (4/9)(4/9) = 41/81; kappa = (63/81 - 41/81) / (40/81) = 22/40 = 0.55.
    # yes: P 4/5, R 4/5, F1 0.8; no: P 3/4, R 3/4, F1 0.75.
    resolved = section.versus("esc@j", "resolved")
    assert resolved.reference == "resolved reference" and resolved.agreement.n_units == 9
    assert resolved.accuracy == pytest.approx(7 / 9)
    assert resolved.agreement.results["cohen_kappa"].statistic == pytest.approx(0.55)
    got = {c.label: (c.precision, c.recall, c.f1, c.support) for c in resolved.per_class}
    assert got["yes"] == pytest.approx((0.8, 0.8, 0.8, 5)) and got["no"] == pytest.approx((0.75, 0.75, 0.75, 4))
    ci = resolved.agreement.results["cohen_kappa"].confidence_interval(0.95, "percentile")
    lo, hi = ci.low, ci.high
    assert lo <= 0.55 <= hi and hi - lo > 0
    counts = section.adjudication
    assert (counts.n_adjudicated, counts.n_changed, counts.n_confirmed, counts.n_resolved_ties, counts.n_still_tied,
            counts.n_without_votes) == (4, 1, 0, 3, 1, 0)


def test_resolved_reference_in_the_document_the_text_and_the_gate(tmp_path, capsys):
    from agreement.validation import GateEvidence, reference_labels

    root = write_two_coder_study(tmp_path)
    table = labels_table(load_study(root))
    assert main(["validate", str(root), "--n-resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "adjudication: 4 units adjudicated (1 changed the majority, 0 confirmed it, 3 resolved a tie), 1 still tied" \
        in text and "per-class vs resolved reference (esc@j): accuracy 0.778" in text
    body = json.loads((root / "validation" / "validation.json").read_text())["sections"][0]
    assert body["adjudication"]["n_adjudicated"] == 4
    side = body["judges_vs_references"][0]
    assert side["judge"] == "esc@j"
    assert side["human_majority"]["results"]["cohen_kappa"]["statistic"] == pytest.approx(1 / 3)
    assert side["resolved"]["results"]["cohen_kappa"]["statistic"] == pytest.approx(0.55)
    assert body["resolved_references"][0]["reference"] == "resolved reference"
    evidence = GateEvidence(table, judge="esc@j", tie_policy="exclude", level=0.95, n_resamples=200, seed=1)
    assert evidence.agreement("cohen_kappa", "resolved").statistic == pytest.approx(0.55)
    assert evidence.agreement("cohen_kappa", "human_majority").statistic == pytest.approx(1 / 3)
    refs = {r: reference_labels(table, reference=r, tie_policy="exclude").set_index("unit")["label"].to_dict()
            for r in ("human_majority", "resolved")}
    assert refs["human_majority"] == {u: (c1 if c1 == c2 else None) for u, (c1, c2, _, _) in TWO_CODERS.items()}
    assert refs["resolved"] == {u: a or (c1 if c1 == c2 else None) for u, (c1, c2, a, _) in TWO_CODERS.items()}
    ties_to_yes = reference_labels(table, reference="resolved", tie_policy="positive").set_index("unit")["label"]
    assert ties_to_yes["u10"] == "yes" and ties_to_yes["u08"] == "no"  # the adjudication outranks the tie policy


def test_an_adjudicated_label_outside_the_scheme_names_its_row(tmp_path):
    root = write_two_coder_study(tmp_path)
    layout = StudyLayout.of(root)
    rows = layout.app_labels.read_text().splitlines()
    rows.append(json.dumps(human_label("t_u10", "kim", "maybe", role="adjudication")))
    layout.app_labels.write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError, match=rf"{layout.app_labels}:{len(rows)}: adjudicated label 'maybe' of unit 'u10'"):
        validate_table(labels_table(load_study(root)), tie_policy="exclude", n_resamples=200)


GATE_POLICY = """[policy]
name = "t"
description = "every criterion that needs people"
level = 0.95
tie_policy = "exclude"
n_resamples = 200
seed = 20261129

[[criteria]]
type = "agreement_floor"
coefficient = "cohen_kappa"
reference = "human_majority"
min_lower_bound = 0.2

[[criteria]]
type = "human_ceiling"
coefficient = "percent_agreement"
margin = 0.1

[[criteria]]
type = "alt_test"
scoring = "accuracy"
epsilon = 0.2
q = 0.05
min_humans_per_instance = 2
min_instances_per_human = 5
min_winning_rate = 0.5

[[criteria]]
type = "family_contrast"
positive = ["yes"]
max_abs_contrast = 0.5

[[criteria]]
type = "min_units_per_stratum"
min_units = 1
"""


@pytest.mark.parametrize("raters,reason", [
    (["ann1"], "needs a judge and at least two annotators (got 1)"),
    ([], "no human labels on the judge's units (kinds ['identify_trajectory'])"),
])
def test_gate_on_a_study_missing_labels_rejects_with_reasons(tmp_path, capsys, raters, reason):
    write_ise_study(tmp_path)
    layout = StudyLayout.of(tmp_path)
    rows = [json.loads(line) for line in layout.app_labels.read_text().splitlines()]
    layout.app_labels.unlink()
    if raters:  # the one annotator labelled in Label Studio only
        write_jsonl(layout.labelstudio_labels, [r | {"backend": "labelstudio"} for r in rows if r["annotator"] in raters])
    (tmp_path / "policy.toml").write_text(GATE_POLICY)
    code = main(["gate", str(tmp_path), "--policy", str(tmp_path / "policy.toml"), "--judge", "identify@j", "--json"])
    assert code == 1
    verdict = json.loads(capsys.readouterr().out)["judges"]["identify@j"]
    assert verdict["verdict"] == "REJECT"
    failed = {c["type"]: c["reason"] for c in verdict["criteria"] if not c["passed"]}
    assert reason in failed["human_ceiling"] and "alt_test" in failed
    if not raters:  # nothing against people is measurable, and each criterion says why
        assert set(failed) == {"agreement_floor", "human_ceiling", "alt_test", "family_contrast",
                               "min_units_per_stratum", "beats_baselines", "tracks_input"}
        assert all(r.startswith("cannot be measured") for r in failed.values())
        assert reason in failed["agreement_floor"] and reason in failed["alt_test"]


def test_a_gate_criterion_chooses_its_reference(tmp_path, capsys):
    root = write_two_coder_study(tmp_path)
    criterion = ('\n[[criteria]]\ntype = "agreement_floor"\ncoefficient = "cohen_kappa"\nreference = "{ref}"\n'
                 'min_lower_bound = -1\n')
    head = GATE_POLICY.split("\n[[criteria]]")[0]
    (tmp_path / "policy.toml").write_text(head + criterion.format(ref="human_majority") + criterion.format(ref="resolved"))
    assert main(["gate", str(root), "--policy", str(tmp_path / "policy.toml"), "--json"]) == 1  # 6 and 9 units are too small to pass (fewer than 100), yet measured
    criteria = json.loads(capsys.readouterr().out)["judges"]["esc@j"]["criteria"]
    assert [(c["name"], c["details"]["n_units"]) for c in criteria if c["type"] == "agreement_floor"] == [
        ("cohen_kappa vs human majority, lower bound", 6), ("cohen_kappa vs resolved, lower bound", 9)]
    assert [c["value"] for c in criteria if c["type"] == "agreement_floor"] == pytest.approx([1 / 3, 0.55])  # the hand derivation above


def test_a_kind_without_human_labels_is_named_not_fatal(study, tmp_path, capsys):
    table = labels_table(load_study(study))
    unlabelled = table[~((table["kind"] == "correctness") & (table["source"] == "human"))]
    result = validate_table(unlabelled, tie_policy="exclude", n_resamples=200)
    assert {s.kind for s in result.sections} == {"identify_trajectory", "escalate_final"}
    assert "kind correctness: no human labels, so its judges are not validated" in result.notes
    write_ise_study(tmp_path)
    StudyLayout.of(tmp_path).app_labels.unlink()
    assert main(["validate", str(tmp_path), "--n-resamples", "200"]) == 2
    assert "no human labels on the sampled units; human labels come from the coding app" in capsys.readouterr().err


def test_labels_imported_as_found_may_mix_numbers_and_text(tmp_path, capsys):
    """scheme "any" keeps labels as found: validation declares them (nominal), so 1, 2 and 'unsure' in one
    column are three categories, not a mix that load_labels refuses when nobody declared the categories."""
    table = tmp_path / "t.csv"
    table.write_text("item,a1,a2,gpt\ni1,1,2,1\ni2,unsure,2,2\ni3,2,2,unsure\ni4,1,1,1\n")
    study = tmp_path / "s"
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "item", "--kind",
                 "escalate_final", "--annotator-columns", "a1,a2", "--judge-columns", "gpt", "--scheme", "any"]) == 0
    capsys.readouterr()
    assert main(["validate", str(study), "--json"]) == 0
    sections = json.loads(capsys.readouterr().out)["sections"]
    assert [s["categories"] for s in sections] == [["1", "2", "unsure"]]


def test_agreement_split_by_codebook_version_equals_each_version_validated_alone(tmp_path, capsys):
    """Labels of the first half of the units (by task id) were given under codebook A, the rest under B.
    Each version's split must be exactly the validation of a study holding only that version's labels
    (a separate folder, its labels written without any codebook field), on the units they cover."""
    import shutil

    from agreement.study_io import jsonable

    root = tmp_path / "study"
    write_ise_study(root, per_cell=20)
    human_file = StudyLayout.of(root).app_labels
    rows = [json.loads(line) for line in human_file.read_text().splitlines()]
    tasks = sorted({row["task_id"] for row in rows})
    first_half = set(tasks[: len(tasks) // 2])
    version = {True: "a" * 64, False: "b" * 64}
    write_jsonl(human_file, [{**row, "codebook_sha256": version[row["task_id"] in first_half]} for row in rows])

    assert main(["validate", str(root), "--n-resamples", "200", "--by-codebook", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    by_hand = {v: sum(1 for row in rows if version[row["task_id"] in first_half] == v) for v in version.values()}
    assert body["codebook_versions"] == dict(sorted(by_hand.items(), key=lambda kv: (-kv[1], kv[0])))
    assert set(body["by_codebook"]) == set(version.values())
    for in_half, name in version.items():
        alone = tmp_path / f"only-{name[0]}"
        shutil.copytree(root, alone)
        kept = [row for row in rows if (row["task_id"] in first_half) == in_half]
        write_jsonl(StudyLayout.of(alone).app_labels, kept)
        table = labels_table(load_study(alone))
        covered = set(table.loc[table["source"] == "human", "unit"])
        expected = validate_table(table[table["unit"].isin(covered)], tie_policy="exclude", n_resamples=200)
        split = body["by_codebook"][name]
        assert (split["n_labels"], split["n_units"]) == (len(kept), len(covered))
        assert split["sections"] == jsonable(expected.to_dict()["sections"])
    # the whole-study numbers are unchanged by the split (the same as without --by-codebook)
    assert main(["validate", str(root), "--n-resamples", "200", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["sections"] == body["sections"] and "by_codebook" not in plain
    assert main(["validate", str(root), "--n-resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert f"codebook {'a' * 12}" in text and "--by-codebook validates each version" in text


def test_population_judge_pairs_count_every_judged_unit_not_only_the_sample(study, capsys):
    # Hand count straight from the files: identify units of units.jsonl where both identify judges gave a
    # label; identify@lenient only turns identify@j's "no" into "yes", so the one direction is no -> yes.
    units = {row["unit_id"]: row for row in map(json.loads, (study / "units.jsonl").read_text().splitlines())}
    labels: dict[str, dict[str, str]] = {}
    for row in map(json.loads, (study / "judges" / "labels.jsonl").read_text().splitlines()):
        if row["judge"] in ("identify@j", "identify@lenient") and row["label"] is not None:
            labels.setdefault(row["unit_id"], {})[row["judge"]] = row["label"]
    both = {u: v for u, v in labels.items() if len(v) == 2}
    sampled = set(load_study(study).key["unit_id"])
    assert len(both) > len(both.keys() & sampled)  # the population is larger than the human sample

    def hand(where):
        chosen = [v for u, v in both.items() if where(units[u])]
        flips = sum(v["identify@j"] == "no" and v["identify@lenient"] == "yes" for v in chosen)
        assert not any(v["identify@j"] == "yes" and v["identify@lenient"] == "no" for v in chosen)
        return len(chosen), flips

    assert main(["validate", str(study), "--n-resamples", "200", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    (population,) = [p for p in body["population_judge_pairs"] if p["kind"] == "identify_trajectory"]
    groups = {g["subgroup"]: g for g in population["groups"]}
    assert set(groups) == {None, "setting=controlled", "split=conflict", "split=control"}
    for subgroup, where in ((None, lambda u: True), ("split=conflict", lambda u: u["strata"]["split"] == "conflict"),
                            ("split=control", lambda u: u["strata"]["split"] == "control")):
        (pair,) = groups[subgroup]["pairs"]
        n, flips = hand(where)
        assert (pair["rater_a"], pair["rater_b"], pair["n_units"]) == ("identify@j", "identify@lenient", n)
        assert pair["disagreements"] == [{"a": "no", "b": "yes", "count": flips}]
        assert pair["results"]["percent_agreement"]["statistic"] == pytest.approx(1 - flips / n)
    # Kinds judged by one judge only have no judge-judge table.
    assert {p["kind"] for p in body["population_judge_pairs"]} == {"identify_trajectory"}
    assert main(["validate", str(study), "--n-resamples", "200"]) == 0
    assert "judge-judge over the population: identify_trajectory" in capsys.readouterr().out
    from agreement.documents import ValidationDocument, read_document
    from agreement.report import validation_tables

    tables, _ = validation_tables(read_document(ValidationDocument, StudyLayout.of(study)))
    (table,) = [t for t in tables if t.title == "Judge-judge agreement over the population: identify_trajectory"]
    n, flips = hand(lambda u: True)
    assert ["identify@j vs identify@lenient [all]", "directional disagreements", f"no->yes: {flips}", ""] in table.rows
