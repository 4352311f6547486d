"""`accord agree`: golden behaviour through apps.cli.main, --json content, one-line errors."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import pytest

from apps.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "data/examples/identify_panel.csv"
HUMANS = ("ann_1", "ann_2", "ann_3")


def _agree(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["agree", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _example_rows() -> dict[str, dict[str, str]]:
    """unit -> {rater: label} read with the csv module (empty label = unscored)."""
    table: dict[str, dict[str, str]] = defaultdict(dict)
    with EXAMPLE.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["label"]:
                table[row["unit"]][row["rater"]] = row["label"]
    return table


def test_demo_json_matches_a_count_of_the_csv(capsys):
    code, out, err = _agree(capsys, str(EXAMPLE), "--judge", "judge_a", "--judge", "judge_b",
                            "--cluster", "trajectory", "--bootstrap", "500", "--json")
    assert code == 0, err
    report = json.loads(out)
    rows = _example_rows()
    assert report["n_units"] == len(rows) == 60
    assert report["humans"] == list(HUMANS) and report["judges"] == ["judge_a", "judge_b"]
    assert report["missing_by_rater"] == {"ann_1": 0, "ann_2": 1, "ann_3": 1, "judge_a": 0, "judge_b": 1}

    # majority by hand: two humans who disagree on a unit tie; three never tie on yes/no
    majority, ties = {}, 0
    for unit, labels in rows.items():
        votes = [labels[h] for h in HUMANS if h in labels]
        yes = votes.count("yes")
        if yes * 2 == len(votes):
            ties += 1
        else:
            majority[unit] = "yes" if yes * 2 > len(votes) else "no"
    assert report["majority"]["n_ties"] == ties and report["majority"]["n_with_majority"] == len(majority)
    assert report["majority"]["tie_policy"] == "exclude"

    for versus in report["judges_vs_humans"]:
        judge = versus["judge"]
        shared = [u for u in majority if judge in rows[u]]
        raw = sum(rows[u][judge] == majority[u] for u in shared) / len(shared)
        result = versus["vs_majority"]["results"]["percent_agreement"]
        assert versus["vs_majority"]["n_units"] == len(shared)
        assert result["statistic"] == pytest.approx(raw, abs=1e-12)
        assert result["n_resamples"] == 500
        low, high = result["ci_percentile"]
        assert low <= raw <= high
        kappa = versus["vs_majority"]["results"]["cohen_kappa"]
        assert kappa["prevalence_index"] is not None and kappa["bias_index"] is not None
    pair = report["judge_pairs"][0]["pairs"][0]
    both = [u for u in rows if "judge_a" in rows[u] and "judge_b" in rows[u]]
    a_no_b_yes = sum(rows[u]["judge_a"] == "no" and rows[u]["judge_b"] == "yes" for u in both)
    a_yes_b_no = sum(rows[u]["judge_a"] == "yes" and rows[u]["judge_b"] == "no" for u in both)
    directional = {(d["a"], d["b"]): d["count"] for d in pair["disagreements"]}
    assert directional == {("no", "yes"): a_no_b_yes, ("yes", "no"): a_yes_b_no}
    assert pair["n_units"] == len(both) and pair["n_only_a"] == 1


def test_text_report_and_determinism(capsys):
    args = (str(EXAMPLE), "--judge", "judge_a", "--judge", "judge_b", "--cluster", "trajectory", "--bootstrap", "300")
    code, first, _ = _agree(capsys, *args)
    assert code == 0
    for heading in ("Human majority (tie policy exclude)", "Human vs human", "Judge vs humans",
                    "Judge vs judge (all units", "judge_a against human majority"):
        assert heading in first
    assert _agree(capsys, *args)[1] == first
    assert _agree(capsys, *args, "--seed", "7")[1] != first


def test_undefined_kappa_is_null_with_a_reason(tmp_path, capsys):
    table = tmp_path / "flat.csv"
    rows = ["unit,rater,label"] + [f"u{i},{r},yes" for i in range(6) for r in ("h1", "h2", "j1", "j2")]
    table.write_text("\n".join(rows) + "\n")
    code, out, err = _agree(capsys, str(table), "--judge", "j1", "--judge", "j2", "--bootstrap", "0", "--json")
    assert code == 0, err
    kappa = json.loads(out)["judge_pairs"][0]["pairs"][0]["results"]["cohen_kappa"]
    assert kappa["statistic"] is None and kappa["undefined_reason"]
    assert "null" in out and "NaN" not in out


def test_subgroups_and_named_reference(tmp_path, capsys):
    code, out, err = _agree(capsys, str(EXAMPLE), "--judge", "judge_a", "--judge", "judge_b", "--by", "trajectory",
                            "--reference", "ann_1", "--bootstrap", "0", "--json")
    assert code == 0, err
    report = json.loads(out)
    groups = [t for t in report["judge_pairs"] if t["subgroup"]]
    assert len(groups) == 20 and sum(t["n_units"] for t in groups) == 60
    assert {r["reference"] for r in report["references"]} == {"ann_1"}


def test_needs_adjudication_lists_the_tied_units(capsys):
    code, out, _ = _agree(capsys, str(EXAMPLE), "--judge", "judge_a", "--judge", "judge_b", "--bootstrap", "0",
                          "--tie-policy", "needs-adjudication")
    assert code == 0
    assert "needs adjudication: u_" in out and "await adjudication" in out


def _write(tmp_path: Path, text: str, name: str = "labels.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


BAD_INPUTS = [
    ("unit,judge,label\nu1,a,yes\n", (), "missing rater column 'rater'"),
    ("unit,rater,label\nu1,a,yes\nu1,b,no\nu1,a,no\n", (), "rater 'a' labels unit 'u1' twice"),
    ("unit,rater,label\nu1,a,yes\nu1,b,maybe\n", ("--categories", "yes", "no"), "'maybe'"),
    ("unit,rater,label\n", (), "empty"),
    ("unit,rater,label\nu1,a,yes\nu2,a,no\n", (), "at least two raters"),
    ("unit,rater,label\nu1,a,yes\nu1,b,no\n", ("--judge", "zed"), "--judge zed"),
    ("unit,rater,label\nu1,a,yes\nu1,b,no\n", ("--tie-policy", "coin"), "tie_policy='coin'"),
    ("unit,rater,label\nu1,a,yes\nu1,b,no\n", ("--bootstrap", "5"), "argument --bootstrap: 5: expected 100 to 1000000"),
    ("unit,rater,label\nu1,a,yes\nu1,b,no\n", ("--by", "split"), "'split'"),
]


@pytest.mark.parametrize(("text", "extra", "message"), BAD_INPUTS)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, text, extra, message):
    code, out, err = _agree(capsys, _write(tmp_path, text), *extra)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert message in err


def test_missing_file_exits_2(tmp_path, capsys):
    code, _, err = _agree(capsys, str(tmp_path / "nope.csv"))
    assert code == 2 and "nope.csv" in err and len(err.strip().splitlines()) == 1


def test_all_registered_coefficients_reach_the_cli(capsys):
    from sklearn.metrics import cohen_kappa_score

    from agreement.coefficients import COEFFICIENTS

    code, out, err = _agree(capsys, str(EXAMPLE), "--judge", "judge_a", "--judge", "judge_b", "--bootstrap", "0",
                            "--coefficients", "all", "--json")
    assert code == 0, err
    results = json.loads(out)["human_panel"]["results"]
    assert set(results) == set(COEFFICIENTS)
    # Two-rater coefficients on three annotators are undefined, with the reason, never 0.
    for name in ("cohen_kappa", "scott_pi"):
        assert results[name]["statistic"] is None and "2" in results[name]["undefined_reason"]
    # Light's kappa = mean pairwise Cohen's kappa over the units every annotator rated (sklearn).
    rows = [r for r in _example_rows().values() if all(h in r for h in HUMANS)]
    pairs = [(a, b) for i, a in enumerate(HUMANS) for b in HUMANS[i + 1:]]
    light = sum(cohen_kappa_score([r[a] for r in rows], [r[b] for r in rows]) for a, b in pairs) / 3
    assert results["light_kappa"]["statistic"] == pytest.approx(light, abs=1e-12)
    text_code, text, _ = _agree(capsys, str(EXAMPLE), "--judge", "judge_a", "--judge", "judge_b", "--bootstrap",
                                "0", "--coefficients", "conger_kappa,brennan_prediger,gwet_ac2")
    assert text_code == 0 and "Conger's kappa" in text and "Brennan-Prediger" in text and "Gwet's AC2" in text
    bad, _, message = _agree(capsys, str(EXAMPLE), "--coefficients", "nope")
    assert bad == 2 and "--coefficients nope" in message


def test_two_coders_get_cohens_kappa_in_the_human_panel(capsys):
    from sklearn.metrics import cohen_kappa_score

    code, out, err = _agree(capsys, str(EXAMPLE), "--judge", "judge_a", "--judge", "judge_b", "--judge", "ann_3",
                            "--bootstrap", "0", "--json")
    assert code == 0, err
    panel = json.loads(out)["human_panel"]
    assert panel["raters"] == ["ann_1", "ann_2"]
    rows = [r for r in _example_rows().values() if "ann_1" in r and "ann_2" in r]
    expected = cohen_kappa_score([r["ann_1"] for r in rows], [r["ann_2"] for r in rows])
    assert panel["results"]["cohen_kappa"]["statistic"] == pytest.approx(expected, abs=1e-12)
