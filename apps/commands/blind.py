"""Blind a study's sample: scrubbed annotator tasks, per-annotator orders, an audit and a sealed key.

Writes STUDY/blind/tasks.jsonl, orders.json, audit.json and STUDY/sealed/key.jsonl
(mode 0600). Exits 2, writing nothing, if the independent leak detector still finds
an identity in any scrubbed task (the error names the task and field).
"""

from __future__ import annotations

import argparse

from samples import DEFAULT_SEED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder holding sample/sample.jsonl")
    parser.add_argument("--annotators", required=True, help="comma-separated annotator names, e.g. ann1,ann2,ann3")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed for task ids and orders (default {DEFAULT_SEED})")
    parser.add_argument("--replace", action="store_true",
                        help="overwrite an existing sealed key from another sample or seed (labels against it are orphaned)")
    parser.add_argument("--keep", action="append", default=[], metavar="TERM",
                        help="leave this vendor or harness name readable, e.g. --keep Google (repeatable; model names "
                             "and the study's own agents and backbones are always masked)")
    parser.add_argument("--keep-roles", action="store_true",
                        help="leave agent-framework speaker and role names readable (Orchestrator, WebSurfer, *_Expert, "
                             "TERMINATE); they are masked to neutral roles by default and counted in blind/audit.json")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console
    from rich.table import Table

    from apps.builtin_stages import BlindSettings
    from apps.drivers import get_stage
    from samples import StudyLayout

    settings = BlindSettings(annotators=tuple(args.annotators.split(",")), seed=args.seed, replace=args.replace,
                             keep=tuple(args.keep), keep_roles=args.keep_roles)
    summary = get_stage("blind").run(StudyLayout.of(args.study), settings).document
    if args.json:
        print(json.dumps({"ok": True, **summary}, indent=2, sort_keys=True))
        return 0
    table = Table(title=f"accord blind -> {summary['blind_dir']}")
    table.add_column("what")
    table.add_column("value", justify="right", overflow="fold")  # a path or a name is folded, never cut
    table.add_row("tasks", str(summary["tasks"]))
    table.add_row("annotators", ", ".join(summary["annotators"]))
    table.add_row("tasks with masking", str(summary["tasks_with_masking"]))
    for category, count in summary["masked_by_category"].items():
        table.add_row(f"masked: {category}", str(count))
    for category, count in summary["kept_by_category"].items():
        table.add_row(f"kept readable: {category}", str(count))
    table.add_row("sealed key", summary["key"])
    Console().print(table)
    return 0
