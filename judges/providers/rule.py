"""`rule` provider: deterministic Python classifiers run as judges (no network, no cache).

Models:
- ``ehq``: the EHQ paper's own classifier, ``ehq.evaluation.classifier.classify_response``
  (section 3.3 rules). It needs the EHQ item with its gold answer; a ``response`` unit
  carries it in ``Unit.reference["ehq_item"]`` (the EHQ-3000 item dict: ``question_id``,
  ``category``, ``correct_answer``, ``acceptable_answers``, ...). Its output text is the
  class name; ``raw`` keeps the trigger-level reasons. An empty response is a technical
  failure in ehq (it raises) and comes back as empty text, so the parser marks it
  unscored ``empty``.
- ``aggarwal``: passes the response through unchanged so the ``decision`` output kind's
  strict (``DECISION:`` only) and semantic parsers of Aggarwal (section 2, Appendix C)
  read it; the judge's parse mode picks which one is reported, both are recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from samples.errors import InputError

from judges.providers.base import CallError, Completion, ProviderConfig, register_provider

EHQ_ITEM_KEY = "ehq_item"
RULE_OUTPUT_KIND = {"ehq": "ehq4", "aggarwal": "decision"}


def rule_version(model: str) -> str:
    """What identifies the classifier's rules in a fingerprint."""
    if model == "ehq":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"ehq=={version('ehq')}"
        except PackageNotFoundError:
            raise InputError("the ehq rule judge needs the ehq package: pip install 'accord[judges]'") from None
    return "aggarwal-parsers/1"


class RuleProvider:
    name = "rule"
    cacheable = False

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config

    def build_request(self, *, model: str, system: str | None, user: str, params: Mapping[str, Any],
                      output_kind: str, sample_index: int, unit: Any) -> dict[str, Any]:
        if model not in RULE_OUTPUT_KIND:
            raise InputError(f"rule provider: unknown model {model!r}; known: {sorted(RULE_OUTPUT_KIND)}")
        request: dict[str, Any] = {"provider": self.name, "model": model, "response": user, "version": rule_version(model)}
        if model == "ehq":
            item = unit.reference.get(EHQ_ITEM_KEY)
            if not isinstance(item, Mapping) or "correct_answer" not in item:
                raise InputError(
                    f"unit {unit.unit_id}: the ehq rule judge needs reference[{EHQ_ITEM_KEY!r}], the EHQ item "
                    "with its gold 'correct_answer' (and optional 'acceptable_answers')"
                )
            request["item"] = dict(item)
        return request

    async def complete(self, request: Mapping[str, Any]) -> Completion:
        if request["model"] == "aggarwal":
            return Completion(text=request["response"], truncated=False, input_tokens=None, output_tokens=None)
        from ehq.evaluation.classifier import classify_response

        try:
            result = classify_response(request["response"], request["item"])
        except ValueError as error:
            if request["response"] and request["response"].strip():
                raise CallError(f"ehq classifier failed: {error}", retryable=False) from None
            return Completion(text="", truncated=False, input_tokens=None, output_tokens=None,
                              raw={"ehq_error": str(error)})
        return Completion(text=result.label, truncated=False, input_tokens=None, output_tokens=None,
                          raw={"label": result.label, "reasons": list(result.reasons), "is_correct": result.is_correct})

    def completion_from_raw(self, raw: Mapping[str, Any]) -> Completion:
        return Completion(text=str(raw.get("label", "")), truncated=False, input_tokens=None, output_tokens=None, raw=dict(raw))

    async def aclose(self) -> None:
        return None


register_provider("rule", RuleProvider)
