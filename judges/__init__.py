"""LLM judges and rule classifiers over units: cached, resumable, every prompt versioned."""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "JudgeLabel": "samples.records",
    "JudgeSpec": "judges.spec",
    "build_judge": "judges.spec",
    "load_judges": "judges.spec",
    "parse_judge_ref": "judges.spec",
    "PromptSpec": "judges.prompts",
    "load_prompt": "judges.prompts",
    "builtin_prompts": "judges.prompts",
    "parse_output": "judges.parsers",
    "register_output_kind": "judges.parsers",
    "OutputKind": "judges.parsers",
    "Provider": "judges.providers.base",
    "ProviderConfig": "judges.providers.base",
    "Completion": "judges.providers.base",
    "CallError": "judges.providers.base",
    "register_provider": "judges.providers.base",
    "provider_names": "judges.providers.base",
    "RequestCache": "judges.cache",
    "PriceTable": "judges.prices",
    "StudyPaths": "judges.runner",
    "RunSummary": "judges.runner",
    "run_judges": "judges.runner",
    "read_units": "judges.tables",
    "read_labels": "judges.tables",
    "read_label_rows": "judges.tables",
    "JudgeStats": "judges.runner",
    "build_tasks": "judges.runner",
    "write_batch": "judges.batch",
    "import_batch_results": "judges.batch",
    "LlamaServer": "judges.local_server",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports('judges', _EXPORTS)
