"""LLM judges and rule classifiers over units: cached, resumable, every prompt versioned."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # where each public name lives: type checkers read it, lazy_exports imports it on first use
    from judges.batch import import_batch_results, write_batch
    from judges.cache import RequestCache
    from judges.engines import engine_names, get_engine
    from judges.imports import judge_import
    from judges.local_server import LlamaServer, read_state, stop_named
    from judges.parsers import OUTPUT_KINDS, PARSE_MODES, OutputKind, parse_output, register_output_kind
    from judges.prices import PriceTable
    from judges.prompts import PromptSpec, builtin_prompts, load_prompt
    from judges.providers.base import (
        CallError,
        Completion,
        Provider,
        ProviderConfig,
        api_names,
        get_provider,
        provider_names,
        register_provider,
    )
    from judges.providers.rule import rule_names
    from judges.ray_engine import parse_options
    from judges.runner import JudgeStats, RunSummary, StudyPaths, accord_version, build_tasks, run_judges
    from judges.spec import JudgeSpec, build_judge, load_judges, parse_judge_ref
    from judges.tables import read_label_rows, read_labels, read_units
else:
    from samples import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = [
    # judges.batch: Batch submission files: OpenAI Batch API and Anthropic Message Batches
    "import_batch_results",
    "write_batch",
    # judges.cache: Content-addressed request cache in SQLite: sha256(canonical request) -> response
    "RequestCache",
    # judges.engines: Where a run's uncached calls are answered: the engine extension point (a Protocol and a registry)
    "engine_names",
    "get_engine",
    # judges.imports: Importing judge verdicts people already have into a study's judge labels table
    "judge_import",
    # judges.local_server: Start and stop llama.cpp's llama-server with the two local judge models
    "LlamaServer",
    "read_state",
    "stop_named",
    # judges.parsers: Output parsers: a judge's raw text -> a canonical label, or *unscored* with a reason
    "OUTPUT_KINDS",
    "OutputKind",
    "PARSE_MODES",
    "parse_output",
    "register_output_kind",
    # judges.prices: Token cost accounting from a price table file (judges/prices.toml by default)
    "PriceTable",
    # judges.prompts: Versioned judge prompt files: the shipped ISE prompts and any the user adds
    "PromptSpec",
    "builtin_prompts",
    "load_prompt",
    # judges.providers.base: The provider extension point: a Protocol, its value types and a registry
    "CallError",
    "Completion",
    "Provider",
    "ProviderConfig",
    "api_names",
    "get_provider",
    "provider_names",
    "register_provider",
    # judges.providers.rule: `rule` provider: deterministic Python classifiers run as judges (no network, no cache)
    "rule_names",
    # judges.ray_engine: The ``ray`` engine: a run's uncached calls answered on a Ray cluster through ``ray.data.llm``
    "parse_options",
    # judges.runner: The judge runner: units x judges x samples -> the labels table, cached and resumable
    "JudgeStats",
    "RunSummary",
    "StudyPaths",
    "accord_version",
    "build_tasks",
    "run_judges",
    # judges.spec: Judge specifications: prompt + unit kinds + parser + provider + model + parameters
    "JudgeSpec",
    "build_judge",
    "load_judges",
    "parse_judge_ref",
    # judges.tables: Reading units; the judge labels table, its append-only log and the run log
    "read_label_rows",
    "read_labels",
    "read_units",
]
