"""Acceptance gate: every criterion passes and fails on purpose, unmeasurable fails, exit codes, MAD end to end."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from agreement.audit import audit
from agreement.criteria import CRITERIA
from agreement.gate import ACCEPT, REJECT, evaluate, load_policy
from agreement.study_io import labels_table, load_study
from agreement.validation import GateEvidence
from apps.cli import main
from samples.canonical import file_sha256, sha256_hex
from samples.errors import InputError
from tests.agreement.test_audit import simulate
from tests.agreement.test_study_io import write_ise_study, write_mad_study

HEAD = """[policy]
name = "test"
description = "test policy"
level = 0.95
tie_policy = "exclude"
n_resamples = 300
seed = 20261129
"""


def own(pol):
    """The policy without its built-in criteria: fake evidence below measures only the policy's own one."""
    return replace(pol, criteria=pol.criteria[:1])


def policy(tmp_path: Path, *criteria: str, head: str = HEAD) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(head + "".join(f"\n[[criteria]]\n{c.strip()}\n" for c in criteria))
    return path


CRITERION = {
    "agreement_floor": 'type = "agreement_floor"\ncoefficient = "gwet_ac1"\nreference = "human_majority"\n'
                       'min_lower_bound = {x}',
    "human_ceiling": 'type = "human_ceiling"\ncoefficient = "percent_agreement"\nmargin = {x}',
    "alt_test": 'type = "alt_test"\nscoring = "accuracy"\nepsilon = {x}\nq = 0.05\nmin_humans_per_instance = 2\n'
                'min_instances_per_human = 30\nmin_winning_rate = 0.5',
    "unscored_share": 'type = "unscored_share"\nmax_share = {x}',
    "min_units_per_stratum": 'type = "min_units_per_stratum"\nmin_units = {x}',
}
# (value that passes, value that fails) on the good-judge study below.
SETTINGS = {"agreement_floor": (0.3, 0.99), "human_ceiling": (0.0, None), "alt_test": (0.2, None),
            "unscored_share": (0.2, 0.01), "min_units_per_stratum": (5, 1000)}


@pytest.fixture(scope="module")
def good_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("good")  # 127 validated units: above the intervals' MIN_UNITS (100)
    write_ise_study(root, judge_accuracy=0.97, human_accuracy=0.82, unscored=4, sample_share=0.8)
    return root


@pytest.fixture(scope="module")
def bad_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    write_ise_study(root, judge_accuracy=0.6, human_accuracy=0.95, sample_share=0.8)
    return root


def run_gate(study: Path, path: Path, judge: str = "identify@j"):
    table = labels_table(load_study(study))
    pol = load_policy(path)
    s = pol.settings
    evidence = GateEvidence(table, judge=judge, tie_policy=s["tie_policy"], level=s["level"],
                            n_resamples=s["n_resamples"], seed=s["seed"])
    return evaluate(pol, evidence, fingerprints={}, simulated=False)


@pytest.mark.parametrize("kind", sorted(SETTINGS))
def test_each_criterion_passes_and_fails_on_purpose(tmp_path, good_study, bad_study, kind):
    passing, failing = SETTINGS[kind]
    verdict = run_gate(good_study, policy(tmp_path, CRITERION[kind].format(x=passing)))
    assert verdict.verdict == ACCEPT, verdict.results
    if failing is None:  # the human ceiling and the alt-test fail with a judge worse than the humans
        verdict = run_gate(bad_study, policy(tmp_path, CRITERION[kind].format(x=passing)))
    else:
        verdict = run_gate(good_study, policy(tmp_path, CRITERION[kind].format(x=failing)))
    assert verdict.verdict == REJECT and not verdict.results[0].passed


class AuditEvidence:
    """Evidence whose family audit runs the real audit on constructed data (other methods unused)."""

    judge = "judge"
    level = 0.95

    def __init__(self, frame):
        self.frame = frame

    def family_audit(self, positive, *, reference):
        self.reference = reference
        return audit(self.frame, positive=positive, n_resamples=300)


