"""Judge runs on a real two-node Ray cluster against two real llama-server endpoints.

The cluster (tests/support/ray_cluster.py) is one per module (this one); the endpoints are the
session's llama-server and a second one started here, each behind a counting proxy
(tests/support/counting_proxy.py) so that which requests reached a model is seen from
outside accord. Every run is the CLI in a subprocess (the driver a test can kill).
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from judges.cache import RequestCache
from judges.local_server import LlamaServer
from judges.tables import read_label_rows, read_run_log
from samples.errors import InputError
from samples.layout import StudyLayout
from tests.judges import cli_runs
from tests.judges.fault_server import FaultServer
from tests.judges.units import escalate_unit, escalate_units
from tests.support.counting_proxy import CountingProxy, body_key

pytestmark = [pytest.mark.ray, pytest.mark.timeout(1800)]

JUDGE = "escalate@smollm2"


@pytest.fixture(scope="module", params=[pytest.param("llama", marks=pytest.mark.llama), "stub"])
def endpoints(request):
    """Two endpoints, each behind a counting proxy: two llama-servers (the session's and a second
    one), or two stub chat servers answering after 0.5 s (tests/judges/fault_server.py), which
    need no model build and keep the engine's timing apart from a model's."""
    if request.param == "llama":
        second = LlamaServer(name="llama-server-ray-tests", parallel=4, ctx_size=8192)  # as the session's
        try:
            second.start()
        except InputError as error:
            pytest.fail(str(error))
        servers = [request.getfixturevalue("llama_server"), second]
        urls = [server.base_url for server in servers]
    else:
        servers = [FaultServer(delay_s=0.5).start(), FaultServer(delay_s=0.5).start()]
        urls = [server.base_url for server in servers]
    proxies = [CountingProxy(url).start() for url in urls]
    try:
        yield proxies
    finally:
        for proxy in proxies:
            proxy.stop()
        servers[1].stop()
        if request.param == "stub":
            servers[0].stop()


# Units per run. The stub endpoints carry the bulk; a real model's call costs seconds on 2 cores, and every
# assertion of the llama runs holds for any count (row-for-row equality, a kill between the first and last
# label): 2 is a call per endpoint; 6 is more than the 4 HTTP actors take at once, so calls are answered
# both before and after a kill. (SmolLM2 reads a judge prompt of about 500 tokens at 40-90 tokens/s on one
# thread of a loaded 2-core machine: each call saved here is seconds.)
UNITS = {"llama": {"equal": 2, "driver kill": 6, "worker kill": 6},
         "stub": {"equal": 16, "driver kill": 16, "worker kill": 24}}
# The process title of a Ray Data HTTP actor with the row preprocess fused into it (judges/ray_engine.py):
# an unfused preprocess would start Python worker processes of its own on every run.
FUSED_ACTOR = "MapWorker(Map(_preprocess)->MapBatches(HttpRequestUDF))"


@pytest.fixture
def units_per_run(request) -> dict[str, int]:
    return UNITS[request.node.callspec.params["endpoints"]]


def _config(path: Path, base_url: str, *, concurrency: int = 2, ray: str = "") -> Path:
    path.write_text(
        f'[[judge]]\nname = "{JUDGE}"\nprompt = "ise-escalate"\nprovider = "local"\nmodel = "smollm2"\n'
        f'base_url = "{base_url}/v1"\nconcurrency = {concurrency}\ntimeout_s = 600\nmax_retries = 2\n'
        'params = { temperature = 0.0, max_tokens = 4, seed = 7 }\n'
        + (f'engine = "ray"\n[judge.ray]\n{ray}' if ray else ''))
    return path


def _command(study: Path, units: Path, config: Path, *extra: str) -> list[str]:
    return [*cli_runs.command(study, units, config), "--no-progress", *extra]


def _ray_flags(cluster, proxies) -> list[str]:
    flags = ["--engine", "ray", "--ray-address", cluster.address]
    for proxy in proxies:
        flags += ["--ray-endpoint", proxy.base_url + "/v1"]
    return flags


def _run(command: list[str], timeout: float = 1200) -> dict:
    done = subprocess.run(command, cwd=cli_runs.REPO, env=cli_runs.env(), capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)["judges"][0]


def _without_latency(path: Path) -> list[str]:
    """The table's rows with latency_s dropped: the one field that measures wall time, not the answer."""
    return [json.dumps({k: v for k, v in json.loads(line).items() if k != "latency_s"})
            for line in path.read_text().splitlines()]


