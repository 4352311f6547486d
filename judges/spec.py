"""Judge specifications: prompt + unit kinds + parser + provider + model + parameters.

Judges come from TOML (``[[judge]]`` tables, in a judges file or study.toml) or from a
short CLI form ``PROMPT@PROVIDER:MODEL`` (``ise-escalate@local:smollm2``) /
``rule:MODEL`` (``rule:ehq``, ``rule:aggarwal``). Everything is validated here, where
the judge is built, with messages naming the field, the value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samples.canonical import sha256_hex
from samples.errors import InputError

from judges.parsers import PARSE_MODES, get_output_kind
from judges.prompts import PromptSpec, resolve_prompt
from judges.providers.base import ProviderConfig
from judges.tomlfile import load_toml

# Operational defaults (how hard to push a provider), not decision thresholds; each is
# overridable per judge. ISE calls judges at temperature 1 with no max_tokens cap.
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 5
DEFAULT_BACKOFF_S = 1.0
DEFAULT_MAX_BACKOFF_S = 60.0

_FIELDS = {
    "name", "prompt", "provider", "model", "api", "base_url", "api_key_env", "parse_mode", "samples", "params",
    "concurrency", "requests_per_minute", "tokens_per_minute", "timeout_s", "max_retries", "backoff_s", "max_backoff_s",
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

    def fingerprint_parts(self, unit_set_hash: str, accord_version: str) -> dict[str, Any]:
        from judges.providers.rule import rule_version

        return {
            "judge": self.name, "provider": self.provider, "api": self.connection.api, "model": self.model,
            "prompt_sha256": self.prompt.sha256 if self.prompt else None,
            "rule": rule_version(self.model) if self.provider == "rule" else None,
            "output": self.output, "parse_mode": self.parse_mode, "samples": self.samples,
            "params": dict(self.params), "unit_set": unit_set_hash, "accord_version": accord_version,
        }

    def fingerprint(self, unit_set_hash: str, accord_version: str) -> str:
        return sha256_hex(self.fingerprint_parts(unit_set_hash, accord_version))


def _positive(where: str, name: str, value: Any, *, integer: bool, allow_none: bool = False) -> Any:
    if value is None and allow_none:
        return None
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value <= 0:
        kind = "a positive integer" if integer else "a positive number"
        raise InputError(f"{where}: {name} must be {kind}, got {value!r}")
    return value


def build_judge(data: Mapping[str, Any], *, where: str = "judge") -> JudgeSpec:
    """A validated JudgeSpec from a config mapping."""
    from judges.providers.base import provider_names
    from judges.providers.rule import RULE_OUTPUT_KIND
    from judges.providers.sdk import JUDGE_PARAMS

    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise InputError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(_FIELDS)}")
    for key in ("provider", "model"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise InputError(f"{where}: {key} is required (a non-empty string)")
    provider, model = data["provider"], data["model"]
    if provider not in provider_names():
        raise InputError(f"{where}: provider {provider!r} is not one of {provider_names()}")
    if provider == "rule":
        if model not in RULE_OUTPUT_KIND:
            raise InputError(f"{where}: rule model {model!r} is not one of {sorted(RULE_OUTPUT_KIND)}")
        if "prompt" in data:
            raise InputError(f"{where}: a rule judge takes no prompt")
        prompt, output, kinds = None, RULE_OUTPUT_KIND[model], ("response",)
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
    bad = sorted(set(params) - set(JUDGE_PARAMS))
    if provider != "rule" and bad:
        raise InputError(f"{where}: params {bad} not allowed; allowed: {list(JUDGE_PARAMS)}")
    if provider == "rule" and params:
        raise InputError(f"{where}: a rule judge takes no params")
    api = data.get("api", "anthropic" if provider == "anthropic" else "openai")
    if api not in ("openai", "anthropic"):
        raise InputError(f"{where}: api must be 'openai' or 'anthropic', got {api!r}")
    name = data.get("name") or (f"rule:{model}" if provider == "rule" else f"{prompt.name}@{provider}:{model}")
    return JudgeSpec(
        name=str(name), provider=provider, model=model, prompt=prompt, output=output, unit_kinds=kinds,
        parse_mode=parse_mode, samples=_positive(where, "samples", data.get("samples", 1), integer=True),
        params=dict(params),
        connection=ProviderConfig(
            base_url=data.get("base_url"), api_key_env=data.get("api_key_env"), api=api,
            timeout_s=_positive(where, "timeout_s", data.get("timeout_s", DEFAULT_TIMEOUT_S), integer=False),
        ),
        concurrency=_positive(where, "concurrency", data.get("concurrency", DEFAULT_CONCURRENCY), integer=True),
        requests_per_minute=_positive(where, "requests_per_minute", data.get("requests_per_minute"), integer=False, allow_none=True),
        tokens_per_minute=_positive(where, "tokens_per_minute", data.get("tokens_per_minute"), integer=False, allow_none=True),
        max_retries=_nonnegative_int(where, "max_retries", data.get("max_retries", DEFAULT_MAX_RETRIES)),
        backoff_s=_positive(where, "backoff_s", data.get("backoff_s", DEFAULT_BACKOFF_S), integer=False),
        max_backoff_s=_positive(where, "max_backoff_s", data.get("max_backoff_s", DEFAULT_MAX_BACKOFF_S), integer=False),
    )


def _nonnegative_int(where: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: {name} must be an integer >= 0, got {value!r}")
    return value


def parse_judge_ref(ref: str) -> dict[str, Any]:
    """``PROMPT@PROVIDER:MODEL`` or ``rule:MODEL`` -> a config mapping."""
    if ref.startswith("rule:"):
        return {"provider": "rule", "model": ref.split(":", 1)[1]}
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
