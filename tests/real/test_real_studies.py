"""The real studies shipped in data/studies/, run end to end as `accord run` runs them, on the shared data.

Each study starts from labels people made (no model is called): MAD (three MAST annotators
and the mast-lint judge), the nine alt-test datasets the paper reports (their human panels and
six LLM judges) and the MT-Bench self-preference audit. The figures are checked against values
published by the data's authors and against computations from the raw JSON written out here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from agreement.documents import PreferenceDocument, ValidationDocument, VerdictDocument, read_document
from apps.cli import main
from tests.agreement.test_alttest import PUBLISHED

# The real studies run whole (the alt-test's nine include crowd-kit fits: minutes of CPU): make test
# runs them, make test-fast does not.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STUDIES = REPO / "data" / "studies"


def _run(tmp: Path, study: Path) -> Path:
    """`accord run` on a shipped study file, into a scratch folder."""
    out = tmp / study.parent.name
    code = main(["run", str(study), "--output", str(out)])
    assert code in (0, 1), f"accord run {study} exited {code}"
    return out


@pytest.fixture(scope="module")
def mad_study(shared, tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("mad"), STUDIES / "mad" / "study.toml")


def test_mad_reproduces_the_published_kappa_and_is_rejected(mad_study, shared):
    traces = json.loads((shared / "data/mad_mast_lint/evals/raw_findings.json").read_text())
    items = [(votes, mode in t["report"]["modes_fired"]) for t in traces for mode, votes in t["gold"]["votes"].items()]
    assert len(items) == 184
    # Cohen's kappa of the judge against the 3-annotator majority, written out: po = share agreeing,
    # pe = p_judge_yes * p_majority_yes + p_judge_no * p_majority_no.
    majority = [sum(v) >= 2 for v, _ in items]
    judge = [fired for _, fired in items]
    po = sum(a == b for a, b in zip(judge, majority)) / 184
    pj, pm = sum(judge) / 184, sum(majority) / 184
    pe = pj * pm + (1 - pj) * (1 - pm)
    hand = (po - pe) / (1 - pe)
    assert round(hand, 3) == 0.248  # the mast-lint authors' published judge-vs-majority kappa
    doc = read_document(ValidationDocument, mad_study)
    (section,) = doc.sections
    (versus,) = section.judges_vs_humans
    assert math.isclose(versus.vs_majority.results["cohen_kappa"].statistic, hand, abs_tol=1e-12)
    verdict = read_document(VerdictDocument, mad_study)
    assert verdict.verdict == "REJECT"
    failed = {c.type for c in verdict.judges["mast-lint"].criteria if not c.passed}
    assert "agreement_floor" in failed


def test_mad_per_mode_agreement_matches_the_raw_votes(mad_study, shared):
    """Per failure mode: the judge-vs-majority percent agreement from accord's labels table equals the raw JSON's."""
    from agreement.study_io import labels_table, load_study

    traces = json.loads((shared / "data/mad_mast_lint/evals/raw_findings.json").read_text())
    expected: dict[str, list[bool]] = {}
    for t in traces:
        for mode, votes in t["gold"]["votes"].items():
            expected.setdefault(mode, []).append((sum(votes) >= 2) == (mode in t["report"]["modes_fired"]))
    table = labels_table(load_study(mad_study))
    human = table[table["source"] == "human"].groupby("unit")["label"].agg(lambda s: (s == "yes").sum() >= 2)
    judge = table[table["source"] == "judge"].set_index("unit")
    got: dict[str, list[bool]] = {}
    for unit, row in judge.iterrows():
        got.setdefault(row["mode"], []).append(bool(human[unit]) == (row["label"] == "yes"))
    assert {m: sum(v) / len(v) for m, v in got.items()} == {m: sum(v) / len(v) for m, v in expected.items()}


@pytest.fixture(scope="module")
def alttest_studies(shared, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("alttest")
    return {name: _run(base, STUDIES / "alttest" / name / "study.toml") for name in sorted(PUBLISHED)}


@pytest.mark.parametrize("dataset", sorted(PUBLISHED))
def test_alttest_verdicts_are_the_published_pass_fail(alttest_studies, dataset):
    scoring, epsilon, expected = PUBLISHED[dataset]
    verdict = read_document(VerdictDocument, alttest_studies[dataset])
    assert set(verdict.judges) == set(expected)
    for judge, (winning_rate, advantage) in expected.items():
        (criterion,) = verdict.judges[judge].criteria
        assert criterion.type == "alt_test"
        assert round(criterion.value, 2) == winning_rate, judge
        assert round(criterion.details["advantage_probability"], 2) == advantage, judge
        # The paper's pass rule: the judge wins against at least half of the annotators.
        assert verdict.judges[judge].verdict == ("ACCEPT" if winning_rate >= 0.5 else "REJECT"), judge


def test_real_data_gives_both_verdicts(alttest_studies):
    verdicts = {v for path in alttest_studies.values() for v in
                (j.verdict for j in read_document(VerdictDocument, path).judges.values())}
    assert verdicts == {"ACCEPT", "REJECT"}


@pytest.fixture(scope="module")
def mtbench_study(shared, tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("mtbench"), STUDIES / "mtbench-self-preference" / "study.toml")


FAMILIES = {"gpt-3.5-turbo": "openai", "gpt-4": "openai", "claude-v1": "anthropic", "llama-13b": "meta",
            "alpaca-13b": "meta", "vicuna-13b-v1.2": "meta"}


def test_mtbench_self_preference_matches_a_hand_computation(mtbench_study, shared):
    humans = json.loads((shared / "data/alttest/mtbench/human_annotations.json").read_text())
    llms = json.loads((shared / "data/alttest/mtbench/llm_annotations.json").read_text())
    share = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}
    doc = read_document(PreferenceDocument, mtbench_study)
    cells = {(c.judge, c.response_family): c for c in doc.cells}
    for judge in ("gpt-4o", "llama-31"):
        for family in ("openai", "meta", "anthropic"):
            judged, human = [], []
            for instance, label in llms[judge].items():
                _, a, b, _ = instance.split("__")
                if (FAMILIES[a] == family) == (FAMILIES[b] == family):
                    continue  # both or neither answer from the family
                votes = [r[instance] for r in humans.values() if instance in r]
                if not votes:
                    continue
                to_family = (lambda s: s) if FAMILIES[a] == family else (lambda s: 1 - s)
                judged.append(to_family(share[label]))
                human.append(to_family(sum(share[v] for v in votes) / len(votes)))
            cell = cells[(judge, family)]
            assert cell.n == len(judged)
            assert math.isclose(cell.judge_share, sum(judged) / len(judged), abs_tol=1e-12)
            assert math.isclose(cell.human_share, sum(human) / len(human), abs_tol=1e-12)
            assert math.isclose(cell.statistic, cell.judge_share - cell.human_share, abs_tol=1e-12)
            assert cell.ci_low <= cell.statistic <= cell.ci_high
            assert cell.self_family == ({"gpt-4o": "openai", "llama-31": "meta"}[judge] == family)


def test_the_report_shows_the_self_preference_matrix(mtbench_study):
    html = (mtbench_study / "report" / "report.html").read_text()
    assert "Pairwise self-preference: judge family x response family" in html and "self-family" in html


@pytest.mark.browser
def test_report_cards_and_ceiling_plot_are_on_the_first_screen(alttest_studies):
    """At 1400x900 every judge's card and the forest plot are visible without scrolling; the screenshot is kept."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    report = alttest_studies["wax"] / "report" / "report.html"
    artifacts = REPO / "out" / "test-artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(report.as_uri())
            cards = page.locator(".card")
            assert cards.count() == 6
            for i in range(6):
                box = cards.nth(i).bounding_box()
                assert box is not None and box["y"] + box["height"] <= 900, f"card {i} is below the first screen"
            assert page.locator(".card.ACCEPT").count() == 2 and page.locator(".card.REJECT").count() == 4
            plot = page.locator(".headline img").bounding_box()
            assert plot is not None and plot["y"] + plot["height"] <= 900 and plot["height"] > 150
            assert not page.locator("details").first.evaluate("d => d.open")  # the rest is folded
            page.screenshot(path=str(artifacts / "report-first-screen.png"))
        finally:
            browser.close()
