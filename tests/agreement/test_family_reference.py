"""The resolved reference in the family audit and the family gate (issue #22, EHQ's design).

Two coders label every unit and an adjudicator settles every disagreement. Against the
independent majority every disagreement is a tie and drops out under tie_policy
"exclude"; against the resolved reference (the default) none does.
"""

from __future__ import annotations

import json

import pytest

from apps.cli import main
from samples.jsonl import write_jsonl
from samples.layout import StudyLayout
from tests.agreement.test_study_io import human_label, judge_label

MODELS = {"m1": "fa", "m2": "fa", "m3": "fb", "m4": "fb"}


def write_ehq_study(root):
    """Per model 10 units: coders agree on u0-u5 (c1 = c2 = the judge's label on u0-u2 'yes', u3-u5 'no') and
    disagree on u6-u9, where the adjudicator says 'yes' on u6, u7 and 'no' on u8, u9; the judge says 'yes' on
    u6-u9. A second judge ('other', family fb) says 'no' everywhere. Trajectory ids are the ``responses``
    adapter's ``<model>::<item>``: the same 10 items answered by 4 models."""
    layout = StudyLayout.of(root)
    key, app, ls, judge = [], [], [], []
    for model, family in MODELS.items():
        for u in range(10):
            unit = f"{model}-u{u}"
            task = f"t_{unit}"
            key.append(dict(task_id=task, unit_id=unit, trajectory_id=f"{model}::item{u}", kind="escalate_final",
                            strata=dict(agent="A", backbone=model, family=family, dataset="d", setting="controlled",
                                        split="none"), stratum="all", inclusion_prob=1.0))
            if u < 6:
                c1 = c2 = "yes" if u < 3 else "no"
            else:
                c1, c2 = "yes", "no"
                app.append(human_label(task, "adj", "yes" if u < 8 else "no", role="adjudication"))
            app.append(human_label(task, "c1", c1))
            ls.append(human_label(task, "c2", c2, backend="labelstudio"))
            judge.append(judge_label(unit, "esc@j", "yes" if u < 3 or u >= 6 else "no"))
            judge.append(judge_label(unit, "other", "no"))
    write_jsonl(layout.key, key)
    write_jsonl(layout.app_labels, app)
    write_jsonl(layout.labelstudio_labels, ls)
    write_jsonl(layout.judge_labels, judge)
    return root