def _log_counts(study: Path) -> Counter:
    """Rows per (unit, judge, sample) in the append-only label log."""
    log = StudyLayout.of(study).judge_label_log
    return Counter((r["unit_id"], r["judge"], r["sample_index"]) for r in map(json.loads, log.read_text().splitlines()))


def _cached_bodies(study: Path) -> set[str]:
    cache = RequestCache(StudyLayout.of(study).judge_cache)
    try:
        keys = [row[0] for row in cache._db.execute("SELECT key FROM responses")]
        return {body_key(cache.request_for(key)["body"]) for key in keys}
    finally:
        cache.close()


def test_ray_run_equals_the_local_run_and_a_rerun_makes_no_call(ray_cluster, endpoints, units_per_run,
                                                                tmp_path) -> None:
    n = units_per_run["equal"]
    units = escalate_units(n, " (ray equality)")
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", units)
    config = _config(tmp_path / "judges.toml", endpoints[0].base_url)
    local_study, ray_study = tmp_path / "local", tmp_path / "ray"

    local = _run(_command(local_study, units_file, config))
    assert local["calls"] == n and local["ok"] == n
    before = [p.calls() for p in endpoints]
    ray_cluster.ready()  # a worker node replaced by the worker-kill test has joined
    remote = _run(_command(ray_study, units_file, config, *_ray_flags(ray_cluster, endpoints)))
    sent = [p.calls() - b for p, b in zip(endpoints, before)]
    assert remote["calls"] == n and remote["ok"] == n and remote["failed"] == 0
    assert sent[0] > 0 and sent[1] > 0 and sum(sent) == n, f"calls per endpoint: {sent}"

    # The same labels table, row for row, but for the wall time (the cluster measures none per call).
    local_table, ray_table = StudyLayout.of(local_study).judge_labels, StudyLayout.of(ray_study).judge_labels
    assert _without_latency(ray_table) == _without_latency(local_table)
    assert all(json.loads(line)["latency_s"] is None for line in ray_table.read_text().splitlines())
    assert set(_log_counts(ray_study).values()) == {1} and len(_log_counts(ray_study)) == n

    events = list(read_run_log(StudyLayout.of(ray_study).judge_runs))
    start = next(e for e in events if e["event"] == "start")
    assert start["engines"][JUDGE]["engine"] == "ray" and start["engines"][JUDGE]["address"] == ray_cluster.address
    engine = next(e for e in events if e["event"] == "engine")
    assert engine["engine"] == "ray" and sum(n["alive"] for n in engine["nodes"]) == 2 and engine["calls"] == n

    # A rerun on the cluster makes no call; the cluster's answers are cache hits for the local engine too.
    # It does not join the cluster either.
    before, drivers = [p.calls() for p in endpoints], ray_cluster.drivers()
    again = _run(_command(ray_study, units_file, config, *_ray_flags(ray_cluster, endpoints)))
    assert again["calls"] == 0 and again["already_done"] == n
    assert ray_cluster.drivers() == drivers > 0, "a rerun with nothing to call joined the cluster"
    fresh = tmp_path / "fresh"
    StudyLayout.of(fresh).judges_dir.mkdir(parents=True)
    StudyLayout.of(fresh).judge_cache.write_bytes(StudyLayout.of(ray_study).judge_cache.read_bytes())
    replay = _run(_command(fresh, units_file, config))
    assert replay["calls"] == 0 and replay["cache_hits"] == n
    assert [p.calls() for p in endpoints] == before


