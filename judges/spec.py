"""Judge specifications: prompt + unit kinds + parser + provider + model + parameters.

Judges come from TOML (``[[judge]]`` tables, in a judges file or study.toml) or from a
short CLI form ``PROMPT@PROVIDER:MODEL`` (``ise-escalate@local:smollm2``) /
``rule:MODEL`` (``rule:ehq``, ``rule:aggarwal``). Everything is validated here, where
the judge is built, with messages naming the field, the value and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from judges.engines import DEFAULT_ENGINE
from judges.parsers import PARSE_MODES, get_output_kind
from judges.prompts import PromptSpec, resolve_prompt
from judges.providers.base import ProviderConfig
from judges.tomlfile import load_toml
from samples import InputError, sha256_hex

# Operational defaults (how hard to push a provider), not decision thresholds; each is
# overridable per judge. ISE calls judges at temperature 1 with no max_tokens cap.
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 5
DEFAULT_BACKOFF_S = 1.0
DEFAULT_MAX_BACKOFF_S = 60.0

# What each setting may be. Beyond these a run would hang (10**12 samples), overflow a
# timer (an infinite backoff), never time out (NaN compares false) or be refused by
# every provider, so they are refused where the judge is built, naming field and value.
MAX_SAMPLES = 1_000
MAX_CONCURRENCY = 1_024
MAX_RETRIES = 100
MAX_SECONDS = 86_400.0  # timeouts and backoffs: one day
MAX_OUTPUT_TOKENS = 1_000_000  # above any model's output limit (the largest are ~10**5)


@dataclass(frozen=True)
class _Range:
    integer: bool
    low: float
    high: float | None = None
    low_open: bool = False  # low itself not allowed

    def allows(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return False
        if not math.isfinite(value):
            return False
        return (value > self.low if self.low_open else value >= self.low) and (self.high is None or value <= self.high)

    def describe(self) -> str:
        if self.integer:
            return f"an integer from {self.low} to {self.high}" if self.high is not None else f"an integer >= {self.low}"
        text = f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        return text + (f" and <= {self.high:g}" if self.high is not None else "")


_SETTINGS = {
    "samples": _Range(True, 1, MAX_SAMPLES),
    "concurrency": _Range(True, 1, MAX_CONCURRENCY),
    "max_retries": _Range(True, 0, MAX_RETRIES),
    "timeout_s": _Range(False, 0, MAX_SECONDS, low_open=True),
    "backoff_s": _Range(False, 0, MAX_SECONDS, low_open=True),
    "max_backoff_s": _Range(False, 0, MAX_SECONDS, low_open=True),
    "requests_per_minute": _Range(False, 0, low_open=True),
    "tokens_per_minute": _Range(False, 0, low_open=True),
}
# Numeric judge parameters (judges.providers.sdk.JUDGE_PARAMS); the others are checked by type below.
_PARAM_RANGES = {
    "temperature": _Range(False, 0, 2),
    "top_p": _Range(False, 0, 1),
    "seed": _Range(True, -(2**63), 2**63 - 1),
    "max_tokens": _Range(True, 1, MAX_OUTPUT_TOKENS),
    "max_completion_tokens": _Range(True, 1, MAX_OUTPUT_TOKENS),
}

_FIELDS = {
    "name", "prompt", "provider", "model", "api", "base_url", "api_key_env", "parse_mode", "samples", "params",
    "concurrency", "requests_per_minute", "tokens_per_minute", "timeout_s", "max_retries", "backoff_s", "max_backoff_s",
    "engine",  # plus a table named after the engine with its options ([judge.ray]); judges.engines
}


@dataclass(frozen=True, kw_only=True)
class JudgeSpec:
    name: str
    provider: str
    model: str
    prompt: PromptSpec | None
    output: str
    unit_kinds: tuple[str, ...]
    parse_mode: str = "strict"
    samples: int = 1
    params: Mapping[str, Any] = field(default_factory=dict)
    connection: ProviderConfig = field(default_factory=ProviderConfig)
    concurrency: int = DEFAULT_CONCURRENCY
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S
    # Where uncached calls run (judges.engines); not in the fingerprint: an answer is the same wherever it came from.
    engine: str = DEFAULT_ENGINE
    engine_options: Any = None

    def fingerprint_parts(self, unit_set_hash: str, accord_version: str) -> dict[str, Any]:
        from judges.providers.base import get_provider

        version = get_provider(self.provider).model_version
        return {
            "judge": self.name, "provider": self.provider, "api": self.connection.api, "model": self.model,
            "prompt_sha256": self.prompt.sha256 if self.prompt else None,
            "rule": version(self.model) if version is not None else None,
            "output": self.output, "parse_mode": self.parse_mode, "samples": self.samples,
            "params": dict(self.params), "unit_set": unit_set_hash, "accord_version": accord_version,
        }

    def fingerprint(self, unit_set_hash: str, accord_version: str) -> str:
        return sha256_hex(self.fingerprint_parts(unit_set_hash, accord_version))


def _setting(where: str, label: str, value: Any, allowed: _Range) -> Any:
    if not allowed.allows(value):
        raise InputError(f"{where}: {label} must be {allowed.describe()}, got {value!r}")
    return value


def _params(where: str, label: Callable[[str], str], params: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in params.items():
        if key in _PARAM_RANGES:
            _setting(where, label(key), value, _PARAM_RANGES[key])
        elif key == "constrain" and not isinstance(value, bool):
            raise InputError(f"{where}: {label(key)} must be true or false, got {value!r}")
        elif key == "reasoning_effort" and not (isinstance(value, str) and value.strip()):
            raise InputError(f"{where}: {label(key)} must be a non-empty string (e.g. \"low\"), got {value!r}")
    return dict(params)


def _base_url(where: str, label: str, value: Any) -> str | None:
    """A URL a call can reach: http(s), a host, a valid port, nothing a request would not send."""
    if value is None:
        return None
    if isinstance(value, str) and value.isprintable() and not any(c.isspace() for c in value):
        try:
            parts = urlsplit(value)
            port = parts.port  # raises on a non-numeric or out-of-range port
        except ValueError:
            parts = port = None
        if parts and parts.scheme in ("http", "https") and parts.hostname and port != 0 \
                and not parts.query and not parts.fragment:
            return value
    raise InputError(f"{where}: {label} must be an http:// or https:// URL with a host "
                     f"(e.g. http://127.0.0.1:8080/v1), got {value!r}")


def build_judge(data: Mapping[str, Any], *, where: str = "judge", flags: Mapping[str, str] | None = None) -> JudgeSpec:
    """A validated JudgeSpec from a config mapping.

    ``flags`` names the command-line flag a field came from, for messages ("--timeout"
    rather than "timeout_s"; "params" -> "--param" gives "--param temperature").
    """
    from judges.providers.base import get_provider

    flags = flags or {}

    def label(name: str) -> str:
        return flags.get(name, name)

    def param_label(key: str) -> str:
        return f"{flags['params']} {key}" if "params" in flags else f"params.{key}"

    def setting(name: str, default: Any) -> Any:
        value = data.get(name, default)
        return None if value is None and default is None else _setting(where, label(name), value, _SETTINGS[name])

    from judges.engines import engine_names, get_engine

    unknown = sorted(set(data) - _FIELDS - set(engine_names()))
    if unknown:
        raise InputError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(_FIELDS)}")
    for key in ("provider", "model"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise InputError(f"{where}: {key} is required (a non-empty string)")
    provider, model = data["provider"], data["model"]
    kind = get_provider(provider, where=where)
    if kind.models is not None and model not in kind.models():
        raise InputError(f"{where}: {provider} model {model!r} is not one of {kind.models()}")
    if not kind.prompt:
        assert kind.model_output is not None  # ProviderKind refuses a prompt-less provider without it
        if "prompt" in data:
            raise InputError(f"{where}: a {provider} judge takes no prompt")
        prompt = None
        output, kinds = kind.model_output(model)
    else:
        if not isinstance(data.get("prompt"), str):
            raise InputError(f"{where}: prompt is required: a shipped prompt name or a .toml prompt file path")
        prompt = resolve_prompt(data["prompt"])
        output, kinds = prompt.output, prompt.unit_kinds
    get_output_kind(output)
    parse_mode = data.get("parse_mode", "strict")
    if parse_mode not in PARSE_MODES:
        raise InputError(f"{where}: parse_mode must be one of {list(PARSE_MODES)}, got {parse_mode!r}")
    params = data.get("params", {})
    if not isinstance(params, Mapping):
        raise InputError(f"{where}: params must be a table, got {params!r}")
    bad = sorted(set(params) - set(kind.params))
    if bad and not kind.params:
        raise InputError(f"{where}: a {provider} judge takes no params")
    if bad:
        raise InputError(f"{where}: params {bad} not allowed; allowed: {list(kind.params)}")
    api = data.get("api", kind.apis[0])
    if api not in kind.apis:
        raise InputError(f"{where}: api must be one of {list(kind.apis)} for provider {provider!r}, got {api!r}")
    name = data.get("name") or (f"{prompt.name}@{provider}:{model}" if prompt is not None else f"{provider}:{model}")
    engine = data.get("engine", DEFAULT_ENGINE)
    if engine not in engine_names():
        raise InputError(f"{where}: {label('engine')} must be one of {engine_names()}, got {engine!r}")
    stray = sorted(set(data) & set(engine_names()) - {engine})
    if stray:
        raise InputError(f"{where}: options table(s) {stray} given but the engine is {engine!r}")
    runs = get_engine(engine)
    if runs.remote and kind.in_process:
        raise InputError(f"{where}: a {provider} judge runs in the local process; engine {engine!r} is for model calls")
    options = None
    if runs.remote:
        table = data.get(engine, {})
        if not isinstance(table, Mapping):
            raise InputError(f"{where}: {engine} must be a table of engine options, got {table!r}")
        options = get_engine(engine).options(f"{where} {engine}", table)
    return JudgeSpec(
        name=str(name), provider=provider, model=model, prompt=prompt, output=output, unit_kinds=kinds,
        parse_mode=parse_mode, samples=setting("samples", 1), params=_params(where, param_label, params),
        connection=ProviderConfig(
            base_url=_base_url(where, label("base_url"), data.get("base_url")), api_key_env=data.get("api_key_env"),
            api=api, timeout_s=setting("timeout_s", DEFAULT_TIMEOUT_S),
        ),
        concurrency=setting("concurrency", DEFAULT_CONCURRENCY),
        requests_per_minute=setting("requests_per_minute", None),
        tokens_per_minute=setting("tokens_per_minute", None),
        max_retries=setting("max_retries", DEFAULT_MAX_RETRIES),
        backoff_s=setting("backoff_s", DEFAULT_BACKOFF_S),
        max_backoff_s=setting("max_backoff_s", DEFAULT_MAX_BACKOFF_S),
        engine=engine, engine_options=options,
    )


def parse_judge_ref(ref: str) -> dict[str, Any]:
    """``PROMPT@PROVIDER:MODEL`` or ``rule:MODEL`` -> a config mapping."""
    from judges.providers.base import get_provider, provider_names

    head, colon, tail = ref.partition(":")
    if "@" not in head and colon and head in provider_names() and not get_provider(head).prompt:
        return {"provider": head, "model": tail}
    prompt, sep, target = ref.partition("@")
    provider, colon, model = target.partition(":")
    if not sep or not colon or not prompt or not provider or not model:
        raise InputError(f"--judge {ref!r}: expected PROMPT@PROVIDER:MODEL (e.g. ise-escalate@local:smollm2) or rule:MODEL")
    return {"prompt": prompt, "provider": provider, "model": model}


def load_judges(path: str | Path) -> list[JudgeSpec]:
    """Every ``[[judge]]`` table of a TOML file (a judges file or study.toml)."""
    data, _ = load_toml(path, "judges config")
    tables = data.get("judge", [])
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{path}: no [[judge]] tables")
    judges = [build_judge(t, where=f"{path} [[judge]] #{i + 1}") for i, t in enumerate(tables)]
    names = [j.name for j in judges]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"{path}: judge names must be unique; repeated: {duplicates}")
    return judges
