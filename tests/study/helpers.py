"""Shared helpers for the study tests: run the CLI in-process, snapshot a study folder."""

from __future__ import annotations

import json
from pathlib import Path

from apps.cli import main

REPO = Path(__file__).resolve().parents[2]
# The coding app's SQLite store (and its WAL files) are opened read-only by a skipped
# run, which SQLite may still touch; every other file must keep its bytes and mtime.
VOLATILE = ("labels/store.sqlite",)


def accord(capsys, *argv: str) -> tuple[int, str, str]:
    """Run `accord ARGV` in-process; (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code, out, err = accord(capsys, "run", *argv, "--json")
    assert code in (0, 1), err
    return code, json.loads(out)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mtime (ns), keyed by path relative to the study folder."""
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if p.is_file() and not str(p.relative_to(root)).startswith(VOLATILE)}


def statuses(result: dict) -> dict[str, str]:
    return {row["stage"]: row["status"] for row in result["stages"]}


def recompute_matches(root: Path, study) -> None:
    """validation.json and gate/verdict.json equal a recomputation from the stored tables."""
    from agreement.gate import gate_study
    from agreement.identity import evaluated_families, self_family_notes
    from agreement.study_io import jsonable, labels_table, load_study
    from agreement.validation import codebook_versions, validate_study
    from apps.stages import validation_settings

    settings, notes = validation_settings(study)  # the gate policy's: one interval per statistic
    loaded = load_study(root, cluster=study.validation.cluster)
    flags = self_family_notes(study.judge_families(), evaluated_families(loaded))
    result = validate_study(loaded, **settings)
    body = result.to_dict()
    body["notes"] = [*body["notes"], *notes, *flags]
    body["cluster"] = loaded.cluster
    body["codebook_versions"] = codebook_versions(labels_table(loaded))
    assert json.loads((root / "validation" / "validation.json").read_text()) == jsonable(body)
    document, _ = gate_study(loaded, study.gate.policy, judges=study.gate.judges or None)
    document["notes"] = [*document["notes"], *flags]
    assert json.loads((root / "gate" / "verdict.json").read_text()) == jsonable(document)


def human_labels_match_store(root: Path) -> list[dict]:
    """labels/human.jsonl holds exactly the store's labels (independent and adjudication)."""
    from annotate.store import Store

    store = Store.for_study(root)
    try:
        expected = sorted((row.model_dump(mode="json") for row in store.labels()),
                          key=lambda r: (r["task_id"], r["role"], r["annotator"]))
    finally:
        store.close()
    rows = [json.loads(line) for line in (root / "labels" / "human.jsonl").read_text().splitlines()]
    assert rows == expected
    return rows
