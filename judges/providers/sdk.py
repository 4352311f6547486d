"""The `openai` and `anthropic` providers (official SDKs) and `local` (llama-server).

llama-server speaks both wire formats, so `local` is the same two SDK paths with a
loopback base URL, llama.cpp's constrained decoding (GBNF grammar / json_schema) for
the output kind, and ``cache_prompt: false`` so output does not depend on earlier
requests. Constrained decoding and ``cache_prompt: false`` exist on the OpenAI path
only: llama-server's Anthropic endpoint converts requests without passing them
through, so use the OpenAI path where determinism matters. ISE judges run
with no max_tokens cap (App. A.3); the Anthropic Messages API requires one, so an
Anthropic judge must set ``max_tokens`` explicitly. ``params.constrain`` (default: on
for `local`) switches constrained decoding; on hosted OpenAI it adds a json_schema
response format for the Identify JSON output.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Mapping
from typing import Any

from judges.parsers import get_output_kind
from judges.providers.base import (
    ANTHROPIC_API,
    CONTEXT_EXCEEDED,
    JUDGE_PARAMS,
    OPENAI_API,
    CallError,
    Completion,
    ProviderConfig,
    parse_retry_after,
    register_provider,
    status_is_retryable,
)
from samples import InputError


def llama_constraint(output_kind: str) -> dict[str, Any]:
    """llama-server body fields forcing the output into the kind's format (its JSON shape or its choices)."""
    kind = get_output_kind(output_kind)
    if kind.json_schema is not None:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": kind.scheme, "schema": kind.json_schema}}}
    if not kind.choices:
        return {}
    return {"grammar": "root ::= " + " | ".join(json.dumps(w) for w in kind.choices)}


def _split_kwargs(method: Any, body: Mapping[str, Any]) -> dict[str, Any]:
    """SDK keyword arguments for ``body``; fields the SDK does not name go in extra_body."""
    known = set(inspect.signature(method).parameters)
    kwargs = {k: v for k, v in body.items() if k in known}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _api_key(config: ProviderConfig, default_env: str, *, required: bool) -> str:
    env = config.api_key_env or default_env
    key = os.environ.get(env)
    if key:
        return key
    if required:
        raise InputError(f"provider needs an API key in ${env} (set it, or api_key_env in the judge config)")
    return "no-key-needed"


LLAMA_CONTEXT_ERROR = "exceed_context_size_error"
"""llama-server's error type for a request longer than a slot's context (HTTP 400, with n_prompt_tokens, n_ctx)."""


def _status_error(error: Any) -> CallError:
    status = int(getattr(error, "status_code", 0) or 0)
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    body = getattr(error, "body", None)
    info = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(info, dict) and info.get("type") == LLAMA_CONTEXT_ERROR:
        return CallError(f"the request needs {info.get('n_prompt_tokens')} tokens; the server's context holds "
                         f"{info.get('n_ctx')} per request", retryable=False, status=status, reason=CONTEXT_EXCEEDED)
    return CallError(
        f"HTTP {status}: {str(error)[:300]}",
        retryable=status_is_retryable(status), status=status, retry_after=parse_retry_after(headers.get("retry-after")),
    )


