"""Run LLM judges and rule classifiers over units (cached, resumable); list prompts; batch files.

  accord judge run --study STUDY --judge ise-escalate@local:smollm2 [--dry-run] [--json]
  accord judge run --study STUDY --config judges.toml
  accord judge run --study STUDY --config judges.toml --engine ray --ray-address HOST:6379 [--ray-endpoint URL ...]
  accord judge list [--config judges.toml] [--json]
  accord judge batch-write --study STUDY --config judges.toml --out DIR
  accord judge batch-import RESULTS.jsonl --requests DIR/<judge>.requests.jsonl --study STUDY

A judge is PROMPT@PROVIDER:MODEL (a shipped prompt name or a .toml prompt file) or
rule:ehq / rule:aggarwal; a config file holds [[judge]] tables with every setting.
Labels go to STUDY/judges/labels.jsonl (rebuilt at the end of each run from the
append-only STUDY/judges/label_log.jsonl), the request cache to STUDY/judges/cache.sqlite,
the append-only run log to STUDY/judges/runs.jsonl. Unscored outputs are counted. One run
at a time writes a study: a second is refused (exit 2) with the running one's pid.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from apps.choices import Choices, apis, engines, parse_modes

    sub = parser.add_subparsers(dest="action", required=True, metavar="{run,list,batch-write,batch-import}")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--study", type=Path, default=Path("."), help="study folder (default: current folder)")
        p.add_argument("--units", type=Path, help="units JSONL (default: STUDY/sample/sample.jsonl, else STUDY/units.jsonl)")
        p.add_argument("--config", type=Path, help="TOML with [[judge]] tables (default: STUDY/study.toml when it has them)")
        p.add_argument("--judge", action="append", default=[], metavar="REF",
                       help="PROMPT@PROVIDER:MODEL or rule:MODEL (repeatable)")
        p.add_argument("--base-url", help="base URL for --judge judges (OpenAI-compatible or Anthropic server)")
        p.add_argument("--api", choices=Choices(apis), metavar="API",
                       help="wire API for --judge judges of the local provider: %(choices)s")
        p.add_argument("--parse-mode", choices=Choices(parse_modes), type=str.lower, metavar="MODE",
                       help="reported parse mode for --judge judges: %(choices)s")
        p.add_argument("--samples", type=int, help="self-consistency samples per unit for --judge judges")
        p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="judge parameter for --judge judges, VALUE as JSON (e.g. temperature=0, max_tokens=16)")
        p.add_argument("--timeout", type=float, help="per-call timeout in seconds for --judge judges")
        p.add_argument("--concurrency", type=int, help="concurrent calls per endpoint for --judge judges")
        p.add_argument("--cache", type=Path, help="request cache (default: STUDY/judges/cache.sqlite)")
        p.add_argument("--json", action="store_true", help="machine-readable output")

    run = sub.add_parser("run", help="label units with judges")
    common(run)
    run.add_argument("--prices", type=Path, help="price table (default: judges/prices.toml)")
    run.add_argument("--dry-run", action="store_true", help="print the calls and estimated tokens; call nothing")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--engine", choices=Choices(engines), metavar="ENGINE",
                     help="where uncached calls run, for every judge of the run: %(choices)s (default: each judge's "
                          "engine setting)")
    run.add_argument("--ray-address", help="Ray cluster address (HOST:PORT) for --engine ray (default: $RAY_ADDRESS)")
    run.add_argument("--ray-endpoint", action="append", default=[], metavar="URL",
                     help="OpenAI-compatible endpoint for the ray http processor (repeatable; default: the judge's base URL)")
    run.add_argument("--qps", type=int, help="requests per second per endpoint for --engine ray")

    listing = sub.add_parser("list", help="shipped prompts, output kinds, providers and configured judges")
    listing.add_argument("--config", type=Path, help="also list the judges in this TOML file")
    listing.add_argument("--json", action="store_true", help="machine-readable output")

    write = sub.add_parser("batch-write", help="write OpenAI / Anthropic batch request files for uncached calls")
    common(write)
    write.add_argument("--out", type=Path, required=True, help="folder for the batch files")

    read = sub.add_parser("batch-import", help="store a batch result file's successes in the request cache")
    read.add_argument("results", type=Path, help="the provider's batch result JSONL")
    read.add_argument("--requests", type=Path, required=True, help="the .requests.jsonl written beside the batch file")
    read.add_argument("--study", type=Path, default=Path("."), help="study folder (default: current folder)")
    read.add_argument("--cache", type=Path, help="request cache (default: STUDY/judges/cache.sqlite)")
    read.add_argument("--json", action="store_true", help="machine-readable output")


# The flag each --judge setting comes from, so that a refused value names what was typed.
_FLAGS = {"base_url": "--base-url", "samples": "--samples", "timeout_s": "--timeout",
          "concurrency": "--concurrency", "params": "--param"}


def _judges(args: argparse.Namespace) -> list[Any]:
    from judges import build_judge, load_judges, parse_judge_ref
    from samples import InputError

    judges = []
    config = args.config
    if config is None and not args.judge and (args.study / "study.toml").exists():
        config = args.study / "study.toml"
    if config is not None:
        judges.extend(load_judges(config))
    for ref in args.judge:
        data = parse_judge_ref(ref)
        for key, value in (("base_url", args.base_url), ("api", args.api), ("parse_mode", args.parse_mode),
                           ("samples", args.samples), ("timeout_s", args.timeout), ("concurrency", args.concurrency)):
            if value is not None:
                data[key] = value
        params = {}
        for item in args.param:
            key, sep, value = item.partition("=")
            if not sep:
                raise InputError(f"--param {item!r}: expected KEY=VALUE")
            try:
                params[key] = json.loads(value)
            except json.JSONDecodeError:
                raise InputError(f"--param {item!r}: VALUE must be JSON (a number, true/false or a quoted string)") from None
        if params:
            data["params"] = params
        judges.append(build_judge(data, where=f"--judge {ref}", flags=_FLAGS))
    if not judges:
        raise InputError("no judges: give --judge PROMPT@PROVIDER:MODEL, or --config FILE with [[judge]] tables")
    return judges


# The `judge run` flags that set keys of a remote engine's options table; which engine takes each (and under
# which key) is that engine's own ``flags`` (judges.engines.Engine).
ENGINE_FLAGS = ("ray_address", "ray_endpoint", "qps")


def _with_engine(args: argparse.Namespace, judges: list[Any]) -> list[Any]:
    """--engine and the engine's flags applied to every judge (over its own ``[judge.<engine>]`` table)."""
    from dataclasses import asdict, replace

    from judges import engine_names, get_engine, get_provider
    from samples import InputError

    given = {dest: getattr(args, dest) for dest in ENGINE_FLAGS if getattr(args, dest) not in (None, [])}
    if args.engine is None and not given:
        return judges
    owners = {dest: name for name in engine_names() for dest in get_engine(name).flags}
    misplaced = [dest for dest in given if owners.get(dest) != args.engine]
    if misplaced:
        flags = ", ".join("--" + dest.replace("_", "-") for dest in misplaced)
        raise InputError(f"{flags} need --engine {owners.get(misplaced[0])}")
    engine = get_engine(args.engine)
    from_flags = {engine.flags[dest]: value for dest, value in given.items()}
    out = []
    for judge in judges:
        if not engine.remote:
            out.append(replace(judge, engine=args.engine, engine_options=None))
            continue
        if get_provider(judge.provider).in_process:
            out.append(judge)  # rule classifiers run in this process whatever the engine
            continue
        own = judge.engine_options if judge.engine == args.engine else None
        table = {k: v for k, v in asdict(own).items() if v is not None} if own is not None else {}
        table.update(from_flags)
        table = {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()}
        where = f"judge {judge.name!r} (--engine {args.engine})"
        out.append(replace(judge, engine=args.engine, engine_options=engine.options(where, table)))
    return out


