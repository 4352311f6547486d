r"""Import labels people already have: units known only by id, human labels, judge verdicts, or one table of all three.

  accord import units FILE --study S --unit-column ID --kind KIND [--strata-columns A,B] [--cluster-column C]
  accord import human-labels FILE --study S (--unit-column|--task-column|--trajectory-column ...) \
        (--annotator-column A --label-column L | --annotator-columns A1,A2,...) [--scheme NAME|any]
  accord import judge-labels FILE --study S --judge NAME (--unit-column ...) --output-column O \
        [--output-kind identify_json|yes_no|...] [--parse-mode strict|lenient]
  accord import table FILE --study S --unit-column ID --kind KIND --annotator-columns A1,A2 --judge-columns J1,J2

FILE is CSV, JSONL or Parquet (by suffix), or a named --format (rater-maps: {rater:
{instance: label}}; mast-findings: mast-lint raw_findings.json; inspect-scores: an
inspect_ai log's scores, one row per sample and scorer, e.g. `accord import judge-labels
LOG.eval --format inspect-scores --trajectory-column trajectory --kind-column kind
--output-column label --where scorer=model_graded_qa --judge grader`). Units are matched by
unit id, by task id (human labels), or by trajectory id + kind (+ turn). Raw judge
outputs go through the same parsers as live judges; unparseable ones are kept as
unscored with their reason. Every row that does not match is listed with its line;
nothing is half-imported. `import table` registers the units of an empty study folder
and imports both kinds of labels, so `accord gate S --policy P` gives a verdict next.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def _columns(value: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"{value!r}: expected comma-separated column names")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="{units,human-labels,judge-labels,table}")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("file", type=Path, help="the table (.csv, .jsonl, .parquet, or --format)")
        p.add_argument("--study", type=Path, required=True, help="study folder")
        p.add_argument("--format", help="table format (default: by suffix); e.g. rater-maps, mast-findings")
        p.add_argument("--json", action="store_true", help="machine-readable output")

    def match(p: argparse.ArgumentParser, *, tasks: bool) -> None:
        p.add_argument("--unit-column", help="column holding the unit id")
        if tasks:
            p.add_argument("--task-column", help="column holding the blinded task id")
        p.add_argument("--trajectory-column", help="column holding the trajectory id (with --kind-column)")
        p.add_argument("--kind-column", help="column holding the unit kind")
        p.add_argument("--turn-column", help="column holding the focus turn (identify_turn)")

    units = sub.add_parser("units", help="register the units of a labels-only study (no trajectories)")
    common(units)
    units.add_argument("--unit-column", required=True, help="column holding the unit id")
    _unit_options(units)

    human = sub.add_parser("human-labels", help="import human labels")
    common(human)
    match(human, tasks=True)
    _human_options(human)
    human.add_argument("--name", help="name of this import (default: the file's stem); re-importing replaces it")

    judge = sub.add_parser("judge-labels", help="import one judge's verdicts")
    common(judge)
    match(judge, tasks=False)
    judge.add_argument("--judge", required=True, help="the judge's name in the study")
    judge.add_argument("--output-column", required=True, help="column holding the judge's raw output or label")
    judge.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                       help="import only the rows holding VALUE in COLUMN (repeatable), e.g. scorer=model_graded_qa")
    judge.add_argument("--only-sample", action="store_true",
                       help="skip (and count) rows about units the study does not have: a judge run over the "
                            "population is a superset of the human sample; without it such rows are errors")
    _judge_options(judge)

    table = sub.add_parser("table", help="units, human labels and judge verdicts from one table (wide or long)")
    common(table)
    table.add_argument("--unit-column", required=True, help="column holding the unit id")
    _unit_options(table)
    table.add_argument("--annotator-columns", type=_columns, default=(), help="wide: one label column per annotator")
    table.add_argument("--judge-columns", type=_columns, default=(), help="wide: one output column per judge")
    table.add_argument("--rater-column", help="long: column naming the rater (annotator or judge)")
    table.add_argument("--label-column", help="long: column holding the label or the judge's output")
    table.add_argument("--judges", type=_columns, default=(), help="long: the raters that are judges (the rest are people)")
    table.add_argument("--scheme", help="label scheme (default: the kind's); 'any' accepts labels as found")
    _time_option(table)
    _judge_options(table, scheme=False)


def _unit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", help="unit kind of every row (or --kind-column)")
    p.add_argument("--kind-column", help="column holding each unit's kind")
    p.add_argument("--strata-columns", type=_columns, default=(), help="columns offered as strata (e.g. family,model)")
    p.add_argument("--cluster-column", help="column grouping units for the bootstrap (default: each unit alone)")


def _human_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--annotator-column", help="long tables: column naming the annotator")
    p.add_argument("--label-column", help="long tables: column holding the label")
    p.add_argument("--annotator-columns", type=_columns, default=(), help="wide tables: one label column per annotator")
    p.add_argument("--first-turn-column", help="column holding the first recognition turn (Identify)")
    p.add_argument("--unsure-column", help="column flagging an unsure label (yes/no, 1/0)")
    p.add_argument("--note-column", help="column holding a note")
    p.add_argument("--role-column", help="column holding independent/adjudication")
    _time_option(p)
    p.add_argument("--scheme", help="label scheme (default: the unit kind's); 'any' accepts labels as found")


def _time_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-column", help="column holding when each label was given (ISO-8601; no zone: UTC): the "
                                         "order accord gate --sequential reads labels in (default: the row order)")


def _judge_options(p: argparse.ArgumentParser, *, scheme: bool = True) -> None:
    p.add_argument("--output-kind", help="parse raw outputs with this output kind (accord judge list); default: "
                                         "the cells are already canonical labels")
    from apps.choices import Choices, parse_modes

    p.add_argument("--parse-mode", default="strict", choices=Choices(parse_modes), type=str.lower, metavar="MODE",
                   help="reported parse mode: %(choices)s (default strict)")
    if scheme:
        p.add_argument("--scheme", help="label scheme for canonical labels (default: the unit kind's); 'any'")


def _match(args: argparse.Namespace):
    from samples import MatchColumns

    return MatchColumns(unit=args.unit_column, task=getattr(args, "task_column", None),
                        trajectory=args.trajectory_column, kind=args.kind_column if args.trajectory_column else None,
                        turn=args.turn_column)


def run(args: argparse.Namespace) -> int:
    import json

    from samples import InputError

    if not args.study.is_dir() and (args.action not in ("units", "table") or args.study.exists()):
        raise InputError(f"--study {str(args.study)!r}: not a study folder")
    report = {"units": _units, "human-labels": _human, "judge-labels": _judge, "table": _table}[args.action](args)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        for line in report["lines"]:
            print(line)
    return 0


def _stage(args: argparse.Namespace, **settings) -> Any:
    """The import stage's driver run on the study with these settings (``apps.upstream_stages.ImportSettings``)."""
    from apps.drivers import get_stage
    from apps.upstream_stages import ImportSettings
    from samples import StudyLayout

    return get_stage("import").run(StudyLayout.of(args.study), ImportSettings(**settings)).detail


