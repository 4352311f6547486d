"""The verdict is bound to the exact call it validated: a score of another call is refused, naming it."""

from __future__ import annotations

import json

from apps.cli import main
from tests.agreement.test_scoring import LENIENT, SCORE
from tests.agreement.test_study_io import write_ise_study

PARTS = {"provider": "openai", "api": "chat", "model": "gpt-5", "prompt_sha256": "a" * 64, "rule": None,
         "output": "identify_json", "parse_mode": "strict", "samples": 1, "params": {"temperature": 0},
         "unit_set": "u" * 64, "accord_version": "0.1", "judge": "any"}


def start_event(fingerprint: str, **changes) -> str:
    return json.dumps({"event": "start", "judges": {"j": {"fingerprint": fingerprint, **PARTS, **changes}}}) + "\n"


def test_score_refuses_an_accept_for_another_call_and_force_stamps_it(tmp_path, capsys):
    write_ise_study(tmp_path, sample_share=0.8)  # every label carries run fingerprint "fp"
    (tmp_path / "lenient.toml").write_text(LENIENT)
    runs = tmp_path / "judges" / "runs.jsonl"
    runs.write_text(start_event("fp"))
    assert main(["gate", str(tmp_path), "--policy", str(tmp_path / "lenient.toml")]) == 0
    out = capsys.readouterr().out
    assert "validated call(s): model gpt-5" in out and "unit_kind identify_trajectory" in out
    verdict = json.loads((tmp_path / "gate" / "verdict.json").read_text())
    calls = verdict["judges"]["identify@j"]["judge_identity"]["calls"]
    assert calls == [{**{k: v for k, v in PARTS.items() if k not in ("unit_set", "accord_version", "judge")},
                      "unit_kind": "identify_trajectory"}]
    assert main(["score", str(tmp_path), *SCORE]) == 0  # the same call on a larger unit set: accepted
    capsys.readouterr()

    # The benchmark's identify units outside the sample were labelled by another model under the same name.
    key_units = {json.loads(x)["unit_id"] for x in (tmp_path / "sealed" / "key.jsonl").read_text().splitlines()}
    path = tmp_path / "judges" / "labels.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for row in rows:
        if row["judge"] == "identify@j" and row["unit_id"] not in key_units:
            row["fingerprint"] = "fp-mini"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with runs.open("a") as handle:
        handle.write(start_event("fp-mini", model="gpt-5-mini", unit_set="v" * 64))
    assert main(["score", str(tmp_path), *SCORE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "judge 'identify@j': the ACCEPT is for another call (model 'gpt-5' -> 'gpt-5-mini')" in err
    assert main(["score", str(tmp_path), *SCORE, "--force", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["accepted"] is False and body["notes"][0].startswith("UNACCEPTED")
    assert "model 'gpt-5' -> 'gpt-5-mini'" in body["notes"][0]


def test_report_refuses_an_accepted_score_whose_calls_changed(tmp_path, capsys):
    write_ise_study(tmp_path, sample_share=0.8)
    (tmp_path / "lenient.toml").write_text(LENIENT)
    runs = tmp_path / "judges" / "runs.jsonl"
    runs.write_text(start_event("fp"))
    assert main(["gate", str(tmp_path), "--policy", str(tmp_path / "lenient.toml")]) == 0
    assert main(["score", str(tmp_path), *SCORE]) == 0
    # The run log now says the labels' run used another prompt: the ACCEPT no longer covers them.
    runs.write_text(start_event("fp", prompt_sha256="b" * 64))
    capsys.readouterr()
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"prompt_sha256 '{'a' * 64}' -> '{'b' * 64}'" in err


def test_the_trajectory_call_is_validated_on_the_sampled_turns(tmp_path, repo, capsys):
    """ISE D.2: people label turns; the score reads the whole-trajectory call (flag, t*). The trajectory
    judge's verdict on each sampled turn is its label there ("yes" only on t*), and the verdict names the
    trajectory call; a per-turn judge keeps its own labels and its own verdict."""
    from agreement.study_io import labels_table, load_study
    from samples.jsonl import write_jsonl
    from tests.agreement.test_study_io import human_label, judge_label

    study = tmp_path / "study"
    assert main(["ingest", str(repo / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)]) == 0
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "turns"\nkinds = ["identify_turn"]\nstrata = ["split"]\nallocation = "fixed"\n'
                    'n_per_stratum = 50\none_per_trajectory = false\n')
    assert main(["sample", str(study), "--plan", str(plan)]) == 0
    assert main(["blind", str(study), "--annotators", "a,b"]) == 0
    units = [json.loads(x) for x in (study / "units.jsonl").read_text().splitlines()]
    turns = [u for u in units if u["kind"] == "identify_turn"]
    whole = {u["trajectory_id"]: u["unit_id"] for u in units if u["kind"] == "identify_trajectory"}
    # The trajectory judge: t* = the first turn of each trajectory with a turn unit, flag yes.
    first = {t: min(u["focus_turn"] for u in turns if u["trajectory_id"] == t) for t in whole}
    rows = [judge_label(whole[t], "identify@j", "yes", first_turn=first[t]) for t in whole]
    rows += [judge_label(u["unit_id"], "identify-turn@j", "no") for u in turns]  # the per-turn template
    write_jsonl(study / "judges" / "labels.jsonl", rows)
    (study / "judges" / "runs.jsonl").write_text(start_event("fp"))
    key = [json.loads(x) for x in (study / "sealed" / "key.jsonl").read_text().splitlines()]
    focus = {u["unit_id"]: u["focus_turn"] for u in turns}
    expected = {}
    labels = []
    for entry in key:
        unit = next(u for u in turns if u["unit_id"] == entry["unit_id"])
        expected[entry["unit_id"]] = "yes" if focus[entry["unit_id"]] == first[unit["trajectory_id"]] else "no"
        labels += [human_label(entry["task_id"], person, expected[entry["unit_id"]]) for person in ("a", "b")]
    write_jsonl(study / "labels" / "human.jsonl", labels)

    table = labels_table(load_study(study))
    mine = table[table["rater"] == "identify@j"].set_index("unit")["label"].to_dict()
    assert mine == expected and "yes" in expected.values() and "no" in expected.values()
    per_turn = table[table["rater"] == "identify-turn@j"].set_index("unit")["label"].to_dict()
    assert set(per_turn) == set(expected) and set(per_turn.values()) == {"no"}  # its own labels, untouched

    (tmp_path / "p.toml").write_text(LENIENT)
    capsys.readouterr()
    main(["gate", str(study), "--policy", str(tmp_path / "p.toml"), "--json"])
    verdict = json.loads(capsys.readouterr().out)["judges"]
    assert [c["unit_kind"] for c in verdict["identify@j"]["judge_identity"]["calls"]] == ["identify_trajectory"]
    assert [c["unit_kind"] for c in verdict["identify-turn@j"]["judge_identity"]["calls"]] == ["identify_turn"]