def _refused(error: BaseException) -> bool:
    """A refused connection means no server is listening: retrying only delays the report."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class _SdkProvider:
    """Common request shape: {'provider', 'api', 'model', 'body'} where body is the wire JSON."""

    cacheable = True

    def __init__(self, name: str, config: ProviderConfig, *, key_required: bool, local: bool) -> None:
        self.name = name
        self.config = config
        self.local = local
        self.context_tokens = _local_context(config) if local else None
        self._key_required = key_required
        # Built now, not on the first call: importing an SDK takes about a second, which
        # must not count against the first call's timeout.
        self._client: Any = self._make_client()

    # ---- request shape
    def build_request(self, *, model: str, system: str | None, user: str, params: Mapping[str, Any],
                      output_kind: str, sample_index: int, unit: Any) -> dict[str, Any]:
        params = dict(params)
        constrain = bool(params.pop("constrain", self.local))
        body = self._body(model=model, system=system, user=user, params=params)
        if self.local:
            body["cache_prompt"] = False
            if constrain and self.config.api == "openai":
                body.update(llama_constraint(output_kind))
        elif constrain and get_output_kind(output_kind).object_schema is not None and self.config.api == "openai":
            kind = get_output_kind(output_kind)
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": kind.scheme, "strict": True, "schema": kind.object_schema}}
        return {"provider": self.name, "api": self.config.api, "model": model, "body": body, "sample_index": sample_index}

    def _body(self, *, model: str, system: str | None, user: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.config.api == "anthropic":
            if "max_tokens" not in params:
                raise InputError(
                    f"provider {self.name!r} with the Anthropic Messages API needs params.max_tokens "
                    "(the API requires it; ISE's 'no cap' cannot be expressed)"
                )
            body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": user}], **params}
            if system:
                body["system"] = system
            return body
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        return {"model": model, "messages": messages, **params}

    # ---- calls
    def _make_client(self) -> Any:
        # llama-server's router closes every connection after a reply while announcing
        # keep-alive, so a pooled connection may be dead on reuse; one connection per
        # request avoids that race with local servers at no cost.
        headers = {"Connection": "close"} if self.local else None
        if self.config.api == "anthropic":
            try:
                import anthropic
            except ImportError:
                raise InputError("the anthropic provider needs the anthropic SDK: pip install 'accord[judges]'") from None
            kwargs: dict[str, Any] = {"api_key": _api_key(self.config, "ANTHROPIC_API_KEY", required=self._key_required)}
            if self.config.base_url:
                kwargs["base_url"] = self.config.base_url
            return anthropic.AsyncAnthropic(max_retries=0, timeout=self.config.timeout_s, default_headers=headers, **kwargs)
        try:
            import openai
        except ImportError:
            raise InputError("the openai provider needs the openai SDK: pip install 'accord[judges]'") from None
        kwargs = {"api_key": _api_key(self.config, "OPENAI_API_KEY", required=self._key_required)}
        if self.config.base_url:
            kwargs["base_url"] = self.config.base_url
        return openai.AsyncOpenAI(max_retries=0, timeout=self.config.timeout_s, default_headers=headers, **kwargs)

    async def complete(self, request: Mapping[str, Any]) -> Completion:
        client = self._client
        anthropic_api = self.config.api == "anthropic"
        sdk = __import__("anthropic" if anthropic_api else "openai")
        method = client.messages.create if anthropic_api else client.chat.completions.create
        try:
            response = await method(**_split_kwargs(method, request["body"]))
        except sdk.APIStatusError as error:
            raise _status_error(error) from None
        except sdk.APITimeoutError:
            raise CallError("timeout", retryable=True) from None
        except sdk.APIConnectionError as error:
            if _refused(error):
                raise CallError(f"no server at {client.base_url} (connection refused)", retryable=False) from None
            raise CallError(f"connection error: {error}", retryable=True) from None
        except (sdk.APIResponseValidationError, json.JSONDecodeError, ValueError) as error:
            raise CallError(f"malformed response: {str(error)[:200]}", retryable=True) from None
        raw = response.model_dump(mode="json") if hasattr(response, "model_dump") else response
        if not isinstance(raw, dict):
            raise CallError(f"malformed response: {str(raw)[:200]!r}", retryable=True)
        return self.completion_from_raw(raw)

    def completion_from_raw(self, raw: Mapping[str, Any]) -> Completion:
        try:
            if self.config.api == "anthropic":
                text = "".join(block.get("text") or "" for block in raw["content"] if block.get("type") == "text")
                usage = raw.get("usage") or {}
                # Anthropic's input_tokens excludes prompt-cache reads and writes; the prompt's
                # size is their sum (cost accounting then prices cache reads at the full rate).
                parts = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
                prompt_tokens = None if usage.get("input_tokens") is None else sum(p or 0 for p in parts)
                return Completion(text=text, truncated=raw.get("stop_reason") == "max_tokens",
                                  input_tokens=prompt_tokens, output_tokens=usage.get("output_tokens"), raw=dict(raw))
            choice = raw["choices"][0]
            usage = raw.get("usage") or {}
            return Completion(text=(choice.get("message") or {}).get("content") or "",
                              truncated=choice.get("finish_reason") == "length",
                              input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens"),
                              raw=dict(raw))
        except (KeyError, IndexError, TypeError, AttributeError) as error:
            raise CallError(f"malformed response: missing {error}", retryable=True) from None

    async def aclose(self) -> None:
        await self._client.close()


def _local_context(config: ProviderConfig) -> int | None:
    """Tokens one request may fill on the local server `accord judges serve` started (its context per slot);
    None for a server at another address (its limit is unknown until it refuses a request)."""
    from judges.local_server import read_state

    state = read_state()
    if state is None or not str(config.base_url or "").startswith(str(state.get("base_url", "")).rstrip("/")):
        return None
    return state.get("context_per_slot")


def _local_base_url(config: ProviderConfig) -> ProviderConfig:
    """`local` defaults to the server `accord judges serve` started (its state file)."""
    if config.base_url:
        url = config.base_url
    else:
        from judges.local_server import read_state

        state = read_state()
        if state is None:
            raise InputError("no local llama-server is running: start one with `accord judges serve` or set base_url")
        url = state["base_url"]
    if config.api == "openai" and not url.rstrip("/").endswith("/v1"):
        url = url.rstrip("/") + "/v1"
    return ProviderConfig(base_url=url, api_key_env=config.api_key_env, api=config.api, timeout_s=config.timeout_s)


def _check_api(name: str, config: ProviderConfig, allowed: tuple[str, ...]) -> ProviderConfig:
    if config.api not in allowed:
        raise InputError(f"provider {name!r}: api must be one of {list(allowed)}, got {config.api!r}")
    return config


# A key is required for the hosted endpoints; a custom base_url (vLLM, llama-server) may need none.
register_provider(
    "openai", lambda c: _SdkProvider("openai", _check_api("openai", c, ("openai",)), key_required=not c.base_url, local=False),
    params=JUDGE_PARAMS, apis=(OPENAI_API,), wire_body=True, api_key_env="OPENAI_API_KEY", batch_format="openai",
)
register_provider(
    "anthropic",
    lambda c: _SdkProvider(
        "anthropic",
        _check_api("anthropic", ProviderConfig(base_url=c.base_url, api_key_env=c.api_key_env, api="anthropic", timeout_s=c.timeout_s),
                   ("anthropic",)),
        key_required=not c.base_url, local=False,
    ),
    params=JUDGE_PARAMS, apis=(ANTHROPIC_API,), wire_body=True, api_key_env="ANTHROPIC_API_KEY",
    batch_format="anthropic",
)
register_provider(
    "local",
    lambda c: _SdkProvider("local", _local_base_url(_check_api("local", c, ("openai", "anthropic"))), key_required=False, local=True),
    params=JUDGE_PARAMS, apis=(OPENAI_API, ANTHROPIC_API), wire_body=True, local_server=True,
)
