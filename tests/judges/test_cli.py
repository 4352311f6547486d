"""`accord judge` and `accord judges` through the real CLI dispatcher."""

from __future__ import annotations

import json

import pytest

from apps.cli import main
from judges.tables import read_labels
from tests.judges.units import escalate_units, identify_unit


def _units_file(tmp_path, units) -> str:
    path = tmp_path / "units.jsonl"
    path.write_text("".join(u.model_dump_json() + "\n" for u in units))
    return str(path)


def test_list_json(capsys) -> None:
    assert main(["judge", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {p["name"] for p in data["prompts"]} == {"ise-identify", "ise-escalate", "ise-correctness", "ise-refusal",
                                                   "asa-milestone"}
    assert {"openai", "anthropic", "local", "rule"} <= set(data["providers"])
    assert all(len(p["sha256"]) == 64 for p in data["prompts"])


def test_run_dry_then_real_with_a_config_file(fault_server, tmp_path, capsys) -> None:
    units = escalate_units(3) + [identify_unit()]
    config = tmp_path / "judges.toml"
    config.write_text(f"""
[[judge]]
name = "escalate-fault"
prompt = "ise-escalate"
provider = "openai"
model = "judge-m"
base_url = "{fault_server.base_url}/v1"
params = {{ temperature = 1.0 }}

[[judge]]
name = "identify-fault"
prompt = "ise-identify"
provider = "anthropic"
model = "judge-m"
base_url = "{fault_server.base_url}"
parse_mode = "lenient"
params = {{ max_tokens = 32 }}
""")
    args = ["judge", "run", "--study", str(tmp_path / "study"), "--units", _units_file(tmp_path, units),
            "--config", str(config), "--json"]
    assert main(args + ["--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert [(j["judge"], j["calls"]) for j in dry["judges"]] == [("escalate-fault", 3), ("identify-fault", 1)]
    assert fault_server.attempts == []

    fault_server.default_reply = '{"flag": 1, "first_recognition_turn": 1}'
    assert main(args) == 0
    real = json.loads(capsys.readouterr().out)
    by_judge = {j["judge"]: j for j in real["judges"]}
    # the escalate judge gets JSON back: unscored (wrong format), counted, never a label
    assert by_judge["escalate-fault"]["unscored_reasons"] == {"wrong_format": 3}
    assert by_judge["identify-fault"]["ok"] == 1
    table = read_labels(tmp_path / "study" / "judges" / "labels.jsonl")
    assert len(table) == 4
    row = table[(units[-1].unit_id, "identify-fault", 0)]
    assert (row.label, row.first_turn) == ("yes", 1)


def test_bad_units_file_is_one_line_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "units.jsonl"
    path.write_text(escalate_units(1)[0].model_dump_json() + "\n" + '{"unit_id": "u_x", "kind": "essay"}\n')
    code = main(["judge", "run", "--units", str(path), "--judge", "rule:aggarwal", "--study", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "units.jsonl:2" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_judge_for_none_of_the_units_kinds_is_an_input_error(tmp_path, capsys) -> None:
    """Found walking the README: a prompt for escalate units run on a study of identify units judged nothing and
    exited 0. It is one line naming the judge, its kinds and the units' kinds, exit 2, nothing written."""
    units = _units_file(tmp_path, escalate_units(2))
    code = main(["judge", "run", "--units", units, "--judge", "rule:ehq", "--study", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "--judge rule:ehq: labels unit kinds ['response'], but the units have only ['escalate_final']" in err
    assert not (tmp_path / "judges").exists()


def test_bad_judge_ref_and_missing_judges(tmp_path, capsys) -> None:
    units = _units_file(tmp_path, escalate_units(1))
    assert main(["judge", "run", "--units", units, "--judge", "ise-escalate", "--study", str(tmp_path)]) == 2
    assert "PROMPT@PROVIDER:MODEL" in capsys.readouterr().err
    assert main(["judge", "run", "--units", units, "--study", str(tmp_path)]) == 2
    assert "no judges" in capsys.readouterr().err
    assert main(["judge", "run", "--units", units, "--study", str(tmp_path), "--judge", "ise-escalate@anthropic:claude-x",
                 "--base-url", "http://127.0.0.1:9"]) == 2
    assert "max_tokens" in capsys.readouterr().err


def test_hosted_provider_without_key_is_an_input_error(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    units = _units_file(tmp_path, escalate_units(1))
    assert main(["judge", "run", "--units", units, "--study", str(tmp_path), "--judge", "ise-escalate@openai:gpt-5"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_judges_stop_when_nothing_runs(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("ACCORD_RUN_DIR", str(tmp_path))
    assert main(["judges", "stop", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"stopped": False}


def test_local_provider_finds_the_served_instance(tmp_path, monkeypatch) -> None:
    """Without base_url, `local` reads .run/llama-server.json of a live server (here: this process)."""
    import os

    from judges.providers.base import ProviderConfig, make_provider
    from samples.errors import InputError

    monkeypatch.setenv("ACCORD_RUN_DIR", str(tmp_path))
    with pytest.raises(InputError, match="accord judges serve"):
        make_provider("local", ProviderConfig())
    (tmp_path / "llama-server.json").write_text(json.dumps({"pid": os.getpid(), "base_url": "http://127.0.0.1:8123"}))
    assert make_provider("local", ProviderConfig()).config.base_url == "http://127.0.0.1:8123/v1"
    assert make_provider("local", ProviderConfig(api="anthropic")).config.base_url == "http://127.0.0.1:8123"


REF = "ise-escalate@openai:judge-m"
BAD_FLAGS = [
    (["--base-url", "localhost:8080"], "--base-url must be an http:// or https:// URL with a host "
     "(e.g. http://127.0.0.1:8080/v1), got 'localhost:8080'"),
    (["--base-url", "http://127.0.0.1:99999/v1"], "--base-url must be an http:// or https:// URL with a host "
     "(e.g. http://127.0.0.1:8080/v1), got 'http://127.0.0.1:99999/v1'"),
    (["--base-url", "http:///v1"], "--base-url must be an http:// or https:// URL with a host "
     "(e.g. http://127.0.0.1:8080/v1), got 'http:///v1'"),
    (["--base-url", "http://127.0.0.1:8080/v1 "], "--base-url must be an http:// or https:// URL with a host "
     "(e.g. http://127.0.0.1:8080/v1), got 'http://127.0.0.1:8080/v1 '"),
    (["--timeout", "nan"], "--timeout must be a finite number > 0 and <= 86400, got nan"),
    (["--timeout", "inf"], "--timeout must be a finite number > 0 and <= 86400, got inf"),
    (["--timeout", "-1"], "--timeout must be a finite number > 0 and <= 86400, got -1.0"),
    (["--timeout", "0"], "--timeout must be a finite number > 0 and <= 86400, got 0.0"),
    (["--concurrency", "0"], "--concurrency must be an integer from 1 to 1024, got 0"),
    (["--concurrency", "-4"], "--concurrency must be an integer from 1 to 1024, got -4"),
    (["--samples", "1000000000000"], "--samples must be an integer from 1 to 1000, got 1000000000000"),
    (["--param", "temperature=NaN"], "--param temperature must be a finite number >= 0 and <= 2, got nan"),
    (["--param", "temperature=-0.5"], "--param temperature must be a finite number >= 0 and <= 2, got -0.5"),
    (["--param", "top_p=Infinity"], "--param top_p must be a finite number >= 0 and <= 1, got inf"),
    (["--param", "max_tokens=0"], "--param max_tokens must be an integer from 1 to 1000000, got 0"),
    (["--param", "max_tokens=16.5"], "--param max_tokens must be an integer from 1 to 1000000, got 16.5"),
    (["--param", "seed=true"], "--param seed must be an integer from -9223372036854775808 to 9223372036854775807, got True"),
    (["--param", "constrain=1"], "--param constrain must be true or false, got 1"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_bad_settings_are_refused_before_any_call(fault_server, tmp_path, capsys, flags, message) -> None:
    units = _units_file(tmp_path, escalate_units(2))
    study = tmp_path / "study"
    code = main(["judge", "run", "--units", units, "--study", str(study), "--judge", REF,
                 *(["--base-url", fault_server.base_url + "/v1"] if "--base-url" not in flags else []), *flags])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.splitlines() == [f"accord judge: error: --judge {REF}: {message}"]
    assert fault_server.attempts == [] and not study.exists()


@pytest.mark.parametrize(("setting", "message"), [
    ("timeout_s = nan", "timeout_s must be a finite number > 0 and <= 86400, got nan"),
    ("backoff_s = -inf", "backoff_s must be a finite number > 0 and <= 86400, got -inf"),
    ("max_backoff_s = 1e9", "max_backoff_s must be a finite number > 0 and <= 86400, got 1000000000.0"),
    ("max_retries = -1", "max_retries must be an integer from 0 to 100, got -1"),
    ("requests_per_minute = nan", "requests_per_minute must be a finite number > 0, got nan"),
    ("tokens_per_minute = 0", "tokens_per_minute must be a finite number > 0, got 0"),
    ("params = { temperature = inf }", "params.temperature must be a finite number >= 0 and <= 2, got inf"),
    ('base_url = "ftp://127.0.0.1/v1"', "base_url must be an http:// or https:// URL with a host "
     "(e.g. http://127.0.0.1:8080/v1), got 'ftp://127.0.0.1/v1'"),
])
def test_bad_settings_in_a_config_file_name_file_table_and_field(tmp_path, capsys, setting, message) -> None:
    config = tmp_path / "judges.toml"
    config.write_text(f'[[judge]]\nprompt = "ise-escalate"\nprovider = "openai"\nmodel = "m"\n{setting}\n'
                      + ('' if setting.startswith("base_url") else 'base_url = "http://127.0.0.1:9/v1"\n'))
    units = _units_file(tmp_path, escalate_units(1))
    assert main(["judge", "run", "--units", units, "--study", str(tmp_path / "study"), "--config", str(config)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"accord judge: error: {config} [[judge]] #1: {message}"]


def _snapshot(root) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _bad_cache(study, units_file) -> str:
    (study / "judges").mkdir(parents=True)
    (study / "judges" / "cache.sqlite").write_bytes(b"not a database, just some bytes" * 100)
    return ("judges/cache.sqlite: not an accord request cache: file is not a database; "
            "move it away to start a new cache")


def _table_is_a_folder(study, units_file) -> str:
    (study / "judges" / "labels.jsonl").mkdir(parents=True)
    return "judges/labels.jsonl: is a folder; expected the judge labels table (a file)"


def _log_not_utf8(study, units_file) -> str:
    (study / "judges").mkdir(parents=True)
    (study / "judges" / "label_log.jsonl").write_bytes(b'{"unit_id": "\xff\xfe"}\n')
    return "judges/label_log.jsonl:1: not a JudgeLabel row (Invalid JSON"


def _units_not_utf8(study, units_file) -> str:
    units_file.write_bytes(b'{"unit_id": "u_\xff"}\n')
    return "units.jsonl:1: not UTF-8 (invalid start byte at byte"


def _units_with_nan(study, units_file) -> str:
    row = json.loads(escalate_units(1)[0].model_dump_json())
    units_file.write_text(json.dumps({**row, "reference": {"score": float("nan")}}) + "\n")
    return "units.jsonl:1: NaN is not a JSON number (the JSON standard has no NaN or Infinity)"


def _units_a_folder(study, units_file) -> str:
    units_file.unlink()
    units_file.mkdir()
    return "units.jsonl: is a folder; expected a file"


def _study_is_a_file(study, units_file) -> str:
    study.rmdir()
    study.write_text("a file where the study folder belongs")
    return "study: is a file; expected a folder"  # refused where the study folder is read, before the cache


@pytest.mark.parametrize("make", [_bad_cache, _table_is_a_folder, _log_not_utf8, _units_not_utf8, _units_with_nan,
                                  _units_a_folder, _study_is_a_file], ids=lambda f: f.__name__.strip("_"))
def test_bad_study_files_are_one_line_exit_2_and_change_nothing(fault_server, tmp_path, capsys, make) -> None:
    study = tmp_path / "study"
    study.mkdir()
    units_file = tmp_path / "units.jsonl"
    units_file.write_text("".join(u.model_dump_json() + "\n" for u in escalate_units(2)))
    expected = make(study, units_file)
    before = _snapshot(tmp_path)
    code = main(["judge", "run", "--study", str(study), "--units", str(units_file), "--judge", REF,
                 "--base-url", fault_server.base_url + "/v1"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("accord judge: error: ") and expected in err, err
    assert fault_server.attempts == []
    # What existed is unchanged; new are at most the lock and an empty cache (opened before the table is read).
    after = _snapshot(tmp_path)
    assert {k: after.get(k, "gone") for k in before} == before
    assert set(after) - set(before) <= {"study/.locks", "study/.locks/judges.lock", "study/judges/cache.sqlite"}