@pytest.mark.parametrize("planted,bound,expected", [(0.0, 0.2, True), (0.7, 0.05, False)])
def test_family_contrast_passes_and_fails(tmp_path, planted, bound, expected):
    pol = load_policy(policy(tmp_path, f'type = "family_contrast"\npositive = ["yes"]\nmax_abs_contrast = {bound}\n'
                                       f'alpha = 0.05'))
    verdict = evaluate(own(pol), AuditEvidence(simulate(3, planted=planted)), fingerprints={}, simulated=False)
    assert verdict.accepted is expected


def test_samples_below_the_measured_minimum_are_too_small(tmp_path):
    # 89 validated units: below the 100 from which the chosen intervals covered (benchmarks/coverage.md).
    root = tmp_path / "small"
    write_ise_study(root, judge_accuracy=0.97, human_accuracy=0.82, sample_share=0.6)
    verdict = run_gate(root, policy(tmp_path, CRITERION["agreement_floor"].format(x=0.3),
                                    CRITERION["human_ceiling"].format(x=0.2)))
    for result in verdict.results:
        assert not result.passed and "89 units is too small" in result.reason and "needs >= 100" in result.reason
        assert np.isfinite(result.value)  # the estimate is still reported


def test_unmeasurable_criteria_fail(tmp_path, good_study):
    # One model family only: no contrast can be measured.
    one_family = simulate(1).assign(family="solo")
    pol = load_policy(policy(tmp_path, 'type = "family_contrast"\npositive = ["yes"]\nmax_abs_contrast = 0.1'))
    result = evaluate(own(pol), AuditEvidence(one_family), fingerprints={}, simulated=False).results[0]
    assert not result.passed and result.reason.startswith("cannot be measured")
    # Alt-test with more instances per human than anyone has: undefined, so it fails.
    text = CRITERION["alt_test"].format(x=0.2).replace("min_instances_per_human = 30",
                                                       "min_instances_per_human = 100000")
    result = run_gate(good_study, policy(tmp_path, text)).results[0]
    assert not result.passed and "cannot be measured" in result.reason


