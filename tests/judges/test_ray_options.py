"""The ray engine's settings, checked where a judge is built, and its install hint (no cluster needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from judges.ray_engine import RayOptions, vllm_completion, vllm_sampling
from judges.spec import build_judge
from samples.errors import InputError
from samples.layout import StudyLayout
from tests.judges import cli_runs
from tests.judges.units import escalate_units

BASE = {"prompt": "ise-escalate", "provider": "local", "model": "smollm2", "base_url": "http://127.0.0.1:8080/v1"}


def test_a_ray_judge_carries_its_options_and_keeps_the_local_fingerprint() -> None:
    local = build_judge(BASE)
    remote = build_judge({**BASE, "engine": "ray", "ray": {"address": "10.0.0.5:6379", "qps": 20, "batch_size": 2,
                                                           "endpoints": ["http://a:8000/v1", "http://b:8000/v1"]}})
    assert remote.engine == "ray" and local.engine == "local"
    assert remote.engine_options == RayOptions(address="10.0.0.5:6379", qps=20, batch_size=2,
                                               endpoints=("http://a:8000/v1", "http://b:8000/v1"))
    # Where a call is answered is not what it asks: same fingerprint, so a Ray run resumes a local one.
    assert remote.fingerprint("u", "v") == local.fingerprint("u", "v")


@pytest.mark.parametrize(("table", "message"), [
    ({"engine": "spark"}, "engine must be one of ['local', 'ray'], got 'spark'"),
    ({"ray": {"address": "h:1"}}, "options table(s) ['ray'] given but the engine is 'local'"),
    ({"engine": "ray", "ray": {"qps": 0}}, "ray: qps must be an integer from 1 to 1000000, got 0"),
    ({"engine": "ray", "ray": {"qps": 2.5}}, "qps must be an integer from 1 to 1000000, got 2.5"),
    ({"engine": "ray", "ray": {"processor": "sglang"}}, "processor must be one of ['http', 'vllm'], got 'sglang'"),
    ({"engine": "ray", "ray": {"endpoints": "http://a/v1"}}, "endpoints must be a list of URLs, got 'http://a/v1'"),
    ({"engine": "ray", "ray": {"endpoints": ["ftp://a"]}}, "endpoints[0] must be an http:// or https:// URL"),
    ({"engine": "ray", "ray": {"endpoints": ["http://a/v1", "http://a/v1"]}}, "endpoints must be distinct"),
    ({"engine": "ray", "ray": {"num_cpus": 0}}, "num_cpus must be a number > 0 and <= 1024, got 0"),
    ({"engine": "ray", "ray": {"workers": 3}}, "unknown option(s) ['workers']"),
    ({"engine": "ray", "ray": {"processor": "vllm", "endpoints": ["http://a/v1"]}}, "endpoints are for processor 'http'"),
    ({"engine": "ray", "ray": "h:1"}, "ray must be a table of engine options, got 'h:1'"),
])
def test_bad_ray_settings_are_refused_naming_the_field_and_value(table, message) -> None:
    with pytest.raises(InputError) as refused:
        build_judge({**BASE, **table}, where="judges.toml [[judge]] #1")
    assert message in str(refused.value) and str(refused.value).startswith("judges.toml [[judge]] #1")


def test_a_rule_judge_cannot_go_to_a_cluster() -> None:
    with pytest.raises(InputError, match="a rule judge runs in the local process"):
        build_judge({"provider": "rule", "model": "ehq", "engine": "ray"})


def test_vllm_rows_become_openai_chat_completions() -> None:
    # The processor's output row (vLLM stage columns) as the body the cache stores and the parser reads.
    body = {"model": "m", "messages": [], "temperature": 0.0, "max_tokens": 4, "seed": 7, "cache_prompt": False}
    assert vllm_sampling(body) == {"temperature": 0.0, "max_tokens": 4, "seed": 7}
    row = {"key": "ab" * 32, "generated_text": "YES", "num_input_tokens": 30, "num_generated_tokens": 4,
           "sampling_params": {"max_tokens": 4}}
    completion = vllm_completion(row, "m")
    assert completion["choices"][0]["message"]["content"] == "YES"
    assert completion["choices"][0]["finish_reason"] == "length"  # 4 of 4 tokens: the cap cut it
    assert completion["usage"] == {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}
    assert vllm_completion({**row, "num_generated_tokens": 1}, "m")["choices"][0]["finish_reason"] == "stop"


def _units_and_config(tmp_path):
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", escalate_units(1))
    config = tmp_path / "judges.toml"
    config.write_text('[[judge]]\nprompt = "ise-escalate"\nprovider = "local"\nmodel = "smollm2"\n'
                      'base_url = "http://127.0.0.1:9/v1"\n')
    return units_file, config


def test_without_ray_the_engine_says_how_to_install_it_in_one_line(tmp_path) -> None:
    units_file, config = _units_and_config(tmp_path)
    study = tmp_path / "study"
    # Ray made unimportable in the CLI's process, as on a machine without the extra.
    code = "import sys; sys.modules['ray'] = None; from apps.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["judge", "run", "--study", str(study), "--units", str(units_file), "--config", str(config),
            "--engine", "ray", "--ray-address", "127.0.0.1:1"]
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=cli_runs.REPO, env=cli_runs.env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["accord judge: error: the ray engine needs Ray Data's LLM API: "
                                                "pip install 'accord[ray]'"]
    assert not StudyLayout.of(study).judges_dir.exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--ray-address", "h:1"], "--ray-address need --engine ray"),
    (["--engine", "ray", "--qps", "0"], "qps must be an integer from 1 to 1000000, got 0"),
    (["--engine", "ray"], "the ray engine needs a cluster address: --ray-address ADDR"),
    (["--engine", "ray", "--ray-address", "127.0.0.1:1"], "cannot reach the Ray cluster at 127.0.0.1:1: "),
])
def test_engine_flags_are_checked_before_anything_runs(tmp_path, flags, message) -> None:
    units_file, config = _units_and_config(tmp_path)
    env = cli_runs.env()
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([*cli_runs.command(tmp_path / "study", units_file, config), *flags], cwd=cli_runs.REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("extra", "message"), [
    ({"requests_per_minute": 60}, "requests_per_minute and tokens_per_minute bound the local engine"),
    ({"provider": "anthropic", "params": {"max_tokens": 8}}, "the ray http processor posts OpenAI chat requests"),
])
def test_a_judge_the_ray_engine_cannot_run_is_refused_before_anything_is_written(tmp_path, extra, message) -> None:
    from judges.runner import StudyPaths, run_judges

    judge = build_judge({**BASE, **extra, "engine": "ray", "ray": {"address": "127.0.0.1:1"}})
    paths = StudyPaths.in_dir(tmp_path / "judges")
    with pytest.raises(InputError, match=message):
        run_judges(escalate_units(1), [judge], paths)
    assert not paths.label_log.exists() and not paths.cache.exists()
