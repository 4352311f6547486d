"""Show where a study stands: stages done or stale, units sampled, labels per annotator, judge runs, verdict.

  accord status STUDY.toml [--output DIR] [--json]
  accord status STUDY_FOLDER [--json]

Reads only: the study file, STUDY/state.json and the tables the stages wrote. A study
folder made by `accord run` is read with its study file (study.json names it); any other
folder (built command by command: ingest, sample, blind, import, validate, gate) shows
the tables and documents it holds.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="the study file (study.toml), or a study folder")
    parser.add_argument("--output", help="study folder (default: the study file's `output`)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from apps.stages import folder_status, study_status
    from apps.study import load_study_file
    from samples import InputError, StudyLayout

    target = Path(args.study)
    if target.is_dir():
        if args.output:
            raise InputError(f"--output {args.output}: only for a study file; {args.study} is a study folder")
        resolved = StudyLayout(target).resolved_study
        study_file = json.loads(resolved.read_text(encoding="utf-8")).get("path") if resolved.is_file() else None
        if study_file and Path(study_file).is_file():
            status = study_status(load_study_file(study_file, output=target))
        else:
            status = folder_status(target)
    else:
        status = study_status(load_study_file(args.study, output=args.output))
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
    from apps.tables import name_column

    stages = Table(title="stages")
    name_column(stages, "stage", [row["stage"] for row in status["stages"]])
    for column in ("state", "seconds", "finished"):
        stages.add_column(column)
    for row in status["stages"]:
        colour = {"done": "green", "stale": "yellow", "pending": "red", "not needed": "dim"}[row["state"]]
        stages.add_row(row["stage"], f"[{colour}]{row['state']}[/]", str(row.get("seconds") or ""), row.get("finished_at") or "")
    console.print(stages)
    sample = status["sample"]
    source = f" (from {sample['source']})" if sample.get("source") else ""
    console.print(f"units: {status['units']['total']} in the population; sampled: {sample['sampled']}{source} "
                  f"({', '.join(f'{k} {v}' for k, v in sample['by_kind'].items()) or 'none yet'})")
    labels = status["labels"]
    if labels["simulated"]:
        console.print(f"[bold yellow]{labels['notice']}[/]")
    if labels.get("codebook_note"):
        console.print(f"[yellow]{labels['codebook_note']}[/]")
    table = Table(title=f"labels per annotator ({labels['tasks']} tasks)")
    name_column(table, "annotator", labels["annotators"])
    for column in ("labelled", "assigned", "backend"):
        table.add_column(column)
    for name, row in labels["annotators"].items():
        table.add_row(name, str(row["labelled"]), str(row["assigned"]), ", ".join(row["backends"]))
    console.print(table)
    logged = status["judges"]
    judges = Table(title=f"judges ({logged['runs']} runs logged, {logged['imported']} imported)")
    name_column(judges, "judge", logged["labels"])
    for column in ("labels", "ok", "unscored", "from"):
        judges.add_column(column)
    for name, row in logged["labels"].items():
        judges.add_row(name, str(row["rows"]), str(row["ok"]), str(row["unscored"]), row["origin"])
    console.print(judges)
    verdict = status["verdict"]
    if verdict is None:
        console.print("verdict: none yet")
    else:
        console.print(f"verdict: [bold]{verdict['verdict']}[/] under policy {verdict['policy']!r}: "
                      + ", ".join(f"{j} {v}" for j, v in verdict["judges"].items()))
    for line in sorted({line for lines in status["stale"].values() for line in lines}):
        console.print(line, style="yellow", soft_wrap=True, markup=False)
    if status.get("note"):
        console.print(status["note"], soft_wrap=True, markup=False)
    if status["waiting"]:
        console.print(status["waiting"], style="yellow", soft_wrap=True, markup=False)
