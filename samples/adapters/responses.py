"""``responses``: single-turn model responses (EHQ-style coder studies, Aggarwal et al.).

One record = one response of one model to one item. Fields are found by name
(first match wins; override with options): text in ``response``/``raw``/
``output``/``completion``, model in ``model``/``model_id``, item id in
``item_id``/``id``, category in ``category``/``topic``/``arm``. The trajectory id is
``<model>::<item id>`` (items repeat across models), the response is the single
final step, the category goes to ``metadata`` and is offered as a stratum. A null
text (the model returned nothing, e.g. its token budget went to reasoning) is a
real observation: it is loaded as a truncated run with no final answer, and unit
cutting reports it instead of producing an empty response unit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from samples.adapters import register_adapter
from samples.adapters.base import (
    AdapterBase,
    BadRecord,
    FieldProblem,
    Item,
    check_options,
    convert,
    get_str,
    iter_source,
    string_list,
)
from samples.records import Step, Trajectory
from samples.vocabulary import infer_family

_FIELDS = {
    "text_field": ("response", "raw", "output", "completion"),
    "model_field": ("model", "model_id"),
    "id_field": ("item_id", "id"),
    "category_field": ("category", "topic", "arm"),
}
OPTIONS = {
    **{key: f"record field holding the {key[:-6]} (default: first of {list(names)})" for key, names in _FIELDS.items()},
    "agent": "agent name (default 'none': single-turn responses have no harness)",
    "dataset": "dataset name (default: the file's stem)",
}


def _pick(raw: dict[str, Any], options: Mapping[str, str], key: str) -> str | None:
    if key in options:
        return options[key]
    return next((name for name in _FIELDS[key] if name in raw), None)


class ResponsesAdapter(AdapterBase):
    name = "responses"
    summary = "single-turn responses with a model id (EHQ-style; Aggarwal scramfull)"
    options = OPTIONS

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        check_options(self.name, options, self.options)

        def build(raw: dict[str, Any]) -> Trajectory:
            fields = {key: _pick(raw, options, key) for key in _FIELDS}
            for key in ("text_field", "model_field", "id_field"):
                if fields[key] is None:
                    raise FieldProblem(_FIELDS[key][0], f"one of {list(_FIELDS[key])} (or set option {key})", missing=True)
            if fields["text_field"] not in raw:
                raise FieldProblem(fields["text_field"], "the response text (null for an empty response)", missing=True)
            text = get_str(raw, fields["text_field"], required=False)
            model = get_str(raw, fields["model_field"])
            item = get_str(raw, fields["id_field"], numbers=True)
            used = {v for v in fields.values() if v}
            metadata = {k: v for k, v in raw.items() if k not in used}
            if fields["category_field"]:
                metadata["category"] = get_str(raw, fields["category_field"])
            return Trajectory(
                id=f"{model}::{item}", agent=options.get("agent", "none"), backbone=model, family=infer_family(model),
                dataset=options.get("dataset", path.stem),
                question=get_str(raw, "question", required=False, default="") or "",
                references=string_list(raw.get("reference", raw.get("references")), "reference"),
                steps=[Step(index=0, role="assistant", text=text, is_final=text is not None)],
                final_answer=text, truncated=text is None, metadata={"item_id": item, **metadata},
            )

        for where, raw in iter_source(path):
            yield where, (raw if isinstance(raw, BadRecord) else convert(where, build, raw))


register_adapter(ResponsesAdapter())
