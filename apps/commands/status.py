"""Show where a study stands: stages done or stale, units sampled, labels per annotator, judge runs, verdict.

  accord status STUDY.toml [--output DIR] [--json]

Reads only: the study file, STUDY/state.json and the tables the stages wrote.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="the study file (study.toml)")
    parser.add_argument("--output", help="study folder (default: the study file's `output`)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    import json

    from apps.study import load_study_file
    from apps.stages import study_status

    study = load_study_file(args.study, output=args.output)
    status = study_status(study)
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
        return 0
    _print(status)
    return 0


def _print(status: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"study {status['study']!r}: {status['output']}")
    stages = Table(title="stages")
    for column in ("stage", "state", "seconds", "finished"):
        stages.add_column(column)
    for row in status["stages"]:
        colour = {"done": "green", "stale": "yellow", "pending": "red"}[row["state"]]
        stages.add_row(row["stage"], f"[{colour}]{row['state']}[/]", str(row.get("seconds") or ""), row.get("finished_at") or "")
    console.print(stages)
    sample = status["sample"]
    console.print(f"units: {status['units']['total']} in the population; sampled: {sample['sampled']} "
                  f"({', '.join(f'{k} {v}' for k, v in sample['by_kind'].items()) or 'none yet'})")
    labels = status["labels"]
    if labels["simulated"]:
        console.print(f"[bold yellow]{labels['notice']}[/]")
    if labels.get("codebook_note"):
        console.print(f"[yellow]{labels['codebook_note']}[/]")
    table = Table(title=f"labels per annotator ({labels['tasks']} tasks)")
    for column in ("annotator", "labelled", "assigned", "backend"):
        table.add_column(column)
    for name, row in labels["annotators"].items():
        table.add_row(name, str(row["labelled"]), str(row["assigned"]), ", ".join(row["backends"]))
    console.print(table)
    judges = Table(title=f"judges ({status['judges']['runs']} runs logged)")
    for column in ("judge", "labels", "ok", "unscored"):
        judges.add_column(column)
    for name, row in status["judges"]["labels"].items():
        judges.add_row(name, str(row["rows"]), str(row["ok"]), str(row["unscored"]))
    console.print(judges)
    verdict = status["verdict"]
    if verdict is None:
        console.print("verdict: none yet")
    else:
        console.print(f"verdict: [bold]{verdict['verdict']}[/] under policy {verdict['policy']!r}: "
                      + ", ".join(f"{j} {v}" for j, v in verdict["judges"].items()))
    for line in sorted({line for lines in status["stale"].values() for line in lines}):
        console.print(line, style="yellow", soft_wrap=True, markup=False)
    if status["waiting"]:
        console.print(status["waiting"], style="yellow", soft_wrap=True, markup=False)
