"""Draw a stratified, reproducible sample of a study's units under a sampling plan (TOML).

Writes STUDY/sample/sample.jsonl (units with stratum and inclusion probability)
and STUDY/sample/manifest.json (plan, input hashes, seed, counts per stratum,
shortfalls). Example plans: data/plans/.
"""

from __future__ import annotations

import argparse

from samples import DEFAULT_SEED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder holding units.jsonl")
    parser.add_argument("--plan", required=True, help="sampling plan (TOML), e.g. data/plans/ise_identify.toml")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    parser.add_argument("--labels", default=None,
                        help="judge labels JSONL for judge:<name> strata (default STUDY/judges/labels.jsonl)")
    parser.add_argument("--exclude-labelled", nargs="?", const="", default=None, metavar="STUDY",
                        help="leave out the units people labelled in STUDY (default: this study): a fresh "
                             "human sample for a revised judge")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from apps.builtin_stages import SampleSettings
    from apps.drivers import get_stage
    from samples import StudyLayout

    with Progress(SpinnerColumn(), TextColumn("sample: {task.completed:,} unit lines read"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True, disable=args.json or not sys.stderr.isatty()) as bar:
        task = bar.add_task("sample", total=None)
        settings = SampleSettings(plan=args.plan, seed=args.seed, labels=args.labels,
                                  exclude_labelled=None if args.exclude_labelled is None
                                  else args.exclude_labelled or args.study,
                                  progress=lambda n: bar.update(task, completed=n))
        manifest = get_stage("sample").run(StudyLayout.of(args.study), settings).document
    if args.json:
        print(json.dumps(manifest, indent=2, sort_keys=True))
        return 0
    table = Table(title=f"accord sample: plan {manifest['plan']['name']!r}, seed {manifest['seed']}, "
                        f"{manifest['sampled']} of {manifest['population_units']} units")
    table.add_column("stratum", overflow="fold")
    for column in ("population", "frame", "outside frame", "requested", "sampled", "shortfall"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in manifest["strata"]:
        table.add_row(row["stratum"], str(row["population_units"]), str(row["frame_size"]), str(row["outside_frame"]),
                      str(row["requested"]), str(row["sampled"]),
                      f"[bold red]{row['shortfall']}[/]" if row["shortfall"] else "0")
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    if manifest["shortfalls"]:
        Console(stderr=True).print(f"[yellow]{len(manifest['shortfalls'])} stratum/strata smaller than requested "
                                   "(reported in the manifest, not padded)[/]")
    return 0
