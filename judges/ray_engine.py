"""The ``ray`` engine: a run's uncached calls answered on a Ray cluster through ``ray.data.llm``.

The driver (this process) keeps everything that makes a run safe: it holds the study's
judges lock, builds the requests and their cache keys, looks them up in the cache, and
records each answer as it streams back (``RunContext.record``: cache, then label log).
Only the calls travel: one Ray Dataset per (judge, endpoint) of rows ``{key, body}``
through a processor from ``ray.data.llm.build_processor``:

- ``processor = "http"``: ``HttpRequestProcessorConfig`` posting the judge's exact wire
  body to each OpenAI-compatible endpoint (``/chat/completions``): a hosted API, vLLM
  servers, llama-server. Keys are dealt round-robin over the endpoints; each endpoint
  gets ``concurrency`` actors and its own ``qps`` limit.
- ``processor = "vllm"``: ``vLLMEngineProcessorConfig`` running the judge's model
  (``model_source``, default the judge's model) in vLLM engines on the cluster's GPUs,
  ``tensor_parallel_size`` GPUs each; its text comes back shaped as an OpenAI chat
  completion so the cache holds one format whatever answered.

A request the cache holds is never sent; two tasks with the same key are sent once. A
killed driver leaves every answer it recorded in the cache, so the resumed run repeats
no answered call; a killed worker node is Ray Data's to recover (its actors restart
elsewhere and their blocks are retried). A call that fails (an error body, or the
processor giving up after its retries) becomes an unscored ``call_failed`` row that the
next run tries again, as with the local engine. The processor retries inside the cluster
(``max_retries``, exponential from ``backoff_s``), so the run counts no retries, and the
labels carry no per-call ``latency_s`` (null). Ray itself is an extra: ``pip install
'accord[ray]'``; nothing here imports it until a run uses the engine.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from judges.engines import register_engine
from judges.providers.base import CONTEXT_EXCEEDED, OPENAI_API, get_provider
from samples import InputError

if TYPE_CHECKING:
    from judges.runner import RunContext, _Task
    from judges.spec import JudgeSpec

INSTALL_HINT = "the ray engine needs Ray Data's LLM API: pip install 'accord[ray]'"
PROCESSORS = ("http", "vllm")
DEFAULT_BATCH_SIZE = 4  # rows per batch; Ray 2.60's HTTP stage sends a batch's requests one after another
DEFAULT_NUM_CPUS = 0.5  # logical CPUs reserved per HTTP actor (they wait on the network)
_OPTIONS = {"address", "processor", "endpoints", "qps", "batch_size", "num_cpus", "tensor_parallel_size", "model_source"}


@dataclass(frozen=True, kw_only=True)
class RayOptions:
    """A judge's ``[judge.ray]`` table. ``address`` None: ``$RAY_ADDRESS``. ``endpoints`` empty:
    the judge's own base URL. ``qps``: requests per second per endpoint (None: no limit)."""

    address: str | None = None
    processor: str = "http"
    endpoints: tuple[str, ...] = ()
    qps: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    num_cpus: float = DEFAULT_NUM_CPUS
    tensor_parallel_size: int = 1
    model_source: str | None = None