def test_single_annotator_makes_majority_criteria_unmeasurable(tmp_path, good_study):
    root = tmp_path / "one"
    write_ise_study(root, sample_share=0.6)
    rows = [json.loads(line) for line in (root / "labels" / "human.jsonl").read_text().splitlines()]
    (root / "labels" / "human.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows if r["annotator"] == "ann1"))
    verdict = run_gate(root, policy(tmp_path, CRITERION["human_ceiling"].format(x=0.0),
                                    CRITERION["alt_test"].format(x=0.2)))
    assert verdict.verdict == REJECT
    assert all(not r.passed and "cannot be measured" in r.reason for r in verdict.results)


@pytest.mark.parametrize("text,match", [
    ('type = "agreement_floor"\ncoefficient = "gwet_ac1"\nreference = "human_majority"', "missing parameter"),
    ('type = "nope"', "unknown criterion type 'nope'; known:"),
    ('type = "unscored_share"\nmax_share = 0.1\nextra = 1', "unknown parameter"),
    ('type = "unscored_share"\nmax_share = 3', "expected a number in \\[0, 1\\]"),
    ('type = "alt_test"\nscoring = "f1"', "'accuracy' or 'neg_rmse'"),
])
def test_policy_errors_name_file_and_criterion(tmp_path, text, match):
    path = policy(tmp_path, text)
    with pytest.raises(InputError, match=match) as error:
        load_policy(path)
    assert str(path) in str(error.value) and "criterion #1" in str(error.value)


def test_policy_without_criteria_or_head_is_rejected(tmp_path):
    with pytest.raises(InputError, match="no \\[\\[criteria\\]\\]"):
        load_policy(policy(tmp_path))
    with pytest.raises(InputError, match="missing \\[policy\\]"):
        load_policy(policy(tmp_path, CRITERION["unscored_share"].format(x=0.1), head=""))
    bad = tmp_path / "bad.toml"
    bad.write_text("[policy\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_policy(bad)


def test_shipped_policies_parse_and_are_documented(repo):
    readme = (repo / "data" / "policies" / "README.md").read_text()
    for path in sorted((repo / "data" / "policies").glob("*.toml")):
        pol = load_policy(path)
        assert path.name in readme and pol.criteria
    for kind in CRITERIA:
        assert f"`{kind}`" in readme


def test_cli_exit_codes_and_verdict_file(tmp_path, good_study, capsys):
    accept = policy(tmp_path, CRITERION["agreement_floor"].format(x=0.3))
    assert main(["gate", str(good_study), "--policy", str(accept), "--judge", "identify@j"]) == 0
    out = capsys.readouterr().out
    assert "ACCEPT: judge 'identify@j'" in out and "95% CI [" in out and "test: one-sided" in out
    assert re.search(r"operating characteristic: with \d+ units this policy accepts a judge of true gwet_ac1", out)
    verdict = json.loads((good_study / "gate" / "verdict.json").read_text())
    assert verdict["verdict"] == "ACCEPT"
    row = verdict["judges"]["identify@j"]["criteria"][0]
    assert {"test", "value", "ci_low", "ci_high", "ci_level", "ci_method", "threshold"} <= set(row)
    oc = verdict["judges"]["identify@j"]["operating_characteristic"]
    assert oc["units"] == row["details"]["n_units"] and len(oc["p_accept"]) == len(oc["true_agreement"])
    assert oc["sentence"].startswith(f"with {oc['units']} units this policy accepts a judge of true gwet_ac1")
    assert verdict["policy"]["content"] == accept.read_text()
    assert verdict["policy"]["sha256"] == sha256_hex(accept.read_text())
    for name, digest in verdict["fingerprints"].items():
        assert digest == file_sha256(good_study / name)
    reject = policy(tmp_path, CRITERION["agreement_floor"].format(x=0.99))
    assert main(["gate", str(good_study), "--policy", str(reject), "--judge", "identify@j", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "REJECT"
    assert main(["gate", str(good_study), "--policy", str(tmp_path / "missing.toml")]) == 2
    assert main(["gate", str(tmp_path / "no-study"), "--policy", str(accept)]) == 2
    assert main(["gate", str(good_study), "--policy", str(accept), "--judge", "nobody"]) == 2
    err = capsys.readouterr().err
    assert "nobody" in err and "Traceback" not in err


def test_mad_panel_validate_and_gate_end_to_end(tmp_path, shared, repo, capsys):
    write_mad_study(tmp_path, shared)
    assert main(["validate", str(tmp_path), "--n-resamples", "500", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    section = body["sections"][0]
    # Independent reference: the raw MAST votes, majority by hand, Fleiss' kappa by statsmodels.
    data = json.loads((shared / "data" / "mad_mast_lint" / "evals" / "raw_findings.json").read_text())
    votes, majority, judge = [], [], []
    for trace in data:
        fired = set(trace["report"]["modes_fired"])
        for mode, v in sorted(trace["gold"]["votes"].items()):
            votes.append([int(x) for x in v])
            majority.append(sum(v) >= 2)
            judge.append(mode in fired)
    kappa = fleiss_kappa(aggregate_raters(np.array(votes))[0])
    assert section["human_panel"]["results"]["fleiss_kappa"]["statistic"] == pytest.approx(kappa, abs=1e-12)
    raw = np.mean(np.array(majority) == np.array(judge))
    vs = section["judges_vs_humans"][0]["vs_majority"]["results"]["percent_agreement"]["statistic"]
    assert vs == pytest.approx(raw, abs=1e-12)
    assert set(section["baselines"]["mast-lint"]) == {"always-positive", "always-negative", "majority class (no)"}
    always_no = section["baselines"]["mast-lint"]["always-negative"]["results"]["percent_agreement"]["statistic"]
    assert always_no == pytest.approx(1 - np.mean(majority))
    code = main(["gate", str(tmp_path), "--policy", str(repo / "data" / "policies" / "strict.toml"), "--json"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 1 and verdict["verdict"] == "REJECT"
    criteria = {c["type"]: c for c in verdict["judges"]["mast-lint"]["criteria"]}
    assert not criteria["agreement_floor"]["passed"]  # AC1 0.55 [0.39, 0.68] is below 0.6
    assert criteria["family_contrast"]["reason"].startswith("cannot be measured")
    assert criteria["alt_test"]["value"] == 0.0  # the judge beats none of the three annotators
    assert criteria["unscored_share"]["passed"]


def biased_frame(biases_by_family: dict[str, list[float]], units: int = 100):
    """Per model ``units`` units; humans say yes on the first 30; the judge copies them and adds
    round(bias * units) extra yes on human-no units, so the model's bias (judge - human score) is exact."""
    rows = []
    for family, biases in biases_by_family.items():
        for index, b in enumerate(biases):
            extra = round(b * units)
            for u in range(units):
                human = u < 30
                rows.append(dict(unit=f"{family}{index}-{u}", cluster=f"{family}{index}-{u}",
                                 model=f"{family}{index}", family=family, human="yes" if human else "no",
                                 judge="yes" if human or 30 <= u < 30 + extra else "no"))
    return pd.DataFrame(rows)


def contrast_result(tmp_path, frame, bound, alpha=None, extra=""):
    text = f'type = "family_contrast"\npositive = ["yes"]\nmax_abs_contrast = {bound}\n{extra}'
    if alpha is not None:
        text += f"\nalpha = {alpha}"
    pol = load_policy(policy(tmp_path, text))
    return evaluate(own(pol), AuditEvidence(frame), fingerprints={}, simulated=False).results[0]


def test_family_contrast_equivalence_by_hand(tmp_path):
    # Family a biases [0.02, 0.00, 0.01], family b [0.01, 0.00, 0.02]: contrast 0.01 - 0.01 = 0.
    # Within-family sums of squares 0.0002 each, df = 6 - 2 = 4, pooled variance 0.0004 / 4 = 1e-4,
    # SE = sqrt(1e-4 (1/3 + 1/3)) = 0.0081650; t(0.975, 4) = 2.776445 -> half width 0.022670.
    # [-0.02267, 0.02267] lies inside [-0.05, 0.05]: equivalent, not significant -> PASS.
    result = contrast_result(tmp_path, biased_frame({"a": [0.02, 0.0, 0.01], "b": [0.01, 0.0, 0.02]}), 0.05)
    assert result.passed, result
    assert result.value == pytest.approx(0.0, abs=1e-12)
    assert (result.ci_low, result.ci_high) == pytest.approx((-0.022670, 0.022670), abs=1e-6)
    assert result.ci_level == 0.95 and "pooled" in result.ci_method and "TOST" in result.test
    # The same interval is not inside [-0.02, 0.02]: never shown equivalent -> FAIL (p = 1 does not rescue it).
    narrow = contrast_result(tmp_path, biased_frame({"a": [0.02, 0.0, 0.01], "b": [0.01, 0.0, 0.02]}), 0.02,
                             alpha=0.05)
    assert not narrow.passed and "not inside the bound" in narrow.reason


def test_family_contrast_significant_inside_the_bound_is_a_finding(tmp_path):
    # a [0.05, 0.06, 0.05], b [0.00, 0.01, 0.00]: contrast 0.16/3 - 0.01/3 = 0.05. SS per family:
    # deviations (-1/300, 2/300, -1/300) -> 6/90000 = 6.667e-5; pooled 1.3333e-4 / 4 = 3.333e-5;
    # SE = sqrt(3.333e-5 * 2/3) = 0.0047140; half = 2.776445 * SE = 0.013088 -> [0.03691, 0.06309]:
    # inside [-0.1, 0.1] but excluding 0: detectable, below the tolerance -> PASS with a finding.
    # Every model's human score is 0.30, so the adjusted contrast (the default) equals the raw one.
    frame = biased_frame({"a": [0.05, 0.06, 0.05], "b": [0.0, 0.01, 0.0]})
    result = contrast_result(tmp_path, frame, 0.1)
    assert result.passed and result.reason.startswith("finding: a: +0.050 [+0.037, +0.063] detectable, below "
                                                      "the policy's tolerance of 0.1")
    assert result.details["contrasts"]["a"]["ci_low"] == pytest.approx(0.036912, abs=1e-5)
    assert result.details["contrasts"]["a"]["ci_high"] == pytest.approx(0.063088, abs=1e-5)
    assert result.details["contrasts"]["a"]["equivalent"] and result.details["contrasts"]["a"]["significant"]
    assert result.details["contrast"] == "adjusted" and result.details["reference"] == "resolved"
    # A policy that wants every detectable contrast to fail says so.
    strict = contrast_result(tmp_path, frame, 0.1, extra="fail_on_significant = true")
    assert not strict.passed and "significant (fail_on_significant)" in strict.reason


def test_family_contrast_two_models_is_unmeasurable(tmp_path):
    # The shipped demo's case: two models, one per family. The exact permutation p is 1.0 (both
    # assignments are as extreme), which the old rule read as parity; with one model per family
    # there is no between-model variance, so no interval: it fails as unmeasurable, saying what it needs.
    result = contrast_result(tmp_path, biased_frame({"a": [0.0], "b": [0.375]}), 0.1, alpha=0.05)
    assert not result.passed
    assert result.reason.startswith("cannot be measured") and "needs at least 3 models" in result.reason
    assert result.details["models_per_family"] == {"a": 1, "b": 1}


def test_family_contrast_needs_a_bound(tmp_path):
    with pytest.raises(InputError, match="max_abs_contrast"):
        load_policy(policy(tmp_path, 'type = "family_contrast"\npositive = ["yes"]\nalpha = 0.05'))


class CeilingEvidence:
    """Evidence whose human ceiling runs the real paired bootstrap on a constructed table."""

    judge = "judge"
    level = 0.95

    def __init__(self, data, n_resamples=4000):
        self.data, self.n_resamples = data, n_resamples

    def human_ceiling(self, coefficient):
        from agreement.panels import PanelSettings, ceiling_difference

        return ceiling_difference(self.data, "judge", ["h1", "h2", "h3"], coefficient,
                                  settings=PanelSettings(n_resamples=self.n_resamples, seed=3))


def test_human_ceiling_non_inferiority_by_hand(tmp_path):
    from agreement import RatingData

    # Three identical annotators (annotator-annotator agreement 1 in every resample); the judge
    # differs from them on 5 of 100 units. The difference is D = -X/100 where X is the number of
    # disagreement units in the resample: X ~ Binomial(100, 0.05) (units i.i.d.). Its 97.5%
    # quantile is 10 (P(X <= 9) = 0.9718, P(X <= 10) = 0.9885), so the 95% percentile interval's
    # lower bound is -0.10; the point estimate is -0.05. The gate reads the small-sample t interval on
    # the bootstrap SE (the coverage study's choice): SD of D* = sqrt(0.05 * 0.95 / 100) = 0.021794,
    # times sqrt(100 / 99) = 0.021904, times t(0.975, 99) = 1.984217: half width 0.043463, lower bound
    # -0.0935 (the bootstrap SD of 4000 resamples is itself within ~2% of its limit).
    humans = np.tile((np.arange(100) < 40).astype(int)[:, None], (1, 3))
    judge = humans[:, 0].copy()
    judge[:5] = 1 - judge[:5]
    data = RatingData.from_matrix(np.column_stack([judge, humans]), raters=("judge", "h1", "h2", "h3"),
                                  categories=(0, 1))
    ceiling = CeilingEvidence(data).human_ceiling("percent_agreement")
    assert ceiling.statistic == pytest.approx(-0.05) and ceiling.human_mean == 1.0
    assert ceiling.confidence_interval(0.95, "percentile").low == pytest.approx(-0.10)
    verdicts = {}
    assert ceiling.confidence_interval(0.95, "t_boot").low == pytest.approx(-0.0935, abs=0.0015)
    for margin in (0.06, 0.15):
        pol = load_policy(policy(tmp_path, CRITERION["human_ceiling"].format(x=margin)))
        verdicts[margin] = evaluate(own(pol), CeilingEvidence(data), fingerprints={}, simulated=False).results[0]
    # margin 0.06: the point estimate -0.05 clears -0.06 (the old rule passed), the lower bound does not.
    assert not verdicts[0.06].passed and "not shown non-inferior" in verdicts[0.06].reason
    assert verdicts[0.15].passed and verdicts[0.15].ci_low == ceiling.confidence_interval(0.95, "t_boot").low
    assert "non-inferiority" in verdicts[0.15].test and verdicts[0.15].ci_level == 0.95
    assert "t_boot" in verdicts[0.15].ci_method


class UnscoredEvidence:
    judge = "judge"
    level = 0.95

    def __init__(self, unscored, total):
        self.counts = (unscored, total)

    def unscored(self):
        return self.counts


def test_unscored_share_passes_on_its_upper_bound(tmp_path):
    # 0 unscored of 200: Clopper-Pearson upper bound 1 - 0.025 ** (1/200) = 0.018275 < 0.02 -> PASS.
    # 0 of 100: 1 - 0.025 ** (1/100) = 0.036217 >= 0.02 -> FAIL although the observed share is 0.
    pol = load_policy(policy(tmp_path, CRITERION["unscored_share"].format(x=0.02)))
    big = evaluate(own(pol), UnscoredEvidence(0, 200), fingerprints={}, simulated=False).results[0]
    small = evaluate(own(pol), UnscoredEvidence(0, 100), fingerprints={}, simulated=False).results[0]
    assert big.passed and big.ci_high == pytest.approx(0.018275, abs=1e-6)
    assert not small.passed and small.value == 0.0 and small.ci_high == pytest.approx(0.036217, abs=1e-6)
    point = load_policy(policy(tmp_path, CRITERION["unscored_share"].format(x=0.02) + "\npoint_estimate = true"))
    explicit = evaluate(own(point), UnscoredEvidence(0, 100), fingerprints={}, simulated=False).results[0]
    assert explicit.passed and "point estimate" in explicit.test


def test_undefined_details_are_null_in_the_verdict(tmp_path):
    from agreement import RatingData

    # One annotator: the ceiling difference is undefined; its NaN means travel as null, not NaN.
    data = RatingData.from_matrix(np.array([[0, 0, 0, 0], [1, 1, 1, 1]] * 60), raters=("judge", "h1", "h2", "h3"),
                                  categories=(0, 1))

    class OneAnnotator(CeilingEvidence):
        def human_ceiling(self, coefficient):
            from agreement.panels import PanelSettings, ceiling_difference

            return ceiling_difference(self.data, "judge", ["h1"], coefficient, settings=PanelSettings(n_resamples=200))

    pol = load_policy(policy(tmp_path, CRITERION["human_ceiling"].format(x=0.1)))
    body = evaluate(own(pol), OneAnnotator(data), fingerprints={}, simulated=False).to_dict()
    row = body["criteria"][0]
    assert not row["passed"] and "two annotators" in row["reason"]
    assert row["details"]["judge_mean"] is None
    json.dumps(body, allow_nan=False)