def test_killed_driver_resumes_without_losing_doubling_or_repeating_an_answered_call(ray_cluster, endpoints,
                                                                                    units_per_run, tmp_path) -> None:
    n = units_per_run["driver kill"]
    units = escalate_units(n, " (driver kill)")
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", units)
    config = _config(tmp_path / "judges.toml", endpoints[0].base_url,
                     ray='batch_size = 1\n')
    study = tmp_path / "study"
    command = _command(study, units_file, config, *_ray_flags(ray_cluster, endpoints))

    process = subprocess.Popen(command, cwd=cli_runs.REPO, env=cli_runs.env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    cli_runs.wait_for(lambda: cli_runs.log_lines(study) >= n // 3, process, timeout_s=900)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    logged = cli_runs.log_lines(study)
    assert n // 3 <= logged < n, "the kill must land half-way"
    answered = _cached_bodies(study)
    assert len(answered) >= logged
    before = Counter()
    for proxy in endpoints:
        before.update(proxy.forwarded)

    resumed = _run(command)
    after = Counter()
    for proxy in endpoints:
        after.update(proxy.forwarded)
    repeated = sum(after[key] - before[key] for key in answered)
    assert repeated == 0, f"{repeated} answered call(s) sent again"
    assert resumed["already_done"] == logged and resumed["cache_hits"] == len(answered) - logged
    assert resumed["calls"] == n - len(answered)

    tally = cli_runs.tally(study, units, judges=(JUDGE,))
    assert (tally.rows, tally.lost, tally.duplicated) == (n, 0, 0)
    assert set(_log_counts(study).values()) == {1}
    rows, _ = read_label_rows(StudyLayout.of(study).judge_labels)
    assert all(row.parse_status == "ok" for row in rows.values())
    print(f"\n[ray driver kill] {n} labels, kill after {logged} logged ({len(answered)} answers cached): "
          f"lost 0, duplicated 0, answered calls repeated {repeated}")


def test_killed_worker_node_loses_and_doubles_no_label(ray_cluster, endpoints, units_per_run, tmp_path) -> None:
    n = units_per_run["worker kill"]
    units = escalate_units(n, " (worker kill)")
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", units)
    # One CPU per actor and four actors for two endpoints on 2 x 4 logical CPUs: Ray spreads them over both nodes.
    config = _config(tmp_path / "judges.toml", endpoints[0].base_url,
                     ray='batch_size = 1\nnum_cpus = 1\n')
    study = tmp_path / "study"
    command = _command(study, units_file, config, *_ray_flags(ray_cluster.ready(), endpoints))
    process = subprocess.Popen(command, cwd=cli_runs.REPO, env=cli_runs.env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        cli_runs.wait_for(lambda: cli_runs.log_lines(study) >= 2 and ray_cluster.worker_processes("MapWorker") > 0,
                          process, timeout_s=900)
        on_worker = ray_cluster.worker_processes("MapWorker")
        fused = ray_cluster.worker_processes(FUSED_ACTOR)
        logged = cli_runs.log_lines(study)
        ray_cluster.kill_worker()
        out, err = process.communicate(timeout=1200)
    finally:
        if process.poll() is None:
            process.kill()
        ray_cluster.start_worker(wait=False)  # it joins while the study is checked (and resumed)
    assert process.returncode == 0 and out.strip(), err[-3000:]
    assert fused == on_worker, f"{on_worker} actor process(es) on the worker node, {fused} of them {FUSED_ACTOR}"
    first = json.loads(out)["judges"][0]
    # Whatever the cluster could not answer after the kill is an unscored call_failed row, retried by the next run.
    resumed = _run(command) if first["failed"] else first
    tally = cli_runs.tally(study, units, judges=(JUDGE,))
    assert (tally.rows, tally.lost, tally.duplicated) == (n, 0, 0)
    rows, _ = read_label_rows(StudyLayout.of(study).judge_labels)
    assert all(row.parse_status == "ok" for row in rows.values())
    counts = _log_counts(study)
    assert set(counts.values()) == {1} if not first["failed"] else max(counts.values()) <= 2
    print(f"\n[ray worker kill] {n} labels, worker node with {on_worker} actor process(es) killed after {logged} "
          f"logged: first run ok {first['ok']}, call_failed {first['failed']}; "
          f"{'resume calls ' + str(resumed['calls']) if first['failed'] else 'no resume needed'}; lost 0, duplicated 0")


def test_error_bodies_fail_unparseable_answers_stay_unscored_and_a_shared_request_goes_once(ray_cluster, fault_server,
                                                                                            tmp_path) -> None:
    from judges.runner import StudyPaths, run_judges
    from judges.spec import build_judge

    units = escalate_units(5) + [escalate_unit("traj-400", "An answer. #fault:400"),
                                 escalate_unit("traj-maybe", "Another answer. #fault:ok:maybe"),
                                 escalate_unit("traj-twin", escalate_units(1)[0].text)]  # the same text as traj-0
    judge = build_judge({"prompt": "ise-escalate", "provider": "openai", "model": "judge-m", "name": "esc",
                         "base_url": fault_server.base_url + "/v1", "concurrency": 2, "max_retries": 0,
                         "engine": "ray", "ray": {"address": ray_cluster.address, "batch_size": 2}})
    paths = StudyPaths.in_dir(tmp_path / "judges")
    stats = run_judges(units, [judge], paths).judges[0]
    assert len(fault_server.attempts) == 7  # 8 labels, 7 distinct requests
    assert (stats.calls, stats.failed, stats.ok, stats.unscored) == (7, 1, 6, 2)
    assert stats.unscored_reasons == {"call_failed": 1, "wrong_format": 1}
    table, rows = read_label_rows(paths.labels)
    assert rows == 8
    by_unit = {key[0]: row for key, row in table.items()}
    assert by_unit[units[5].unit_id].unscored_reason == "call_failed: HTTP error: error 400"
    assert by_unit[units[6].unit_id].raw_output == "maybe" and by_unit[units[6].unit_id].label is None
    assert by_unit[units[7].unit_id].label == by_unit[units[0].unit_id].label == "yes"
    assert [e["error"] for e in read_run_log(paths.runs) if e["event"] == "call_failed"] == ["HTTP error: error 400"]

    again = run_judges(units, [judge], paths).judges[0]  # only the failed call is tried again
    assert (again.already_done, again.calls, again.failed) == (7, 1, 1) and len(fault_server.attempts) == 8


def test_a_vllm_judge_on_a_cluster_without_gpus_is_refused_before_anything_is_written(ray_cluster, tmp_path) -> None:
    units_file = cli_runs.write_units(tmp_path / "units.jsonl", escalate_units(2))
    config = tmp_path / "judges.toml"
    config.write_text('[[judge]]\nname = "v"\nprompt = "ise-escalate"\nprovider = "local"\nmodel = "smollm2"\n'
                      'base_url = "http://127.0.0.1:9/v1"\nengine = "ray"\n'
                      f'[judge.ray]\naddress = "{ray_cluster.address}"\nprocessor = "vllm"\n'
                      'model_source = "HuggingFaceTB/SmolLM2-135M-Instruct"\n')
    study = tmp_path / "study"
    done = subprocess.run(_command(study, units_file, config), cwd=cli_runs.REPO, env=cli_runs.env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2
    assert "the vllm processor needs 1 GPU(s) per engine; the Ray cluster at" in done.stderr
    assert "has 0" in done.stderr and "Traceback" not in done.stderr
    assert not StudyLayout.of(study).judge_label_log.exists()


def test_the_vllm_engine_processor_judges_on_gpu_nodes(ray_cluster, tmp_path) -> None:
    import ray

    ray.init(address=ray_cluster.address, logging_level="ERROR", log_to_driver=False, ignore_reinit_error=True)
    try:
        gpus = ray.cluster_resources().get("GPU", 0)
    finally:
        ray.shutdown()
    if not gpus:
        pytest.skip("no GPU in the Ray cluster: the vLLM engine processor runs vLLM on GPU nodes")
    try:
        import vllm  # noqa: F401
    except ImportError:
        pytest.skip("vllm is not installed (pip install vllm on the GPU nodes and here)")
    from judges.runner import StudyPaths, run_judges
    from judges.spec import build_judge

    judge = build_judge({"prompt": "ise-escalate", "provider": "local", "model": "smollm2",
                         "base_url": "http://127.0.0.1:9/v1", "engine": "ray", "params": {"max_tokens": 8},
                         "ray": {"address": ray_cluster.address, "processor": "vllm",
                                 "model_source": "HuggingFaceTB/SmolLM2-135M-Instruct"}})
    summary = run_judges(escalate_units(4), [judge], StudyPaths.in_dir(tmp_path / "judges"))
    assert summary.judges[0].calls == 4 and summary.judges[0].failed == 0
