"""The package's public API: every lazy export resolves, and providers register like third parties."""

from __future__ import annotations

import judges
from judges.providers.base import Completion, ProviderConfig, make_provider, provider_names, register_provider
from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_labels
from tests.judges.units import escalate_units


def test_every_export_resolves() -> None:
    for name in judges.__all__:
        assert getattr(judges, name) is not None, name


class EchoProvider:
    """A third-party provider: answers YES to texts containing 'disagree', else NO."""

    name = "echo-test"
    cacheable = True

    def __init__(self, config: ProviderConfig) -> None:
        self.calls = 0

    def build_request(self, *, model, system, user, params, output_kind, sample_index, unit):
        return {"provider": self.name, "model": model, "system": system, "user": user, "sample_index": sample_index}

    async def complete(self, request):
        return self.completion_from_raw({"text": "YES" if "disagree" in request["user"] else "NO"})

    def completion_from_raw(self, raw):
        return Completion(text=raw["text"], truncated=False, input_tokens=10, output_tokens=1, raw=dict(raw))

    async def aclose(self) -> None:
        return None


def test_a_registered_provider_runs_like_a_builtin(tmp_path) -> None:
    if "echo-test" not in provider_names():
        register_provider("echo-test", EchoProvider)
    assert isinstance(make_provider("echo-test", ProviderConfig()), judges.Provider)
    units = escalate_units(3)
    units = [u.model_copy(update={"text": u.text + " Two sources disagree on the year."}) for u in units[:2]] + units[2:]
    judge = build_judge({"prompt": "ise-escalate", "provider": "echo-test", "model": "echo"})
    summary = run_judges(units, [judge], StudyPaths.in_dir(tmp_path))
    assert summary.judges[0].cost_usd is None  # no price for a provider the price table does not know
    labels = {k[0]: r.label for k, r in read_labels(tmp_path / "labels.jsonl").items()}
    assert [labels[u.unit_id] for u in units] == ["yes", "yes", "no"]
