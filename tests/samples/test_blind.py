"""Blinding: an adversarial identity set leaves zero identity strings in the tasks; the
sealed key restores every design field; orders are seeded per annotator."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from annotate.tasks import load_tasks
from samples.blind import IdentityLeak, blind_study
from samples.ingest import ingest
from samples.sampler import sample_study
from samples.scrub import Hit, Scrubber

# Written by hand: every string that would reveal who produced a trajectory.
IDENTITY_STRINGS = [
    "claude", "sonnet", "anthropic", "gpt", "openai", "chatgpt", "qwen", "alibaba", "gemini", "google", "googleapis",
    "deepseek", "llama", "openhands", "qwen-agent", "zetaharness", "acmebot", "foobar", "api.openai.com", "x.ai",
]

ADVERSARIAL_STEPS = [
    {"reasoning": "<think>I am DeepSeek-R1, so let me think.</think>", "text": "As Claude, I cannot browse.",
     "tool_call": {"name": "claude_web_search", "arguments": {"endpoint": "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro"},
                   "result": "Served by https://api.openai.com/v1/chat/completions (model gpt-4o-2024-08-06)", "success": True}},
    {"reasoning": None, "text": "I am Qwen, a large language model created by Alibaba Cloud. cLaUdE-3.5-SONNET agreed.",
     "tool_call": {"name": "QWEN_CODE_RUNNER", "arguments": {"q": "see www.anthropic.com/news and x.ai"}, "result": "ok", "success": True}},
    {"reasoning": None, "text": "ZetaHarness running acmebot-7b; I'm an AI model developed by Foobar Labs.",
     "tool_call": None},
    {"reasoning": None, "text": "Ｇｅｍｉｎｉ and Open\u200bHands and chatGPT and Llama-3.1-70B-Instruct all say 42.",
     "tool_call": None},
]


def _run(i: int, agent: str, backbone: str) -> dict:
    return {"id": f"adv-{i}", "agent": agent, "backbone": backbone, "dataset": "GAIA", "setting": "natural",
            "split": "conflict" if i % 2 else "control", "question": "What is 6 x 7?", "reference": ["42"],
            "steps": ADVERSARIAL_STEPS, "truncated": False,
            "final_turn": {"reasoning": "<think>As GPT-5 I know</think>",
                           "text": f"The answer is 42 (computed by {backbone} inside {agent}, see https://openai.com/x)."},
            "provider": "Anthropic", "model_card": "https://anthropic.com/claude"}


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("blind")
    runs = [_run(0, "Qwen-Agent", "qwen3.5-9b"), _run(1, "OpenHands", "gpt-5"), _run(2, "ZetaHarness", "acmebot-7b"),
            _run(3, "Claude Code", "anthropic/claude-sonnet-4.6")]
    (root / "runs.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in runs))
    ingest([root / "runs.jsonl"], root, adapter="ise")
    plan = root / "all.toml"
    plan.write_text('name = "all"\nkinds = ["identify_trajectory", "identify_turn", "escalate_final", "correctness"]\n'
                    'strata = ["kind"]\nallocation = "fixed"\nn_per_stratum = 100\none_per_trajectory = false\n')
    sample_study(root, plan)
    blind_study(root, annotators=["ann1", "ann2", "ann3"])
    return root


def test_no_identity_string_survives(study: Path) -> None:
    text = (study / "blind" / "tasks.jsonl").read_text(encoding="utf-8")
    sample = (study / "sample" / "sample.jsonl").read_text(encoding="utf-8")
    lowered = text.lower()
    for needle in IDENTITY_STRINGS:
        assert needle in sample.lower() or needle in ("zetaharness",), f"test data should contain {needle!r}"
        assert needle not in lowered, f"{needle!r} leaked into the tasks"
    assert "42" in text and "[MODEL]" in text and "[URL]" in text and "[AGENT]" in text and "[VENDOR]" in text


def test_tasks_carry_only_the_display_payload(study: Path) -> None:
    tasks = load_tasks(study / "blind" / "tasks.jsonl")  # refuses any stratum/key field
    for line in (study / "blind" / "tasks.jsonl").read_text().splitlines():
        assert set(json.loads(line)) == {"task_id", "kind", "text", "turns", "focus_turn"}
    sample_ids = {json.loads(l)["unit_id"] for l in (study / "sample" / "sample.jsonl").read_text().splitlines()}
    for task in tasks:
        assert re.fullmatch(r"t_[0-9a-f]{16}", task.task_id)
        assert not any(task.task_id[2:] in u for u in sample_ids)


def test_sealed_key_restores_every_field(study: Path) -> None:
    key_path = study / "sealed" / "key.jsonl"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert stat.S_IMODE((study / "sealed").stat().st_mode) == 0o700
    key = {json.loads(l)["task_id"]: json.loads(l) for l in key_path.read_text().splitlines()}
    tasks = {t.task_id: t for t in load_tasks(study / "blind" / "tasks.jsonl")}
    sample = {json.loads(l)["unit_id"]: json.loads(l) for l in (study / "sample" / "sample.jsonl").read_text().splitlines()}
    assert set(key) == set(tasks) and len(key) == len(sample)
    for task_id, entry in key.items():
        unit = sample[entry["unit_id"]]
        for field in ("trajectory_id", "kind", "strata", "stratum", "inclusion_prob"):
            assert entry[field] == unit[field], field
        assert tasks[task_id].kind == unit["kind"] and tasks[task_id].focus_turn == unit["focus_turn"]
        assert (tasks[task_id].turns is None) == (unit["turns"] is None)


def test_orders_are_seeded_permutations(study: Path, tmp_path: Path) -> None:
    orders = json.loads((study / "blind" / "orders.json").read_text())
    ids = sorted(t.task_id for t in load_tasks(study / "blind" / "tasks.jsonl"))
    assert sorted(orders) == ["ann1", "ann2", "ann3"]
    assert all(sorted(o) == ids for o in orders.values())
    assert len({tuple(o) for o in orders.values()}) == 3
    before = (study / "blind" / "tasks.jsonl").read_bytes(), (study / "blind" / "orders.json").read_bytes()
    blind_study(study, annotators=["ann1", "ann2", "ann3"])
    assert ((study / "blind" / "tasks.jsonl").read_bytes(), (study / "blind" / "orders.json").read_bytes()) == before
    from samples.errors import InputError

    with pytest.raises(InputError, match="sealed key from another sample or seed exists"):
        blind_study(study, annotators=["ann1", "ann2", "ann3"], seed=99)
    blind_study(study, annotators=["ann1", "ann2", "ann3"], seed=99, replace=True)
    assert {json.loads(l)["task_id"] for l in (study / "blind" / "tasks.jsonl").read_text().splitlines()}.isdisjoint(ids)
    blind_study(study, annotators=["ann1", "ann2", "ann3"], replace=True)


def test_audit_says_what_was_masked_where(study: Path) -> None:
    audit = json.loads((study / "blind" / "audit.json").read_text())
    assert audit["surviving_identity_strings"] == 0
    assert set(audit["masked_by_category"]) == {"agent", "model", "url", "vendor", "self_identification"}
    assert all(set(row) == {"task_id", "where", "masked", "kept"} for row in audit["masked"])
    audit_text = json.dumps(audit).lower()
    assert not any(n in audit_text for n in IDENTITY_STRINGS)  # the audit itself is blind
    detail = json.loads((study / "sealed" / "scrub_detail.json").read_text())
    # the tool name keeps its meaning: only the model inside it is masked
    assert any(m[1] == "claude" for row in detail["masked"] for m in row["masked"])
    assert "model_web_search" in (study / "blind" / "tasks.jsonl").read_text(encoding="utf-8")
    # every masked term with its count, sealed; the audit's category totals add up to them
    assert detail["terms"]["masked"]["claude"] > 0 and detail["terms"]["masked"]["openhands"] > 0
    assert sum(detail["terms"]["masked"].values()) == sum(audit["masked_by_category"].values())


class _Broken(Scrubber):
    """A scrubber that forgets to mask: the leak check must catch it."""

    def scrub(self, text: str) -> tuple[str, list[Hit]]:
        return text, []


def _folder_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_surviving_identity_fails_the_blind_step(study: Path, tmp_path: Path) -> None:
    before = _folder_bytes(study)
    with pytest.raises(IdentityLeak, match=r"survived scrubbing; nothing written.*task t_[0-9a-f]{16} \(unit .*\) "
                                           r"(text|turns\[\d+\])"):
        blind_study(study, annotators=["ann1"], scrubber=_Broken())
    assert _folder_bytes(study) == before


def test_annotator_names_are_checked(study: Path) -> None:
    from samples.errors import InputError

    with pytest.raises(InputError, match="listed more than once"):
        blind_study(study, annotators=["a", "a"])
    with pytest.raises(InputError, match="non-empty names"):
        blind_study(study, annotators=[""])
    # the coding app's rule (annotate.store refuses these), applied before anything is written
    before = _folder_bytes(study)
    for bad in ["ann 1", "-ann", "ann/1", "é", "a" * 65, "ann;drop"]:
        with pytest.raises(InputError, match="not a valid annotator name"):
            blind_study(study, annotators=["ann1", bad])
    assert _folder_bytes(study) == before
