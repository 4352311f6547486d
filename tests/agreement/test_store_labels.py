"""Every command reads the coding app's store as it is now: no `accord labels export` between a submit and validation."""

from __future__ import annotations

import json

from apps.cli import main
from samples.jsonl import write_jsonl
from samples.records import BlindTask, KeyEntry

TASKS = [f"t_{i:016x}" for i in range(12)]
TRUTH = ["yes", "no", "yes", "no", "no", "yes", "yes", "no", "yes", "no", "no", "no"]


def accord(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _study(root):
    """12 blinded escalate tasks in the store, two annotators ordered all of them, a judge's labels; no export."""
    from annotate.store import Store

    tasks = [BlindTask(task_id=t, kind="escalate_final", text=f"final turn {i}") for i, t in enumerate(TASKS)]
    key = [KeyEntry(task_id=t, unit_id=f"u_{i:020x}", trajectory_id=f"traj{i}", kind="escalate_final",
                    strata={"split": "conflict"}, stratum="split=conflict", inclusion_prob=1.0)
           for i, t in enumerate(TASKS)]
    write_jsonl(root / "sealed" / "key.jsonl", [k.model_dump(mode="json") for k in key])
    write_jsonl(root / "blind" / "tasks.jsonl", [t.model_dump(mode="json") for t in tasks])
    (root / "blind" / "orders.json").write_text(json.dumps({"ann1": TASKS, "ann2": TASKS}))
    write_jsonl(root / "judges" / "labels.jsonl",
                [dict(unit_id=k.unit_id, judge="j", label=TRUTH[i], parse_status="ok", fingerprint="fp")
                 for i, k in enumerate(key)])
    store = Store.for_study(root)
    store.load_tasks(tasks, {"ann1": TASKS, "ann2": TASKS})
    tokens = {a: store.add_annotator(a) for a in ("ann1", "ann2")}
    return store, tokens


def test_validate_reads_the_store_without_an_export(tmp_path, capsys):
    root = tmp_path / "study"
    store, tokens = _study(root)
    try:
        for i, task in enumerate(TASKS):
            store.submit(tokens["ann1"], task, TRUTH[i], submission_id=f"submit-a1-{i}")
            store.submit(tokens["ann2"], task, TRUTH[i], submission_id=f"submit-a2-{i}")
        assert not (root / "labels" / "human.jsonl").exists()
        code, out, err = accord(capsys, "validate", str(root), "--n-resamples", "200", "--json")
        assert code == 0, err
        doc = json.loads(out)
        # 12 units x 2 annotators, all from the store: cited by its file, fingerprinted by its rows
        assert "labels/store.sqlite" in doc["fingerprints"]
        ac1 = doc["sections"][0]["human_panel"]["results"]["gwet_ac1"]
        assert (ac1["n_units"], ac1["statistic"]) == (12, 1.0), ac1  # the two annotators agree on all 12
        from agreement.documents import ValidationDocument, read_document, stale_reasons

        document = read_document(ValidationDocument, root)
        assert stale_reasons(document, root) == []
        # A later submit (ann2 changes its mind on task 0) makes the validation stale, with no export either.
        store.submit(tokens["ann2"], TASKS[0], "no", submission_id="submit-a2-again")
        assert stale_reasons(document, root) == [
            f"stale: labels/store.sqlite changed after validation; rerun accord validate {root}"]
    finally:
        store.close()
