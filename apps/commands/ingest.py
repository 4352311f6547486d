"""Load agent trajectories through an adapter into a study's trajectories.jsonl and units.jsonl.

Every bad record is reported at once (file, line, field, what was expected) and
nothing is written, unless --skip-bad is given (then they are counted and listed
in ingest_manifest.json). Inputs may be files or folders (searched for .json,
.jsonl, .csv, .parquet files, in sorted order).
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", help="source files or folders")
    parser.add_argument("--adapter", required=True,
                        help="source format: canonical, ise, openai-messages, who-and-when, mad, responses, generic, inspect")
    parser.add_argument("--study", required=True, help="study folder to write into")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="adapter option (repeatable), e.g. backbone=gpt-4o, or id=run_id for generic")
    parser.add_argument("--kinds", default=None,
                        help="comma-separated unit kinds to cut (default: every kind a trajectory supports)")
    parser.add_argument("--no-units", action="store_true", help="write trajectories only")
    parser.add_argument("--metadata-stratum", action="append", default=[], metavar="KEY",
                        help="also stratify units by this metadata key (repeatable), e.g. category")
    parser.add_argument("--workers", type=_workers, default=1,
                        help="processes converting JSONL inputs of line-based adapters (ise, canonical, openai-messages), "
                             "at most one per core; output is identical for any value (default 1)")
    parser.add_argument("--skip-bad", action="store_true", help="skip bad records (counted and listed in the manifest)")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")


def _workers(text: str) -> int:
    """``--workers``: an integer from 1 to the number of usable cores (more would only compete for them)."""
    from samples import usable_cores

    cores = usable_cores()
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer from 1 to {cores} (the usable cores)") from None
    if not 1 <= value <= cores:
        raise argparse.ArgumentTypeError(f"{value}: expected an integer from 1 to {cores} (the usable cores)")
    return value


def _options(pairs: list[str]) -> dict[str, str]:
    from samples import InputError

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--option {pair!r}: expected KEY=VALUE")
        options[key] = value
    return options


def run(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from apps.drivers import get_stage
    from apps.upstream_stages import IngestSettings, IngestSource
    from samples import UNIT_KINDS, StudyLayout, expand_inputs

    files = expand_inputs(args.inputs)
    kinds = None if args.no_units else (tuple(k.strip() for k in args.kinds.split(",") if k.strip()) if args.kinds else UNIT_KINDS)
    console = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("ingest: {task.completed:,} records"), TimeElapsedColumn(),
                  console=console, transient=True, disable=args.json or not sys.stderr.isatty()) as bar:
        task = bar.add_task("ingest", total=None)
        source = IngestSource(files=tuple(files), adapter=args.adapter, options=_options(args.option), kinds=kinds,
                              metadata_strata=tuple(args.metadata_stratum), skip_bad=args.skip_bad)
        written = get_stage("ingest").run(StudyLayout.of(args.study), IngestSettings(
            sources=(source,), workers=args.workers, progress=lambda n: bar.update(task, completed=n)))
    manifest, (result,) = written.document, written.detail
    if args.json:
        print(json.dumps(manifest, indent=2, sort_keys=True))
        return 0
    table = Table(title=f"accord ingest -> {args.study}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("input files", str(len(files)))
    table.add_row("trajectories", str(result.n_trajectories))
    for kind, count in result.units_by_kind.items():
        table.add_row(f"units: {kind}", str(count))
    for kind, reasons in result.skipped_units.items():
        for reason, count in reasons.items():
            table.add_row(f"not cut: {kind} ({reason})", str(count))
    table.add_row("bad records skipped", str(len(result.bad_records)))
    Console().print(table)
    return 0
