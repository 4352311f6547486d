"""Which calls share a concurrency/rate limiter."""

from __future__ import annotations

from judges.runner import _endpoint
from judges.spec import build_judge


def _spec(provider: str, model: str):
    return build_judge({"prompt": "ise-escalate", "provider": provider, "model": model,
                        "base_url": "http://127.0.0.1:8080/v1"})


def test_local_models_behind_one_router_get_their_own_limiter() -> None:
    # llama-server's router runs each model in its own process: one model's queue must not
    # hold back the other's, or a two-model study uses one core of two.
    assert _endpoint(_spec("local", "smollm2")) != _endpoint(_spec("local", "gemma3-270m"))


def test_hosted_models_share_their_provider_endpoint_limiter() -> None:
    assert _endpoint(_spec("openai", "gpt-5")) == _endpoint(_spec("openai", "gpt-5-mini"))
