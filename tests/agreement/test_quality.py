"""Annotator quality: leave-one-out agreement by hand, crowd-kit competences on a real panel, the gate's exclusion."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from agreement.gate import evaluate, format_verdict, load_policy
from agreement.quality import FlagRule, annotator_quality, median_seconds, unsure_share
from agreement.study_io import labels_table, load_study
from agreement.validation import GateEvidence
from apps.cli import main
from samples.errors import InputError
from tests.agreement.test_study_io import human_label, write_ise_study


def _table(labels: dict[str, str], raters: str = "ABC") -> pd.DataFrame:
    rows = [{"unit": u, "rater": r, "label": {"y": "yes", "n": "no"}[x], "cluster": u, "kind": "identify_trajectory",
             "source": "human"} for u, line in labels.items() for r, x in zip(raters, line)]
    return pd.DataFrame(rows)


def test_leave_one_out_kappa_and_ac1_by_hand():
    # Units x (A, B, C): u1 yyy, u2 yyy, u3 ynn, u4 nnn, u5 nnn.
    # A against the majority of B and C: A = y y y n n, majority = y y n n n (no ties).
    #   po = 4/5 = 0.8; A says yes 3/5, the majority 2/5; kappa pe = 0.6*0.4 + 0.4*0.6 = 0.48,
    #   kappa = (0.8 - 0.48) / (1 - 0.48) = 0.32 / 0.52 = 8/13.
    #   AC1: pi = (0.6 + 0.4) / 2 = 0.5, pe = 2 * 0.5 * 0.5 = 0.5, AC1 = (0.8 - 0.5) / 0.5 = 0.6.
    # B against the majority of A and C: u3 is tied (y, n) and excluded; on u1, u2, u4, u5 B = y y n n
    #   = the majority, so kappa = AC1 = 1 on 4 units. C likewise.
    section = annotator_quality(_table({"u1": "yyy", "u2": "yyy", "u3": "ynn", "u4": "nnn", "u5": "nnn"}),
                                tie_policy="exclude", n_resamples=200, with_competence=False)
    by = {a.annotator: a for a in section.annotators}
    assert by["A"].n_compared == 5 and by["B"].n_compared == 4 and by["C"].n_compared == 4
    assert by["A"].leave_one_out["cohen_kappa"].statistic == pytest.approx(8 / 13, abs=1e-12)
    assert by["A"].leave_one_out["gwet_ac1"].statistic == pytest.approx(0.6, abs=1e-12)
    for name in ("B", "C"):
        assert by[name].leave_one_out["cohen_kappa"].statistic == pytest.approx(1.0)
        assert by[name].leave_one_out["gwet_ac1"].statistic == pytest.approx(1.0)
    ci = by["A"].leave_one_out["gwet_ac1"].confidence_interval(0.95, "percentile")
    low, high = ci.low, ci.high
    assert low <= 0.6 <= high
    assert all(a.n_units == 5 for a in section.annotators)


def test_flag_rule_flags_on_evidence_and_says_why():
    labels = {f"u{i}": line for i, line in enumerate(["yyn", "nny", "yyn", "nny"] * 10)}  # C always disagrees
    rule = FlagRule(coefficient="gwet_ac1", min_upper_bound=0.5, unmeasurable="keep")
    section = annotator_quality(_table(labels), tie_policy="exclude", n_resamples=500, rule=rule,
                                with_competence=False)
    flagged = section.flagged()
    assert list(flagged) == ["C"] and "leave-one-out gwet_ac1" in flagged["C"] and "< 0.5" in flagged["C"]
    # Two annotators: each one's "others" is a single annotator; with one annotator nothing is measurable.
    lone = annotator_quality(_table({"u1": "y", "u2": "n"}, raters="A"), tie_policy="exclude", n_resamples=200,
                             rule=FlagRule(coefficient="gwet_ac1", min_upper_bound=0.5, unmeasurable="flag"))
    (only,) = lone.annotators
    assert only.flagged and "cannot be measured" in only.flag_reasons[0]
    assert math.isnan(only.dawid_skene.statistic) and "two annotators" in only.dawid_skene.undefined_reason


def test_flag_rule_is_validated_where_built():
    with pytest.raises(InputError, match="coefficient = 'fleiss_kappa'"):
        FlagRule(coefficient="fleiss_kappa", min_upper_bound=0.5, unmeasurable="keep")
    with pytest.raises(InputError, match=r"policy.toml \[quality\]: missing \['unmeasurable'\]"):
        FlagRule.from_table({"coefficient": "gwet_ac1", "min_upper_bound": 0.4}, "policy.toml [quality]")


def test_time_and_unsure_intervals():
    # Median of 1..10 is 5.5; at 95% the binomial(10, 1/2) order statistics give [x_(2), x_(9)] = [2, 9]
    # (P(X <= 1) = 11/1024 < 0.025 <= P(X <= 2) = 56/1024, so k = 2).
    time = median_seconds(list(range(1, 11)), 0.95)
    assert (time.statistic, time.ci_low, time.ci_high, time.n) == (5.5, 2.0, 9.0, 10)
    assert math.isnan(median_seconds([3.0, 4.0], 0.95).ci_low)  # too few labels for a 95% interval
    assert median_seconds([], 0.95).undefined_reason
    share = unsure_share(0, 20, 0.95)
    # Clopper-Pearson with no event: upper bound 1 - 0.025^(1/20).
    assert share.statistic == 0 and share.ci_high == pytest.approx(1 - 0.025 ** (1 / 20))


def _alttest_panel(shared, dataset: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    path = shared / "data" / "alttest" / dataset / "human_annotations.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    raw = json.loads(path.read_text())
    rows = [(str(item), str(annotator), str(label)) for annotator, labels in raw.items()
            for item, label in labels.items() if label is not None]
    direct = pd.DataFrame(rows, columns=["task", "worker", "label"])
    table = pd.DataFrame({"unit": direct["task"], "rater": direct["worker"], "label": direct["label"],
                          "cluster": direct["task"], "kind": "response", "source": "human"})
    return direct, table


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
@pytest.mark.slow  # crowd-kit fits: minutes of CPU (make test runs it, make test-fast does not)
def test_dawid_skene_and_mace_equal_crowdkit_run_directly(shared):
    pytest.importorskip("crowdkit", reason="crowd-kit is not installed: pip install 'accord[quality]'")
    from crowdkit.aggregation import MACE, DawidSkene

    direct, table = _alttest_panel(shared, "mtbench")
    section = annotator_quality(table, tie_policy="exclude", n_resamples=200, seed=11)
    # crowd-kit on the raw JSON rows in (task, worker) order, its own attributes read directly.
    rows = direct.sort_values(["task", "worker"]).reset_index(drop=True)
    ds = DawidSkene(n_iter=100).fit(rows)
    mace = MACE(random_state=11).fit(rows)
    workers = list(pd.factorize(rows["worker"])[1])
    assert {a.annotator for a in section.annotators} == set(workers) and len(workers) == 3
    for a in section.annotators:
        errors = ds.errors_.loc[a.annotator]
        expected_ds = sum(ds.priors_[k] * (errors.loc[k, k] if k in errors.index else 0.0) for k in ds.priors_.index)
        assert a.dawid_skene.statistic == pytest.approx(expected_ds, abs=1e-12)
        assert a.mace.statistic == pytest.approx(mace.spamming_[workers.index(a.annotator), 1], abs=1e-12)
        assert 0 < a.dawid_skene.statistic <= 1 and a.dawid_skene.n == int((direct["worker"] == a.annotator).sum())
        assert math.isnan(a.mace.confidence_interval().low)  # a fitted parameter has no sampling interval


BAD = "ann4"
POLICY = """[policy]
name = "ceiling"
description = "test: the human ceiling without flagged annotators"
level = 0.95
tie_policy = "exclude"
n_resamples = 300
seed = 20261129

