"""One interval per statistic (issue #25): the same judge pair on the same units gets the same interval in every
row of the report's agreement table, whichever subgroup row names those units."""

from __future__ import annotations

import json

import numpy as np

from agreement.documents import ValidationDocument, read_document
from agreement.report import build_report
from apps.cli import main
from samples.jsonl import write_jsonl
from tests.agreement.test_study_io import judge_label, write_ise_study


def test_two_identical_subsets_get_one_interval(tmp_path):
    """Every unit of the ISE study is setting=controlled, so [all] and [setting=controlled] are the same units;
    split=conflict and split=control partition them (different units, different intervals)."""
    root = tmp_path / "study"
    write_ise_study(root, unscored=5)
    rows = [json.loads(line) for line in (root / "judges" / "labels.jsonl").read_text().splitlines()]
    rng = np.random.default_rng(3)
    lenient = [judge_label(r["unit_id"], "identify@lenient", r["label"] if r["label"] == "yes" or rng.random() > 0.3
                           else "yes") for r in rows if r["judge"] == "identify@j"]
    write_jsonl(root / "judges" / "labels.jsonl", rows + lenient)
    assert main(["validate", str(root), "--n-resamples", "500"]) == 0
    section = next(s for s in read_document(ValidationDocument, root).sections if s.kind == "identify_trajectory")
    groups = {g.subgroup: g for g in (*section.judge_pairs, *section.subgroup_judge_pairs)}
    assert set(groups) == {None, "setting=controlled", "split=conflict", "split=control"}
    everyone, controlled = groups[None].pairs[0], groups["setting=controlled"].pairs[0]
    assert everyone.n_units == controlled.n_units == groups["split=conflict"].pairs[0].n_units + \
        groups["split=control"].pairs[0].n_units
    for name, result in everyone.results.items():
        same = controlled.results[name]
        assert (result.statistic, result.ci_low, result.ci_high) == (same.statistic, same.ci_low, same.ci_high), name
    table = next(t for t in build_report(root).tables if t.title == "Agreement: identify_trajectory")
    cells = {(row[0], row[1]): row[2] for row in table.rows}
    pair = "identify@j vs identify@lenient"
    for name in everyone.results:
        assert cells[(f"{pair} [all]", name)] == cells[(f"{pair} [setting=controlled]", name)], name
    assert cells[(f"{pair} [split=conflict]", "gwet_ac1")] != cells[(f"{pair} [split=control]", "gwet_ac1")]