def _settings(args: argparse.Namespace, judges: list[Any], **run: Any) -> Any:
    """The judge stage's settings from the flags (``--units``, ``--cache``; ``run``: the run-only ones)."""
    from apps.upstream_stages import JudgeSettings

    return JudgeSettings(judges=tuple(judges), units=args.units, cache=args.cache, **run)


def run(args: argparse.Namespace) -> int:
    return {"run": _run, "list": _list, "batch-write": _batch_write, "batch-import": _batch_import}[args.action](args)


def _run(args: argparse.Namespace) -> int:
    from apps.drivers import get_stage
    from samples import StudyLayout

    settings = _settings(args, _with_engine(args, _judges(args)), prices=args.prices, dry_run=args.dry_run,
                         progress=not (args.json or args.no_progress or args.dry_run))
    summary = get_stage("judge").run(StudyLayout.of(args.study), settings).detail
    if args.json:
        print(json.dumps(summary.as_dict(), indent=2))
    else:
        _print_summary(summary)
    return _context_verdict(summary)


def _context_verdict(summary: Any) -> int:
    """Said on stderr: units that will not (dry run) or did not fit a judge's context. Exit 1 when a run left units
    unscored for that (their labels are missing from every agreement), else 0."""
    import sys

    for j in summary.judges:
        if summary.dry_run and j.over_context:
            print(f"warning: {j.judge}: about {j.over_context} unit(s) need more than the {j.context_tokens} tokens of "
                  "context the server gives one request (estimated at 4 characters a token, with the output cap); "
                  "they would be unscored (context_exceeded): shorten the units or serve a larger context",
                  file=sys.stderr)
        if j.context_exceeded:
            print(f"{j.judge}: {j.context_exceeded} unit(s) did not fit the server's context and are unscored "
                  "(context_exceeded); they count as unscored in every report", file=sys.stderr)
    return 1 if any(j.context_exceeded for j in summary.judges) else 0


