"""`accord run --interactive` under an anytime policy: a look at the verdict after each pull of the people's labels.

The offline study of test_run_offline.py (real Aggarwal responses, two rule judges, the coding app's store) gated
by the screening policy with ``monitoring = "anytime"``.
"""

from __future__ import annotations

from tests.study.helpers import REPO, accord
from tests.study.test_run_offline import PLAN, STUDY


def _label(root, name: str) -> int:
    """``name`` labels every task of their order through the coding app's session API; returns how many."""
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store

    store = Store.for_study(root)
    try:
        session = AnnotatorSession(store, store.add_annotator(name))
        order = session.order()
        for task_id in order:
            label = "ABSTAIN" if "DECLINE" in session.task(task_id).text else "CONFIDENT_CORRECT"
            session.submit(task_id, label, base_revision=0)
        return len(order)
    finally:
        store.close()


def test_run_interactive_prints_the_anytime_verdict_at_each_look(tmp_path, shared, capsys):
    from apps.study import load_study_file

    data = shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json"
    screening = (REPO / "data" / "policies" / "screening.toml").read_text()
    policy = tmp_path / "anytime.toml"
    policy.write_text(screening.replace("[policy]\n", "[policy]\nmonitoring = \"anytime\"\n", 1))
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    study_file = tmp_path / "study.toml"
    study_file.write_text(STUDY.format(data=data, policy=policy), encoding="utf-8")
    root = load_study_file(study_file).output

    code, _, err = accord(capsys, "run", str(study_file), "--interactive")
    assert code == 0 and "waiting for human labels" in err, err
    assert "anytime verdict: CONTINUE (no human labels on judged units yet)" in err

    n = _label(root, "alice")  # bob has not started: the next run looks at alice's labels and waits for bob
    code, _, err = accord(capsys, "run", str(study_file), "--interactive")
    assert code == 0 and "waiting for human labels: bob has" in err
    assert "anytime verdict: CONTINUE; labelling: " in err
    for judge in ("aggarwal-strict", "aggarwal-semantic"):
        assert f"  {judge}: CONTINUE after {n} units" in err, err
    assert "hedged betting confidence sequence" in err  # each criterion's sequential method
