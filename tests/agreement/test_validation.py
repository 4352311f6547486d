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
from samples.jsonl import write_jsonl
from tests.agreement.test_study_io import judge_label, write_ise_study


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