def _units(args: argparse.Namespace) -> dict:
    from apps.upstream_stages import UnitsImport

    registered = _stage(args, units=UnitsImport(
        path=args.file, format=args.format, unit_column=args.unit_column, kind=args.kind, kind_column=args.kind_column,
        strata_columns=args.strata_columns, cluster_column=args.cluster_column, distinct_rows=True)).units
    body: dict[str, Any] = {"units": registered.units, "kinds": registered.kinds, "strata": list(registered.strata)}
    body["lines"] = [f"registered {body['units']} units ({', '.join(f'{k} {n}' for k, n in body['kinds'].items())}) "
                     f"in {args.study}"]
    return body


def _human(args: argparse.Namespace) -> dict:
    from annotate import HumanColumns
    from apps.upstream_stages import HumanImport

    columns = HumanColumns(annotator=args.annotator_column, label=args.label_column, annotators=args.annotator_columns,
                           first_turn=args.first_turn_column, unsure=args.unsure_column, note=args.note_column,
                           role=args.role_column, time=args.time_column)
    (report,) = _stage(args, human=(HumanImport(path=args.file, match=_match(args), columns=columns, scheme=args.scheme,
                                                format=args.format, name=args.name),)).human
    return {"labels": report.labels, "units": report.units, "annotators": list(report.annotators),
            "written": str(report.written),
            "lines": [f"imported {report.labels} human labels from {len(report.annotators)} annotator(s) on "
                      f"{report.units} units into {report.written}"]}