def parse_options(where: str, table: Mapping[str, Any]) -> RayOptions:
    from judges.spec import _base_url

    unknown = sorted(set(table) - _OPTIONS)
    if unknown:
        raise InputError(f"{where}: unknown option(s) {unknown}; allowed: {sorted(_OPTIONS)}")
    address = table.get("address")
    if address is not None and not (isinstance(address, str) and address.strip() and address.isprintable()):
        raise InputError(f"{where}: address must be a Ray cluster address such as 10.0.0.5:6379, got {address!r}")
    processor = table.get("processor", "http")
    if processor not in PROCESSORS:
        raise InputError(f"{where}: processor must be one of {list(PROCESSORS)}, got {processor!r}")
    endpoints = table.get("endpoints", [])
    if isinstance(endpoints, str) or not isinstance(endpoints, (list, tuple)):
        raise InputError(f"{where}: endpoints must be a list of URLs, got {endpoints!r}")
    endpoints = tuple(_base_url(where, f"endpoints[{i}]", url) for i, url in enumerate(endpoints))
    if len(set(endpoints)) != len(endpoints):
        raise InputError(f"{where}: endpoints must be distinct, got {list(endpoints)}")

    def integer(name: str, default: int | None) -> int | None:
        value = table.get(name, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
            raise InputError(f"{where}: {name} must be an integer from 1 to 1000000, got {value!r}")
        return value

    num_cpus = table.get("num_cpus", DEFAULT_NUM_CPUS)
    if isinstance(num_cpus, bool) or not isinstance(num_cpus, (int, float)) or not math.isfinite(num_cpus) \
            or not 0 < num_cpus <= 1024:
        raise InputError(f"{where}: num_cpus must be a number > 0 and <= 1024, got {num_cpus!r}")
    model_source = table.get("model_source")
    if model_source is not None and not (isinstance(model_source, str) and model_source.strip()):
        raise InputError(f"{where}: model_source must be a model name or path, got {model_source!r}")
    if processor == "vllm" and endpoints:
        raise InputError(f"{where}: endpoints are for processor 'http'; the vllm processor runs the model on the cluster")
    return RayOptions(address=address, processor=processor, endpoints=endpoints, qps=integer("qps", None),
                      batch_size=integer("batch_size", DEFAULT_BATCH_SIZE), num_cpus=float(num_cpus),
                      tensor_parallel_size=integer("tensor_parallel_size", 1), model_source=model_source)


def _address(options: RayOptions) -> str | None:
    return options.address or os.environ.get("RAY_ADDRESS") or None


def _import_ray() -> Any:
    try:
        import ray
        import ray.data.llm  # noqa: F401
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return ray


def _reachable(address: str, timeout_s: float = 10.0) -> None:
    """Refuse at once a HOST:PORT nothing listens on: ``ray.init`` would wait minutes for it."""
    import socket

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise InputError(f"cannot reach the Ray cluster at {address}: {error.strerror or error} "
                         "(start it with `ray start --head`, or check --ray-address)") from None


def _cluster_address(judges: Sequence[JudgeSpec]) -> str:
    """The one cluster address of a run's Ray judges."""
    addresses = {_address(spec.engine_options or RayOptions()) for spec in judges}
    if None in addresses:
        raise InputError("the ray engine needs a cluster address: --ray-address ADDR, address in [judge.ray], "
                         "or $RAY_ADDRESS")
    if len(addresses) > 1:
        raise InputError(f"the Ray judges of one run must use one cluster; got addresses {sorted(addresses)}")
    return str(addresses.pop())


def _join(ray: Any, address: str) -> None:
    """Join the cluster at ``address`` as its driver, once per run (``call_all`` leaves it at the end)."""
    if ray.is_initialized():
        return
    logging.getLogger("ray").setLevel(logging.WARNING)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    except Exception as error:  # ConnectionError, a version mismatch, a bad address
        raise InputError(f"cannot join the Ray cluster at {address}: {str(error).splitlines()[0]}") from None


def cluster_gpus(ray: Any) -> float:
    return float(ray.cluster_resources().get("GPU", 0.0))


class RayEngine:
    name = "ray"
    remote = True
    flags: Mapping[str, str] = MappingProxyType({"ray_address": "address", "ray_endpoint": "endpoints", "qps": "qps"})

    def options(self, where: str, table: Mapping[str, Any]) -> RayOptions:
        return parse_options(where, table)

    def describe(self, spec: JudgeSpec) -> dict[str, Any]:
        options: RayOptions = spec.engine_options or RayOptions()
        return {"engine": self.name, "address": _address(options), "processor": options.processor,
                "endpoints": list(options.endpoints), "qps": options.qps, "batch_size": options.batch_size,
                "concurrency": spec.concurrency}

    def check(self, judges: Sequence[JudgeSpec]) -> None:
        """Ray installed, one reachable cluster for every Ray judge, each judge's processor usable there.
        Ray Data's LLM API is imported only by a run with calls to make (seconds of start-up a rerun that
        the cache answers need not pay); a Ray without it is refused there, before any call."""
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise InputError(INSTALL_HINT)
        address = _cluster_address(judges)
        for spec in judges:
            options: RayOptions = spec.engine_options or RayOptions()
            if spec.requests_per_minute or spec.tokens_per_minute:
                raise InputError(f"judge {spec.name!r}: requests_per_minute and tokens_per_minute bound the local "
                                 "engine; on Ray set qps per endpoint in [judge.ray] (or --qps)")
            if options.processor == "http" and not (get_provider(spec.provider).wire_body
                                                    and spec.connection.api == OPENAI_API):
                raise InputError(f"judge {spec.name!r}: the ray http processor posts OpenAI chat requests; "
                                 f"provider {spec.provider!r} with api {spec.connection.api!r} is not one")
        _reachable(address)
        vllm = [spec for spec in judges if (spec.engine_options or RayOptions()).processor == "vllm"]
        if not vllm:  # call_all joins, and only when the cache leaves calls to make: a rerun never joins
            return
        ray = _import_ray()
        _join(ray, address)
        gpus = cluster_gpus(ray)
        for spec in vllm:
            options = spec.engine_options
            if gpus < options.tensor_parallel_size:
                raise InputError(f"judge {spec.name!r}: the vllm processor needs {options.tensor_parallel_size} GPU(s) "
                                 f"per engine; the Ray cluster at {address} has {gpus:g}")

    def call_all(self, pending: Sequence[tuple[_Task, str]], run: RunContext) -> None:
        # Ray prints its nodes' warnings and retried tasks on the driver's stdout, which is the
        # command's own (`--json`): while the cluster works, they go to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            self._call_all(pending, run)

    def _call_all(self, pending: Sequence[tuple[_Task, str]], run: RunContext) -> None:
        ray = _import_ray()  # ray.data comes with ray.data.llm
        _join(ray, _cluster_address([task.spec for task, _ in pending]))
        # The row functions travel to the workers by value: the nodes need Ray, not accord.
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.issue_detectors_config.detectors = []  # memory advice for long pipelines, noise for a judge run
        logging.getLogger("ray.data").setLevel(logging.ERROR)
        by_key: dict[str, list[tuple[_Task, str]]] = {}
        for task, fingerprint in pending:
            by_key.setdefault(task.key, []).append((task, fingerprint))
        judges = {task.spec.name: task.spec for task, _ in pending}
        run.log.event("engine", run_id=run.run_id, engine=self.name, ray_version=ray.__version__,
                      address=_address(next(iter(judges.values())).engine_options),
                      nodes=[{"node": n["NodeID"][:12], "host": n["NodeManagerAddress"], "alive": n["Alive"],
                              "resources": {k: v for k, v in n["Resources"].items() if k in ("CPU", "GPU", "memory")}}
                             for n in ray.nodes()],
                      judges=sorted(judges), calls=len(by_key))
        datasets = []
        for spec in judges.values():
            keys = [key for key, tasks in by_key.items() if tasks[0][0].spec.name == spec.name]
            datasets.extend(_datasets(ray, spec, run.providers[spec.name], [by_key[k][0][0] for k in keys]))
        answered: set[str] = set()
        try:
            if datasets:
                stream = datasets[0].union(*datasets[1:]) if len(datasets) > 1 else datasets[0]
                for row in stream.iter_rows():
                    key = row["key"]
                    if key in answered:  # a retried block answered again: the first answer stands
                        continue
                    answered.add(key)
                    self._record(key, json.loads(row["response"]), by_key[key], run)
        except (KeyboardInterrupt, InputError):
            raise
        except Exception as error:  # the processor gave up (retries exhausted), the cluster went away
            detail = f"ray: {type(error).__name__}: {(str(error).strip().splitlines() or [''])[-1][:300]}"
            for key, tasks in by_key.items():
                if key not in answered:
                    self._fail(key, tasks, detail, run)
        finally:
            ray.shutdown()

    @staticmethod
    def _record(key: str, body: Any, tasks: list[tuple[_Task, str]], run: RunContext) -> None:
        from judges.providers.base import CallError

        spec = tasks[0][0].spec
        tally = run.tallies[spec.name]
        tally.calls += 1
        # Ray Data carries rows as Arrow structs, so an error body in a block of answers comes back
        # with "choices": None (and answers with "error": None): an answer is a body with choices.
        if not (isinstance(body, dict) and body.get("choices")):
            error = body.get("error") if isinstance(body, dict) else None
            message = (error.get("message") if isinstance(error, dict) else error) or str(body)
            RayEngine._fail(key, tasks, f"HTTP error: {str(message)[:300]}", run, counted=True)
            return
        try:
            completion = run.providers[spec.name].completion_from_raw(_as_sdk_body(body))
        except CallError as error:
            RayEngine._fail(key, tasks, error.detail, run, reason=error.reason, counted=True)
            return
        tally.input_tokens += completion.input_tokens or 0
        tally.output_tokens += completion.output_tokens or 0
        for task, fingerprint in tasks:
            run.record(task, fingerprint, completion, None, None)  # no per-call wall time on the cluster

    @staticmethod
    def _fail(key: str, tasks: list[tuple[_Task, str]], detail: str, run: RunContext, *,
              reason: str = "call_failed", counted: bool = False) -> None:
        """Every unit of a failed call unscored as ``reason: detail`` (``call_failed`` is tried again next run)."""
        spec = tasks[0][0].spec
        run.tallies[spec.name].failed += reason != CONTEXT_EXCEEDED  # past the context: unscored, not failed
        for task, fingerprint in tasks:
            run.log.event("call_failed", run_id=run.run_id, judge=spec.name, unit_id=task.unit.unit_id,
                          sample_index=task.sample_index, key=key, error=detail, reason=reason, engine="ray",
                          answered=counted)
            run.record(task, fingerprint, None, f"{reason}: {detail}", None)


def _as_sdk_body(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the OpenAI SDK would have dumped it, so the cache holds one shape whichever engine answered
    (top-level nulls dropped first: Arrow's struct unification adds the other rows' fields as null)."""
    try:
        from openai.types.chat import ChatCompletion
    except ImportError:
        return body
    try:
        return ChatCompletion.model_validate({k: v for k, v in body.items() if v is not None}).model_dump(mode="json")
    except ValueError:
        return body


def _datasets(ray: Any, spec: JudgeSpec, provider: Any, tasks: list[_Task]) -> list[Any]:
    """The judge's calls as Ray Datasets already mapped through their processor, one per endpoint."""
    from ray.data.llm import build_processor

    options: RayOptions = spec.engine_options
    if not tasks:
        return []
    if options.processor == "vllm":
        rows = [{"key": t.key, "body": json.dumps(t.request["body"], ensure_ascii=False)} for t in tasks]
        return [_vllm_processor(build_processor, spec, options)(ray.data.from_items(rows))]
    endpoints = options.endpoints or (provider.config.base_url,)
    if not endpoints[0]:
        raise InputError(f"judge {spec.name!r}: the ray http processor needs endpoints or the judge's base_url")
    out = []
    for index, endpoint in enumerate(endpoints):
        mine = tasks[index::len(endpoints)]
        if mine:
            rows = [{"key": t.key, "body": json.dumps(t.request["body"], ensure_ascii=False)} for t in mine]
            out.append(_http_processor(build_processor, spec, options, endpoint, provider)(ray.data.from_items(rows)))
    return out


def _http_processor(build_processor: Any, spec: JudgeSpec, options: RayOptions, endpoint: str, provider: Any) -> Any:
    import functools

    import aiohttp
    from ray.data import TaskPoolStrategy
    from ray.data.llm import HttpRequestProcessorConfig

    actors = spec.concurrency if options.qps is None else max(1, min(spec.concurrency, options.qps))
    headers = {}
    kind = get_provider(spec.provider)
    if kind.local_server:
        headers["Connection"] = "close"  # llama-server's router closes connections it announces as kept alive
    api_key = provider.config.api_key_env and os.environ.get(provider.config.api_key_env) \
        or (os.environ.get(kind.api_key_env) if kind.api_key_env else None)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    config = HttpRequestProcessorConfig(
        url=endpoint.rstrip("/") + "/chat/completions", headers=headers,
        qps=None if options.qps is None else max(1, options.qps // actors),
        max_retries=spec.max_retries, base_retry_wait_time_in_s=spec.backoff_s, batch_size=options.batch_size,
        concurrency=actors,
        session_factory=functools.partial(aiohttp.ClientSession,
                                          timeout=aiohttp.ClientTimeout(total=spec.connection.timeout_s)),
        http_request_stage={"num_cpus": options.num_cpus, "concurrency": actors, "batch_size": options.batch_size},
    )

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        return {"key": row["key"], "payload": json.loads(row["body"])}

    def postprocess(row: dict[str, Any]) -> dict[str, Any]:
        return {"key": row["key"], "response": json.dumps(row["http_response"])}

    # Every Ray Data operator that runs as tasks starts Python worker processes of its own (seconds of CPU
    # each, per run): the preprocess asks for the HTTP actors' CPU share so Ray Data fuses it into them
    # (MapWorker(Map(_preprocess)->MapBatches(HttpRequestUDF))), and the postprocess, which cannot fuse
    # after an actor stage, runs one task at a time on a tiny CPU share (a fractional share alone lets Ray
    # start a worker process per pending block).
    return build_processor(config, preprocess=preprocess, postprocess=postprocess,
                           preprocess_map_kwargs={"num_cpus": options.num_cpus},
                           postprocess_map_kwargs={"num_cpus": 0.01, "compute": TaskPoolStrategy(size=1)})


def vllm_sampling(body: Mapping[str, Any]) -> dict[str, Any]:
    """vLLM sampling parameters from an OpenAI chat body: the judge's params, nothing else."""
    names = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "max_tokens": "max_tokens",
             "max_completion_tokens": "max_tokens"}
    return {names[k]: v for k, v in body.items() if k in names}


def _vllm_processor(build_processor: Any, spec: JudgeSpec, options: RayOptions) -> Any:
    from ray.data.llm import vLLMEngineProcessorConfig

    config = vLLMEngineProcessorConfig(
        model_source=options.model_source or spec.model,
        engine_kwargs={"tensor_parallel_size": options.tensor_parallel_size},
        batch_size=options.batch_size, concurrency=spec.concurrency,
    )
    model = spec.model

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        body = json.loads(row["body"])
        return {"key": row["key"], "messages": body["messages"], "sampling_params": vllm_sampling(body)}

    def postprocess(row: dict[str, Any]) -> dict[str, Any]:
        return {"key": row["key"], "response": json.dumps(vllm_completion(row, model))}

    return build_processor(config, preprocess=preprocess, postprocess=postprocess)


def vllm_completion(row: Mapping[str, Any], model: str) -> dict[str, Any]:
    """A vLLM processor output row as an OpenAI chat completion body (what the cache stores)."""
    cap = (row.get("sampling_params") or {}).get("max_tokens")
    generated = row.get("num_generated_tokens")
    return {
        "id": f"ray-vllm-{row['key'][:16]}", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": row.get("generated_text") or ""},
                     "finish_reason": "length" if cap is not None and generated is not None and generated >= cap else "stop"}],
        "usage": {"prompt_tokens": row.get("num_input_tokens"), "completion_tokens": generated,
                  "total_tokens": None if generated is None or row.get("num_input_tokens") is None
                  else row["num_input_tokens"] + generated},
    }


register_engine(RayEngine())
