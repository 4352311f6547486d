"""The real public data sets load through their adapters and round-trip to canonical JSONL.

Expected values are read from the source files with plain ``json`` here, independently
of the adapters.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from samples.ingest import ingest
from samples.jsonl import read_models
from samples.records import Trajectory


def _roundtrip(tmp_path: Path, study: Path) -> None:
    """Re-ingesting the canonical file through the canonical adapter gives the same bytes."""
    again = tmp_path / "again"
    ingest([study / "trajectories.jsonl"], again, adapter="canonical", kinds=None)
    assert (again / "trajectories.jsonl").read_bytes() == (study / "trajectories.jsonl").read_bytes()


def test_who_and_when_all_184_runs(shared: Path, tmp_path: Path) -> None:
    files = sorted((shared / "data" / "who_and_when").rglob("*.json"))
    assert len(files) == 184
    study = tmp_path / "ww"
    result = ingest(files, study, adapter="who-and-when")
    assert result.n_trajectories == 184 and result.bad_records == []
    loaded = {t.id: t for t in read_models(study / "trajectories.jsonl", Trajectory)}
    for path in files:
        raw = json.loads(path.read_text())
        t = loaded[f"who_and_when/{path.parent.name}/{path.stem}"]
        assert len(t.steps) == len(raw["history"])
        assert t.metadata["mistake_step"] == int(raw["mistake_step"])
        assert t.steps[int(raw["mistake_step"])].text == raw["history"][int(raw["mistake_step"])]["content"]
        assert t.references == [str(raw["ground_truth"])]
        assert t.final_answer is None
    # identify_turn units carry the human label alignment: exactly one mistake turn per run
    # whenever the mistake step is an agent turn.
    mistakes = Counter()
    for line in (study / "units.jsonl").read_text().splitlines():
        unit = json.loads(line)
        if unit["kind"] == "identify_turn" and unit["reference"]["is_mistake_step"]:
            mistakes[unit["trajectory_id"]] += 1
    assert set(mistakes.values()) == {1}
    _roundtrip(tmp_path, study)


def test_tau_bench_tool_calls_and_results(shared: Path, tmp_path: Path) -> None:
    path = shared / "data" / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.first10.json"
    study = tmp_path / "tau"
    result = ingest([path], study, adapter="openai-messages", options={"backbone": "gpt-4o", "agent": "tau-bench"})
    assert result.n_trajectories == 10
    raw = json.loads(path.read_text())
    for record, t in zip(raw, read_models(study / "trajectories.jsonl", Trajectory)):
        results = [m["content"] for m in record["traj"] if m["role"] == "tool"]
        calls = [c for m in record["traj"] if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
        got = [c for s in t.steps for c in s.tool_calls]
        assert [c.name for c in got] == [c["function"]["name"] for c in calls]
        assert [c.arguments for c in got] == [json.loads(c["function"]["arguments"]) for c in calls]
        # every tool message is attached, in order, to the call it answers
        assert [c.result for c in got if c.result is not None] == results
        assert not any(s.role == "tool" for s in t.steps)
        assert t.family == "openai"
    _roundtrip(tmp_path, study)


def test_mad_traces_and_votes(shared: Path, tmp_path: Path) -> None:
    sample = shared / "data" / "mad_mast_lint" / "tests" / "fixtures" / "mad_human_sample.json"
    findings = shared / "data" / "mad_mast_lint" / "evals" / "raw_findings.json"
    study = tmp_path / "mad"
    result = ingest([sample, findings], study, adapter="mad")
    raw = json.loads(sample.read_text()) + json.loads(findings.read_text())
    assert result.n_trajectories == len(raw) == 18
    loaded = list(read_models(study / "trajectories.jsonl", Trajectory))
    for record, t in zip(raw[:4], loaded[:4]):
        expected = {a["failure mode"].split("\n")[0].strip(): [a[f"annotator_{k}"] for k in (1, 2, 3)]
                    for a in record["annotations"]}
        assert t.metadata["votes"] == expected
        assert t.agent == record["mas_name"] and t.dataset == record["benchmark_name"]
        assert t.steps, "a MAD trace yields steps"
        assert all(s.text for s in t.steps)
    ag2 = json.loads(raw[0]["trace"])["trajectory"]
    assert [s.role for s in loaded[0].steps] == [m["name"] for m in ag2]
    for record, t in zip(raw[4:], loaded[4:]):
        assert t.metadata["votes"] == record["gold"]["votes"]
    _roundtrip(tmp_path, study)


def test_aggarwal_responses(shared: Path, tmp_path: Path) -> None:
    path = shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json"
    study = tmp_path / "agg"
    result = ingest([path], study, adapter="responses", metadata_strata=["category"])
    raw = json.loads(path.read_text())
    assert result.n_trajectories == len(raw) == 288
    empty = sum(r["raw"] is None for r in raw)
    assert result.units_by_kind["response"] == len(raw) - empty
    assert result.skipped_units["response"] == {"truncated (no final answer)": empty}
    loaded = list(read_models(study / "trajectories.jsonl", Trajectory))
    assert Counter(t.backbone for t in loaded) == Counter(r["model"] for r in raw)
    families = {t.backbone: t.family for t in loaded}
    # family = the vendor prefix of these OpenRouter-style ids (meta-llama -> meta, x-ai -> xai)
    for model, family in families.items():
        prefix = model.split("/")[0]
        assert family == {"meta-llama": "meta", "x-ai": "xai"}.get(prefix, prefix), model
    units = [json.loads(line) for line in (study / "units.jsonl").read_text().splitlines()]
    response = [u for u in units if u["kind"] == "response"]
    assert {u["strata"]["category"] for u in response} == {r["topic"] for r in raw}  # "topic" precedes "arm" in the lookup order
    by_id = {f"{r['model']}::{r['id']}": r["raw"] for r in raw}
    assert all(u["text"] == by_id[u["trajectory_id"]].strip() for u in response)
    _roundtrip(tmp_path, study)


def test_generic_csv_and_parquet_mapping(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"run": "r1", "model": "qwen3.5-9b", "answer": "Paris", "gold": "Paris", "extra": "x"},
            {"run": "r2", "model": "gpt-5", "answer": "Lyon", "gold": "Paris", "extra": "y"}]
    csv_path = tmp_path / "runs.csv"
    csv_path.write_text("run,model,answer,gold,extra\n" + "\n".join(",".join(r.values()) for r in rows) + "\n")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "runs.parquet")
    options = {"id": "run", "backbone": "model", "final_answer": "answer", "references": "gold", "const.agent": "none"}
    outputs = []
    for name in ("runs.csv", "runs.parquet"):
        study = tmp_path / f"study-{name}"
        ingest([tmp_path / name], study, adapter="generic", options=options)
        loaded = list(read_models(study / "trajectories.jsonl", Trajectory))
        assert [(t.id, t.backbone, t.family, t.final_answer, t.references, t.metadata) for t in loaded] == [
            ("r1", "qwen3.5-9b", "qwen", "Paris", ["Paris"], {"extra": "x"}),
            ("r2", "gpt-5", "openai", "Lyon", ["Paris"], {"extra": "y"})]
        outputs.append((study / "units.jsonl").read_bytes())
    assert outputs[0] == outputs[1]