def _judge_report(report) -> dict:
    unscored = ", ".join(f"{k} {n}" for k, n in report.unscored.items())
    return {"judge": report.judge, "rows": report.rows, "ok": report.ok, "unscored": report.unscored,
            "outside_study": report.outside, "written": str(report.written),
            "line": f"imported {report.rows} verdicts of judge {report.judge!r} ({report.ok} labelled"
                    + (f"; unscored: {unscored}" if unscored else "") + f") into {report.written}"
                    + (f"; skipped {report.outside} row(s) about units the study does not have (--only-sample)"
                       if report.outside else "")}


def _where(pairs: list[str]) -> dict[str, str]:
    from samples import InputError

    where = {}
    for pair in pairs:
        column, sep, value = pair.partition("=")
        if not sep or not column:
            raise InputError(f"--where {pair!r}: expected COLUMN=VALUE")
        where[column] = value
    return where


def _judge(args: argparse.Namespace) -> dict:
    from apps.upstream_stages import JudgeImport

    (report,) = _stage(args, judges=(JudgeImport(
        path=args.file, judge=args.judge, match=_match(args), output_column=args.output_column,
        output_kind=args.output_kind, parse_mode=args.parse_mode, scheme=args.scheme, format=args.format,
        where=_where(args.where), only_sample=args.only_sample),)).judges
    body = _judge_report(report)
    body["lines"] = [body.pop("line")]
    return body


def _table(args: argparse.Namespace) -> dict:
    """Every row checked (units, key, human labels, each judge) before anything is written; then one generation."""
    from annotate import HumanColumns
    from apps.upstream_stages import HumanImport, JudgeImport, UnitsImport
    from samples import InputError, MatchColumns, check_columns, label_text, read_table

    rows = read_table(args.file, format=args.format)
    long = args.rater_column is not None
    if long == bool(args.annotator_columns or args.judge_columns) or (long and not (args.label_column and args.judges)):
        raise InputError("give --annotator-columns and --judge-columns (a wide table: one column per rater), or "
                         "--rater-column, --label-column and --judges (a long table: one row per rating)")
    overlap = sorted(set(args.annotator_columns) & set(args.judge_columns))
    if overlap:
        raise InputError(f"columns {overlap} are named both as annotators and as judges")
    check_columns(rows, {"--annotator-columns": args.annotator_columns, "--judge-columns": args.judge_columns,
                         "--rater-column": [args.rater_column], "--label-column": [args.label_column]},
                  source=args.file)
    if long:  # a judge named in --judges that no row rates would leave its rows to no one, or to the people
        raters = sorted({label_text(v) for r in rows if (v := r.get(args.rater_column)) not in (None, "")})
        absent = [name for name in args.judges if name not in raters]
        if absent:
            raise InputError(f"{args.file}: --judges: no rater {', '.join(map(repr, absent))} in column "
                             f"{args.rater_column!r}; its raters: {raters}")
    match = MatchColumns(unit=args.unit_column)
    if long:
        people = [r for r in rows if label_text(r.get(args.rater_column)) not in set(args.judges)]
        human = HumanImport(path=args.file, match=match, format=args.format, scheme=args.scheme, rows=people,
                            columns=HumanColumns(annotator=args.rater_column, label=args.label_column,
                                                 time=args.time_column))
        outputs = [(name, args.label_column, [r for r in rows if label_text(r.get(args.rater_column)) == name])
                   for name in args.judges]
    else:
        human = HumanImport(path=args.file, match=match, format=args.format, scheme=args.scheme,
                            columns=HumanColumns(annotators=args.annotator_columns, time=args.time_column))
        outputs = [(name, name, rows) for name in args.judge_columns]
    units = UnitsImport(path=args.file, format=args.format, rows=rows, unit_column=args.unit_column, kind=args.kind,
                        kind_column=args.kind_column, strata_columns=args.strata_columns,
                        cluster_column=args.cluster_column)
    imported = _stage(args, units=units, human=(human,), judges=tuple(
        JudgeImport(path=args.file, judge=name, match=match, output_column=column, output_kind=args.output_kind,
                    parse_mode=args.parse_mode, scheme=args.scheme, format=args.format, rows=judge_rows)
        for name, column, judge_rows in outputs))
    body = {"units": imported.units.units, "kinds": imported.units.kinds, "strata": list(imported.units.strata)}
    (labelled,) = imported.human
    judges = [_judge_report(report) for report in imported.judges]
    body.update(human_labels=labelled.labels, judges=judges)
    body["lines"] = [f"registered {body['units']} units in {args.study}",
                     f"imported {labelled.labels} human labels from {len(labelled.annotators)} annotator(s)",
                     *[j.pop("line") for j in judges]]
    return body
