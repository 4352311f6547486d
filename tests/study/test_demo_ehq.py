"""EHQ on the demo, end to end: the session's demo run (real local models answering real EHQ-3000 questions and
stating their confidence, the EHQ rule classifier as the judge, the simulated panel) has the EHQ document and the
report shows it. Every value is recomputed here from the run's own files with the `ehq` package's scorer and
confidence parser, scipy.stats and scikit-learn, not with accord's EHQ code.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _package_scores(labels: list[str], confidences: list[float | None]) -> dict:
    from ehq.evaluation.scoring import compute_ehq_scores

    records = [{"valid_for_ehq12": True, "valid_for_ehq3": c is not None, "parsed_confidence": c, "k": 0,
                "classification": {"label": label, "is_correct": label == "CONFIDENT_CORRECT"}}
               for label, c in zip(labels, confidences)]
    return compute_ehq_scores(records, weights={"ehq1": 0.30, "ehq2": 0.45, "ehq3": 0.25})


def _close(ours: float | None, theirs: float | None) -> bool:
    return (ours is None and theirs is None) or (ours is not None and theirs is not None
                                                 and ours == pytest.approx(theirs))


def test_demo_ehq_scores_reranking_and_both_resolutions(demo_study) -> None:
    from ehq.evaluation.confidence import parse_confidence
    from scipy.stats import rankdata
    from sklearn.metrics import cohen_kappa_score

    out = demo_study.output
    doc = json.loads((out / "ehq" / "ehq.json").read_text())
    assert doc["judge"] == "rule:ehq" and doc["simulated"] is True

    # The closed-book records as the models wrote them: the answer, the finish reason, the raw confidence text.
    source = {f"{r['model']}::{r['item_id']}": r for r in _rows(out / "sources" / "closed-book.jsonl")}
    units = {u["unit_id"]: u for u in _rows(out / "units.jsonl") if u["kind"] == "response"}
    assert units and all(source[u["trajectory_id"]]["confidence_prompt_version"] == "confidence-v2"
                         for u in units.values())
    judged = {r["unit_id"]: r["label"] for r in _rows(out / "judges" / "labels.jsonl")
              if r["judge"] == "rule:ehq" and r["unit_id"] in units and r["label"]}
    model = {u: units[u]["strata"]["backbone"] for u in units}
    confidence = {u: parse_confidence(source[units[u]["trajectory_id"]]["confidence"]) for u in units}
    # A response the model ended at its token budget is flagged (finish_reason 'length').
    for unit in units.values():
        if source[unit["trajectory_id"]]["finish_reason"] == "length":
            assert unit["truncation"] == "the model hit its token budget (finish_reason 'length')"

    # The human reference: the sampled response units' simulated labels, the plurality of three (ties excluded).
    key = {k["task_id"]: k["unit_id"] for k in _rows(out / "sealed" / "key.jsonl")}
    votes: dict[str, list[str]] = {}
    for row in _rows(out / "labels" / "human.jsonl"):
        if key[row["task_id"]] in units and row["label"] is not None:
            votes.setdefault(key[row["task_id"]], []).append(row["label"])
    resolved = {}
    for unit, given in votes.items():
        (top, count), *rest = Counter(given).most_common()
        if not rest or rest[0][1] < count:
            resolved[unit] = top
    common = sorted(u for u in resolved if u in judged)
    assert common

    by = {(m["model"], m["labels"]): m for m in doc["models"]}
    on_sample, human = {}, {}
    for which, chosen in (("judge", judged), ("judge_on_sample", {u: judged[u] for u in common}),
                          ("human_reference", {u: resolved[u] for u in common})):
        for name in sorted({model[u] for u in chosen}):
            ids = sorted(u for u in chosen if model[u] == name)
            expected = _package_scores([chosen[u] for u in ids], [confidence[u] for u in ids])
            got = by[(name, which)]
            assert got["n"] == len(ids) and got["n_calibration"] == expected["n_ehq3_calibration"]
            for ours, theirs in (("ehq1", "EHQ1"), ("ehq2", "EHQ2"), ("ehq3", "EHQ3"), ("composite", "EHQ")):
                assert _close(got[ours]["statistic"], expected[theirs]), (name, which, ours)
            flagged = sum(1 for u in ids if "truncation" in units[u])
            assert got["n_truncated"] == flagged and got["denominators"]["ehq1"] == {"n": len(ids), "truncated": flagged}
            assert (got["truncation_bounds"] is None) == (flagged == 0)
            if which == "judge_on_sample":
                on_sample[name] = expected
            elif which == "human_reference":
                human[name] = expected
    assert len(on_sample) == 2  # the demo's two local models

    # The re-ranking: two models rank (competition ranks, highest first) but give no correlation.
    for ours, theirs in (("ehq1", "EHQ1"), ("ehq2", "EHQ2")):
        r = doc["reranking"][ours]
        names = sorted(on_sample)
        ra = rankdata([-on_sample[m][theirs] for m in names], method="min")
        rh = rankdata([-human[m][theirs] for m in names], method="min")
        assert r["n_models"] == 2 and r["pearson"] is None and r["spearman"] is None
        assert r["undefined_reason"] == "2 models with both scores: ranks only, correlations need at least 3"
        assert r["ranks"] == {m: [int(a), int(h)] for m, a, h in zip(names, ra, rh)}
        assert r["max_rank_shift"] == int(max(abs(ra - rh)))

    # Agreement at both resolutions, from the declared mapping (restraint = ABSTAIN / HEDGE).
    coarse = {"ABSTAIN": "restraint", "HEDGE": "restraint", "CONFIDENT_CORRECT": "substantive",
              "CONFIDENT_WRONG": "substantive"}
    assert doc["coarse_mapping"] == coarse
    a, h = [judged[u] for u in common], [resolved[u] for u in common]
    for name, x, y in (("four_class", a, h), ("coarse", [coarse[v] for v in a], [coarse[v] for v in h])):
        got = doc["agreement"][name]
        assert got["n"] == len(common)
        assert got["percent_agreement"] == pytest.approx(sum(p == q for p, q in zip(x, y)) / len(x))
        if len(set(x) | set(y)) > 1 and got["cohen_kappa"] is not None:
            assert got["cohen_kappa"] == pytest.approx(cohen_kappa_score(x, y))

    # The report shows the EHQ tables, the re-ranking and both resolutions.
    markdown = (out / "report" / "report.md").read_text(encoding="utf-8")
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    for text in ("EHQ per model (judge rule:ehq", "Human re-ranking: scores from the judge vs from the human reference",
                 "2 models with both scores: ranks only, correlations need at least 3"):
        assert text in markdown and text in html
    four, two = doc["agreement"]["four_class"], doc["agreement"]["coarse"]
    assert f"four_class: agreement {four['percent_agreement']:.3f}" in markdown
    assert f"coarse: agreement {two['percent_agreement']:.3f}" in markdown