[[criteria]]
type = "human_ceiling"
coefficient = "gwet_ac1"
margin = 0.1
{option}
{quality}"""
RULE = '[quality]\ncoefficient = "gwet_ac1"\nmin_upper_bound = 0.5\nunmeasurable = "keep"\n'


@pytest.fixture()
def noisy_study(tmp_path):
    """The ISE study plus a fourth annotator who labels every identify unit at random."""
    root = tmp_path / "noisy"
    write_ise_study(root, sample_share=0.6)
    rng = np.random.default_rng(3)
    key = [json.loads(line) for line in (root / "sealed" / "key.jsonl").read_text().splitlines()]
    with (root / "labels" / "human.jsonl").open("a") as handle:
        for entry in key:
            if entry["kind"] == "identify_trajectory":
                row = human_label(entry["task_id"], BAD, str(rng.choice(["yes", "no"])))
                handle.write(json.dumps(row) + "\n")
    return root


def _ceiling(study_root, policy_path):
    study = load_study(study_root)
    policy = load_policy(policy_path)
    s = policy.settings
    evidence = GateEvidence(labels_table(study), judge="identify@j", tie_policy=s["tie_policy"], level=s["level"],
                            n_resamples=s["n_resamples"], seed=s["seed"])
    verdict = evaluate(policy, evidence, fingerprints={}, simulated=False)
    return verdict, verdict.results[0]


def test_gate_leaves_flagged_annotators_out_of_the_human_ceiling(tmp_path, noisy_study):
    excluding = tmp_path / "excluding.toml"
    excluding.write_text(POLICY.format(option="exclude_flagged = true", quality=RULE))
    keeping = tmp_path / "keeping.toml"
    keeping.write_text(POLICY.format(option="", quality=RULE))
    verdict, result = _ceiling(noisy_study, excluding)
    excluded = result.details["excluded_annotators"]
    assert list(excluded) == [BAD] and "upper 95% bound" in excluded[BAD]
    text = format_verdict(verdict)
    assert f"left out: {BAD} (leave-one-out gwet_ac1" in text
    _, kept = _ceiling(noisy_study, keeping)
    assert "excluded_annotators" not in kept.details
    assert kept.details["human_mean"] < result.details["human_mean"]  # the random annotator lowered the ceiling
    # Reference: the same study with the flagged annotator's rows removed from the labels file.
    clean = tmp_path / "clean"
    write_ise_study(clean, sample_share=0.6)
    _, reference = _ceiling(clean, keeping)
    assert result.details["human_mean"] == pytest.approx(reference.details["human_mean"], abs=1e-12)
    assert result.details["judge_mean"] == pytest.approx(reference.details["judge_mean"], abs=1e-12)
    assert result.passed == reference.passed


def test_exclude_flagged_needs_a_quality_rule(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text(POLICY.format(option="exclude_flagged = true", quality=""))
    with pytest.raises(InputError, match=r"exclude_flagged = true but the policy has no \[quality\] table"):
        load_policy(path)
    path.write_text(POLICY.format(option="", quality="[quality]\ncoefficient = \"gwet_ac1\"\n"))
    with pytest.raises(InputError, match=r"\[quality\]: missing"):
        load_policy(path)


@pytest.mark.slow  # crowd-kit fits: minutes of CPU (make test runs it, make test-fast does not)
def test_quality_command_writes_the_document(tmp_path, noisy_study, capsys):
    from agreement.documents import QualityDocument, read_document

    policy_path = tmp_path / "policy.toml"
    policy_path.write_text(POLICY.format(option="exclude_flagged = true", quality=RULE))
    assert main(["quality", str(noisy_study), "--policy", str(policy_path)]) == 0
    out = capsys.readouterr().out
    assert f"{BAD}:" in out and "FLAGGED" in out
    doc = read_document(QualityDocument, noisy_study)
    assert doc is not None and doc.rule.min_upper_bound == 0.5 and doc.settings["n_resamples"] == 300
    assert list(doc.flagged()) == [BAD]
    kinds = [s.kind for s in doc.sections]
    assert kinds == sorted(kinds) and "identify_trajectory" in kinds
    section = next(s for s in doc.sections if s.kind == "identify_trajectory")
    assert {a.annotator for a in section.annotators} == {"ann1", "ann2", "ann3", BAD}
    assert main(["quality", str(noisy_study), "--policy", str(policy_path), "--tie-policy", "exclude"]) == 2


@pytest.mark.slow  # crowd-kit fits: minutes of CPU (make test runs it, make test-fast does not)
def test_report_shows_the_annotator_quality_table(tmp_path, noisy_study):
    from agreement.report import build_report, render

    policy_path = tmp_path / "policy.toml"
    policy_path.write_text(POLICY.format(option="exclude_flagged = true", quality=RULE))
    assert main(["validate", str(noisy_study), "--n-resamples", "200"]) == 0
    assert main(["quality", str(noisy_study), "--policy", str(policy_path)]) == 0
    content = build_report(noisy_study)
    (table,) = [t for t in content.tables if t.title == "Annotator quality"]
    flags = {(row[0], row[1]): row[-1] for row in table.rows}
    assert flags[("identify_trajectory", BAD)].startswith("FLAGGED: leave-one-out gwet_ac1")
    assert flags[("identify_trajectory", "ann1")] == ""
    assert "min_upper_bound" not in table.note and "upper bound below 0.5" in table.note
    html, md = render(content)
    assert "Annotator quality" in html and "Annotator quality" in md


def test_excluding_flagged_annotators_without_human_labels_fails_as_unmeasurable(tmp_path):
    root = tmp_path / "unlabelled"
    write_ise_study(root, sample_share=0.6)
    (root / "labels" / "human.jsonl").unlink()
    path = tmp_path / "policy.toml"
    path.write_text(POLICY.format(option="exclude_flagged = true", quality=RULE))
    _, result = _ceiling(root, path)
    assert not result.passed and "cannot be measured" in result.reason
    assert result.details["excluded_annotators"] == {} and "left out: none flagged" in result.threshold


def test_quality_table_note_without_a_rule_says_so_once():
    """Seen on the dashboard walking the README: with no [quality] table the note said "no flag rule" twice (the
    table's own sentence and the document's note)."""
    from agreement.documents import QualityDocument
    from agreement.quality import quality_document
    from agreement.report import annotator_quality_table

    doc = QualityDocument.model_validate(quality_document([], fingerprints={}, simulated=False, rule=None, policy=None,
                                                          settings={}))
    note = annotator_quality_table(doc).note
    assert note.count("no flag rule") == 1, note
    assert "so no annotator is flagged" in note and "Wilson score interval" in note
