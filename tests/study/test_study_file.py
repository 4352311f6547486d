"""The study file: the demo study parses; mistakes exit 2 with one line naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.study import load_study_file
from tests.study.helpers import REPO, accord

DEMO = REPO / "data" / "demo" / "study.toml"


def test_demo_study_file_parses_with_paths_relative_to_it() -> None:
    study = load_study_file(DEMO)
    assert study.output == (REPO / "studies" / "demo").resolve()
    assert study.sampling.plan == (REPO / "data" / "demo" / "plan.toml").resolve()
    assert study.gate.policy == (REPO / "data" / "policies" / "strict.toml").resolve()
    assert [s.fixture.name for s in study.source] == ["instances.jsonl", "items.jsonl"]
    names = study.judge_names()
    assert "rule:ehq" in names and {"identify@smollm2", "identify@gemma3"} <= set(names)
    assert sorted(study.annotation.simulated_panel) == sorted(study.blinding.annotators)


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    """The demo study with one edit, written beside copies of the files it references."""
    text = DEMO.read_text(encoding="utf-8")
    assert old in text, old
    folder = tmp_path / "demo"
    folder.mkdir()
    for name in ("instances.jsonl", "items.jsonl", "plan.toml"):
        (folder / name).write_bytes((DEMO.parent / name).read_bytes())
    text = text.replace('"../policies/strict.toml"', json.dumps(str(REPO / "data" / "policies" / "strict.toml")))
    path = folder / "study.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("seed = 20261129\n\n[blinding]", "seeed = 20261129\n\n[blinding]",
     ["unknown key 'sampling.seeed'", "allowed here: ['order', 'plan', 'seed']"]),
    ('plan = "plan.toml"', 'plan = "no-such-plan.toml"', ["key 'sampling.plan'", "no-such-plan.toml not found"]),
    ("[validation]\n", "[not_validation]\n", ["missing section 'validation'", "unknown key 'not_validation'"]),
    ('judge = "identify@gemma3"', 'judge = "identify@nope"', ["key 'audit.judge'", "'identify@nope' is not a [[judge]] name"]),
    ('fixture = "items.jsonl"', 'fixture = "items.jsonl"\nlimit = 3', ["unknown key 'source[1].limit'"]),
    ('model = "gemma3-270m"', 'model = "gemma3-270m"\ntemperature = 0', ["[[judge]] #2", "unknown field(s) ['temperature']"]),
    ("n_resamples = 10000\nseed = 20261129\nlevel = 0.95\n\n# Family", "n_resamples = 10\nseed = 20261129\nlevel = 0.95\n\n# Family",
     ["key 'validation.n_resamples'", "greater than or equal to 100"]),
    ('"sim-annotator-3" = 0.20 }', '"sim-annotator-4" = 0.20 }', ["key 'annotation.simulated_panel'", "blinding annotators"]),
    ("[study]", "[study", ["invalid TOML"]),
])
def test_study_file_mistakes_exit_2_with_one_line(tmp_path, capsys, old, new, expected) -> None:
    path = _variant(tmp_path, old, new)
    for command in ("run", "status"):
        code, out, err = accord(capsys, command, str(path))
        assert code == 2, (command, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in err, err
        for fragment in expected:
            assert fragment in lines[0], (fragment, lines[0])
    assert not (tmp_path / "studies").exists(), "a bad study file must not create the study folder"


def test_missing_study_file_and_folder_argument(tmp_path, capsys) -> None:
    code, _, err = accord(capsys, "run", str(tmp_path / "nothing.toml"))
    assert code == 2 and "study file not found" in err
    code, _, err = accord(capsys, "run", str(tmp_path))
    assert code == 2 and "expected a study file" in err


def test_status_of_a_study_never_run(tmp_path, capsys) -> None:
    code, out, err = accord(capsys, "status", str(DEMO), "--output", str(tmp_path / "fresh"), "--json")
    assert code == 0, err
    status = json.loads(out)
    assert [row["state"] for row in status["stages"]] == ["pending"] * len(status["stages"])
    assert [row["stage"] for row in status["stages"]] == [
        "generate:agent", "generate:closed-book", "ingest", "judge", "sample", "blind", "annotate", "validate", "quality",
        "ehq", "audit", "gate", "score", "report"]
    assert status["sample"]["sampled"] == 0 and status["verdict"] is None and status["waiting"] is None
    assert not (tmp_path / "fresh").exists(), "status only reads"


def test_simulate_flag_needs_a_panel_in_the_study(tmp_path, capsys) -> None:
    path = _variant(tmp_path, "simulate = true", "simulate = false")
    text = path.read_text(encoding="utf-8")
    path.write_text("\n".join(line for line in text.splitlines() if not line.startswith("simulated_panel")), encoding="utf-8")
    code, _, err = accord(capsys, "run", str(path), "--simulate-annotators", "--output", str(tmp_path / "out"))
    assert code == 2 and "needs annotation.simulated_panel" in err and len(err.strip().splitlines()) == 1
    code, _, err = accord(capsys, "run", str(path), "--simulate-annotators", "--interactive")
    assert code == 2 and "not allowed with argument" in err


@pytest.mark.parametrize("name", ["identify", "escalate"])
def test_shipped_ise_study_files_pin_the_papers_judge_settings(name) -> None:
    """ISE App. A.3 / section 2.2: the judges are gpt-5 'with no max_tokens cap and temperature 1'; the D.2
    plans sample across agents and settings."""
    import tomllib

    study = load_study_file(REPO / "data" / "studies" / "ise" / f"{name}.toml")
    specs = study.judge_specs()
    assert {s.name for s in specs} >= {"identify@gpt5", "escalate@gpt5", "correctness@gpt5"}
    for spec in specs:
        assert spec.params.get("temperature") == 1, spec.name
        if spec.provider == "anthropic":  # accord's disagreement judge: the Anthropic API requires a cap
            continue
        assert "max_tokens" not in spec.params and "max_completion_tokens" not in spec.params, spec.name
    plan = tomllib.loads(study.sampling.plan.read_text(encoding="utf-8"))
    assert {"agent", "setting"} <= set(plan["strata"])
    # The plan's judge strata name judges the study runs.
    judged = {s.removeprefix("judge:") for s in plan["strata"] if s.startswith("judge:")}
    judged |= set(plan.get("hard_negatives", {}).get("judges", []))
    assert judged <= {s.name for s in specs}


def test_blinding_keep_roles_is_a_study_setting(tmp_path) -> None:
    """[blinding] keep_roles reaches the blind stage as accord blind --keep-roles does (default: roles masked)."""
    assert load_study_file(DEMO).blinding.keep_roles is False
    path = _variant(tmp_path, "[blinding]\n", "[blinding]\nkeep_roles = true\n")
    assert load_study_file(path).blinding.keep_roles is True