def run_audit(root, capsys, *extra):
    assert main(["audit", str(root), "--judge", "esc@j", "--positive", "yes", "--n-resamples", "200",
                 "--judge-family", "esc@j=fa", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_coders_and_an_adjudicator_lose_no_disagreement(tmp_path, capsys):
    root = write_ehq_study(tmp_path)
    resolved = run_audit(root, capsys)
    # Resolved: all 10 units of each model count. Reference yes on u0-u2, u6, u7 (5), judge yes on u0-u2, u6-u9
    # (7): judge score 0.7, human 0.5, bias +0.2 on every model.
    assert resolved["reference"] == "resolved" and resolved["adjudicated_units"] == 16
    for model in resolved["models"]:
        assert model["n"] == 10
        assert model["judge_score"]["statistic"] == pytest.approx(0.7)
        assert model["human_score"]["statistic"] == pytest.approx(0.5)
        assert model["bias"]["statistic"] == pytest.approx(0.2)
    # Against the independent majority the 4 disagreements per model are ties and drop out: 6 units,
    # judge = human on all of them, bias 0. The resolved audit shows that beside its own numbers.
    beside = resolved["versus_majority"]
    assert [(m["n"], m["bias"]) for m in beside["models"]] == [(6, 0.0)] * 4
    assert [c["raw"]["contrast"] for c in beside["contrasts"]] == [0.0, 0.0]
    majority = run_audit(root, capsys, "--reference", "human_majority")
    assert majority["reference"] == "human majority" and "versus_majority" not in majority
    assert main(["audit", str(root), "--judge", "esc@j", "--positive", "yes", "--n-resamples", "200"]) == 0
    out = capsys.readouterr()
    assert "the same judge vs the independent human majority" in out.out and "fa: raw +0.000" in out.out
    # The report reads audit/audit.json: replacing it is said, naming what the earlier audit was.
    assert f"accord audit: replaced {root / 'audit' / 'audit.json'} (the earlier audit counted ['yes'] against " \
           f"the human majority)" in out.err
    assert [m["n"] for m in majority["models"]] == [6, 6, 6, 6]
    assert all(m["bias"]["statistic"] == 0.0 for m in majority["models"])
    # The error matrix covers every judge of the study: esc@j (family fa) and other (family unknown).
    # other says 'no' on everything: false negative rate 1 on reference-yes units (5 per model, 10 per family),
    # false positive rate 0 with a Clopper-Pearson interval that keeps its width (20 reference-no units).
    cells = {(c["judge"], c["response_family"]): c for c in resolved["error_matrix"]}
    assert set(cells) == {("esc@j", "fa"), ("esc@j", "fb"), ("other", "fa"), ("other", "fb")}
    assert cells[("esc@j", "fa")]["self_family"] and cells[("other", "fa")]["judge_family"] == "unknown"
    other = cells[("other", "fa")]
    assert other["false_negative_rate"]["statistic"] == 1.0
    assert other["false_positive_rate"]["statistic"] == 0.0
    assert other["false_positive_rate"]["ci_high"] == pytest.approx(1 - 0.025 ** (1 / 10))  # 10 clusters
    # esc@j on fa: reference no = u3-u5, u8, u9 per model (10); judge yes on u8, u9 -> FP 4/10.
    assert cells[("esc@j", "fa")]["false_positive_rate"]["statistic"] == pytest.approx(0.4)


def test_family_criterion_reads_the_resolved_reference(tmp_path, capsys):
    root = write_ehq_study(tmp_path)
    policy = tmp_path / "policy.toml"
    head = ('[policy]\nname = "t"\ndescription = "t"\nlevel = 0.95\ntie_policy = "exclude"\nn_resamples = 200\n'
            'seed = 20261129\n\n[[criteria]]\ntype = "family_contrast"\npositive = ["yes"]\nmax_abs_contrast = 0.1\n')
    for reference, units in (("resolved", 40), ("human_majority", 24)):
        policy.write_text(head + f'reference = "{reference}"\n')
        main(["gate", str(root), "--policy", str(policy), "--judge", "esc@j", "--json"])
        result = json.loads(capsys.readouterr().out)["judges"]["esc@j"]["criteria"][0]
        # 40 (or 24) units is below the 100 the interval needs: measured, then failed as too small.
        assert result["details"]["models_per_family"] == {"fa": 2, "fb": 2}
        assert f"{units} units is too small" in result["reason"]


def test_the_cluster_key_is_a_study_setting(tmp_path, capsys):
    root = write_ehq_study(tmp_path)
    # Default: every trajectory (model::item) is a cluster, 40; by case the 10 items answered by 4 models
    # are 10 draws; by a unit field (backbone) 4. The pooled difference is bootstrapped over those clusters.
    for cluster, count in (("trajectory", 40), ("case", 10), ("backbone", 4)):
        body = run_audit(root, capsys, "--cluster", cluster)
        assert body["cluster"] == cluster
        assert body["pooled_difference"]["details"]["n_clusters"] == count
    assert main(["audit", str(root), "--judge", "esc@j", "--positive", "yes", "--cluster", "nope"]) == 2
    err = capsys.readouterr().err
    assert "cluster 'nope': not a unit field" in err and "backbone" in err and "Traceback" not in err
    policy = tmp_path / "policy.toml"
    policy.write_text('[policy]\nname = "t"\ndescription = "t"\nlevel = 0.95\ntie_policy = "exclude"\n'
                      'n_resamples = 200\nseed = 20261129\n\n[[criteria]]\ntype = "unscored_share"\nmax_share = 0.5\n')
    # 40 units: the built-in baseline criteria call that too small (REJECT, exit 1); the verdict names its cluster.
    assert main(["gate", str(root), "--policy", str(policy), "--judge", "esc@j", "--cluster", "case", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["cluster"] == "case"


def test_model_families_from_the_command_line(tmp_path, capsys):
    root = write_ehq_study(tmp_path)
    # Regroup: m1 and m3 in family x, m2 and m4 in y (the units' strata say fa, fa, fb, fb).
    body = run_audit(root, capsys, "--model-family", "m1=x", "--model-family", "m3=x", "--model-family", "m2=y",
                     "--model-family", "m4=y")
    assert {m["model"]: m["family"] for m in body["models"]} == {"m1": "x", "m2": "y", "m3": "x", "m4": "y"}
    assert {c["family"] for c in body["contrasts"]} == {"x", "y"}
    assert main(["audit", str(root), "--judge", "esc@j", "--positive", "yes", "--model-family", "m9=x"]) == 2
    assert "model(s) ['m9'] are not models of the study's units (backbone)" in capsys.readouterr().err
    assert main(["audit", str(root), "--judge", "esc@j", "--positive", "yes", "--model-family", "m1"]) == 2
    assert "--model-family 'm1': expected MODEL=FAMILY" in capsys.readouterr().err
