"""EHQ in a study (`[ehq]`): per-model EHQ1/2/3, |S_m| and the composite from the EHQ rule judge over every
response and, on the sampled responses, from people's resolved labels; the human re-ranking and agreement at
both resolutions, in the EHQ document and the report.

Responses: the 120 template responses to real EHQ-3000 questions of data/labelstudio (written as a known class),
spread over four pretend models with a stated 0-100 confidence each; people (two annotators, through the
coding app's session API) label every sampled response as the class it was written as.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agreement.documents import EhqDocument, read_document
from agreement.ehq import ehq_scores, rerank
from apps.cli import main
from tests.study.helpers import REPO

MODELS = ("lab/alpha", "lab/beta", "lab/gamma", "lab/delta")
PLAN = """name = "ehq-models"
kinds = ["response"]
strata = ["backbone"]
allocation = "fixed"
n_per_stratum = 8
one_per_trajectory = false
"""
STUDY = """output = "out"
[study]
name = "ehq"
[[source]]
name = "responses"
adapter = "responses"
path = "responses.jsonl"
kinds = ["response"]
[sampling]
plan = "plan.toml"
[blinding]
annotators = ["ann-1", "ann-2"]
[annotation]
backend = "app"
[[judge]]
provider = "rule"
model = "ehq"
[ehq]
judge = "rule:ehq"
confidence_field = "confidence"
n_resamples = 200
[validation]
tie_policy = "exclude"
n_resamples = 200
level = 0.95
[gate]
policy = "{policy}"
"""


@pytest.fixture
def study_file(tmp_path) -> Path:
    rows = [json.loads(line) for line in (REPO / "data/labelstudio/responses.jsonl").read_text().splitlines()]
    with (tmp_path / "responses.jsonl").open("w") as out:
        for i, row in enumerate(rows):
            # The confidence an answerer would state: high on substantive answers, with a model-dependent offset.
            confident = row["written_as"].startswith("CONFIDENT")
            row.update(model=MODELS[i % 4], confidence=(85 if confident else 20) - 10 * (i % 4) + i % 7)
            out.write(json.dumps(row) + "\n")
    (tmp_path / "plan.toml").write_text(PLAN)
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(policy=REPO / "data/policies/screening.toml"))
    return path


def test_ehq_scores_and_the_human_reranking(study_file, capsys):
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store

    rows = [json.loads(line) for line in (study_file.parent / "responses.jsonl").read_text().splitlines()]
    written = {r["response"]: r["written_as"] for r in rows}
    assert main(["run", str(study_file), "--quiet"]) == 0  # waits for people
    root = study_file.parent / "out"
    store = Store.for_study(root)
    try:
        for name in ("ann-1", "ann-2"):
            session = AnnotatorSession(store, store.add_annotator(name))
            for task_id in session.order():
                session.submit(task_id, written[session.task(task_id).text], base_revision=0)
    finally:
        store.close()
    assert main(["run", str(study_file), "--quiet"]) in (0, 1)
    doc = read_document(EhqDocument, root)
    by = {(m.model, m.labels): m for m in doc.models}
    assert {m for m, _ in by} == set(MODELS) and {w for _, w in by} == {"judge", "judge_on_sample", "human_reference"}

    # Independent of the stage: the judge's labels and the responses' confidences, model by model.
    units = {u["unit_id"]: u for u in map(json.loads, (root / "units.jsonl").read_text().splitlines())}
    judged = {r["unit_id"]: r["label"] for r in map(json.loads, (root / "judges/labels.jsonl").read_text().splitlines())}
    confidence = {f"{r['model']}::{r['item_id']}": r["confidence"] / 100 for r in rows}
    for model in MODELS:
        ids = sorted(u for u in judged if units[u]["strata"]["backbone"] == model)
        hand = ehq_scores([judged[u] for u in ids], [confidence[units[u]["trajectory_id"]] for u in ids])
        got = by[(model, "judge")]
        assert (got.n, got.n_calibration) == (hand.n, hand.n_calibration) == (30, hand.n_calibration)
        assert got.ehq1.statistic == pytest.approx(hand.ehq1) and got.composite.statistic == pytest.approx(hand.composite)
        assert got.composite.ci_low <= got.composite.statistic <= got.composite.ci_high
        # People's labels are the written classes: the human reference's EHQ from them.
        sampled = [json.loads(line) for line in (root / "sample/sample.jsonl").read_text().splitlines()]
        mine = sorted((s for s in sampled if s["strata"]["backbone"] == model), key=lambda s: s["unit_id"])
        human = ehq_scores([written[s["text"]] for s in mine], [confidence[s["trajectory_id"]] for s in mine])
        assert by[(model, "human_reference")].ehq2.statistic == pytest.approx(human.ehq2)
        assert by[(model, "human_reference")].composite.statistic == pytest.approx(human.composite)
    expected = rerank({m: by[(m, "judge_on_sample")].composite.statistic for m in MODELS},
                      {m: by[(m, "human_reference")].composite.statistic for m in MODELS})
    assert doc.reranking["composite"]["max_rank_shift"] == expected.max_rank_shift
    assert doc.reranking["composite"]["spearman"] == pytest.approx(expected.spearman)
    four, two = doc.agreement["four_class"], doc.agreement["coarse"]
    assert four["n"] == two["n"] == 32 and two["percent_agreement"] >= four["percent_agreement"]
    html = (root / "report/report.html").read_text()
    assert "EHQ per model" in html and "Human re-ranking" in html
    # accord validate shows the same EHQ tables beside its own sections: every model's composite as the document has it.
    capsys.readouterr()
    assert main(["validate", str(root), "--n-resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert "EHQ per model" in printed and "Human re-ranking" in printed
    for model in MODELS:
        row = next(line for line in printed.splitlines() if line.startswith(model) and " judge " in f" {line} ")
        assert by[(model, "judge")].composite.statistic is None or f"{by[(model, 'judge')].composite.statistic:.3f}" in row
