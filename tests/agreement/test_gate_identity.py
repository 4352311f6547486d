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