def _print_summary(summary: Any) -> None:
    from rich.console import Console

    from apps.tables import print_rows

    console = Console()
    title = "dry run: calls that would be made" if summary.dry_run else f"judge run {summary.run_id} ({summary.seconds:.1f} s)"
    columns = ["units", "done before", "cache hits", "calls"]
    columns += ["est. input tok", "est. output tok", "est. cost $"] if summary.dry_run else [
        "ok", "unscored", "retries", "failed", "tokens in/out", "cost $"]
    rows = []
    for j in summary.judges:
        cost = f"{j.cost_usd:.4f}" if j.cost_usd is not None else f"undefined ({j.cost_reason})"
        row = [j.judge, str(j.units), str(j.already_done), str(j.cache_hits), str(j.calls)]
        if summary.dry_run:
            out = str(j.estimated_output_tokens) if j.estimated_output_tokens is not None else f"unknown ({j.estimated_output_reason})"
            row += [str(j.estimated_input_tokens), out, cost]
        else:
            reasons = ", ".join(f"{k} {v}" for k, v in j.unscored_reasons.items())
            row += [str(j.ok), f"{j.unscored}" + (f" ({reasons})" if reasons else ""), str(j.retries), str(j.failed),
                    f"{j.input_tokens}/{j.output_tokens}", cost]
        rows.append(row)
    print_rows(console, title, "judge", columns, rows)
    if not summary.dry_run:
        console.print(f"labels: {summary.labels_path}")


def _list(args: argparse.Namespace) -> int:
    from judges import OUTPUT_KINDS, builtin_prompts, load_judges, provider_names

    prompts = [{"name": p.name, "version": p.version, "output": p.output, "scheme": p.scheme,
                "unit_kinds": list(p.unit_kinds), "sha256": p.sha256, "source": p.source, "path": p.path}
               for p in builtin_prompts().values()]
    outputs = [{"name": k.name, "scheme": k.scheme, "description": k.description} for k in OUTPUT_KINDS.values()]
    configured = []
    if args.config:
        configured = [{"name": j.name, "provider": j.provider, "model": j.model, "output": j.output,
                       "parse_mode": j.parse_mode, "samples": j.samples, "unit_kinds": list(j.unit_kinds)}
                      for j in load_judges(args.config)]
    data = {"prompts": prompts, "output_kinds": outputs, "providers": provider_names(), "judges": configured}
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    from apps.tables import name_column

    table = Table(title="shipped prompts", show_edge=False)
    name_column(table, "name", [p["name"] for p in prompts])
    name_column(table, "version", [p["version"] for p in prompts])
    name_column(table, "output", [p["output"] for p in prompts])
    name_column(table, "unit kinds", ["\n".join(p["unit_kinds"]) for p in prompts])
    name_column(table, "sha256", [p["sha256"][:8] for p in prompts])
    for p in prompts:
        table.add_row(p["name"], p["version"], p["output"], "\n".join(p["unit_kinds"]), p["sha256"][:8])
    console.print(table)
    for p in prompts:  # below the table: a source is prose, and the names above must stay whole
        console.print(f"{p['name']}: {p['source']}", soft_wrap=True, highlight=False)
    from judges import rule_names

    console.print("providers: " + ", ".join(data["providers"]) + f"   (rule models: {', '.join(rule_names())})")
    console.print("output kinds: " + ", ".join(o["name"] for o in outputs))
    for j in configured:
        console.print(f"judge {j['name']}: {j['provider']}:{j['model']} output={j['output']} parse={j['parse_mode']} samples={j['samples']}")
    return 0


def _default_cache(args: argparse.Namespace) -> Path:
    from samples import StudyLayout

    return StudyLayout.of(args.study).judge_cache


def _batch_write(args: argparse.Namespace) -> int:
    from apps.upstream_stages import judged_units
    from judges import write_batch
    from samples import StudyLayout

    judges = _judges(args)
    units = judged_units(StudyLayout.of(args.study), _settings(args, judges))
    written = write_batch(units, judges, args.out, cache_path=args.cache or _default_cache(args))
    if args.json:
        print(json.dumps(written, indent=2))
    else:
        for w in written:
            print(f"{w['judge']}: {w['requests']} requests -> {w['batch_file']} ({w['already_cached']} already cached; "
                  f"keep {w['requests_file']} for batch-import)")
    return 0


def _batch_import(args: argparse.Namespace) -> int:
    from judges import import_batch_results

    result = import_batch_results(args.results, args.requests, cache_path=args.cache or _default_cache(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['results']} results {result['outcomes']}; {result['cached']} new cache entries. "
              "Run `accord judge run` to build labels from them.")
    return 0
