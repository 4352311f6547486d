"""Gold units: add known-answer units to a study's orders, and report each annotator's accuracy on them.

`accord gold add FILE --study S --rate R` reads a JSONL table of units with their expected
label (fields gold_id, kind, text, label; optional turns, focus_turn, question,
gold_answers, first_turn, reason), blinds them like sampled units and writes the sealed
gold key (sealed/gold.json); the coding app then places them in every annotator's order so
that a share R of it is gold (before the first push only). `accord gold report --study S`
gives per annotator the share of gold units labelled as expected with a Wilson score
interval. Gold labels never enter the human labels table, validation or the gate.
`accord gold practice FILE --study S` sets the qualification round: practice units (same
table format) the coding app shows before real units, with the expected answer and the
reason after each submit; practice answers are kept apart from labels.
"""

from __future__ import annotations

import argparse
import json

from samples import DEFAULT_LEVEL


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("add", "practice", "report"),
                        help="add: write the sealed gold key; practice: set the qualification round; report: accuracy")
    parser.add_argument("file", nargs="?", help="add, practice: the table of units with expected labels (JSONL)")
    parser.add_argument("--study", required=True, help="study folder (blinded: blind/audit.json)")
    parser.add_argument("--rate", type=float, help="add: share of each annotator's order that is gold (0..1)")
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help=f"report: confidence level (default {DEFAULT_LEVEL})")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from annotate import Store, add_gold, add_practice, gold_accuracy, load_gold
    from samples import InputError, StudyLayout

    layout = StudyLayout.of(args.study)
    if args.action == "add":
        if not args.file or args.rate is None:
            raise InputError("accord gold add: expected FILE and --rate (e.g. accord gold add gold.jsonl --study S --rate 0.1)")
        key = add_gold(layout, args.file, rate=args.rate)
        body = {"gold_units": len(key.units), "rate": key.rate, "key": str(layout.gold)}
        print(json.dumps(body) if args.json else
              f"wrote {len(key.units)} gold units to {layout.gold} (rate {key.rate:g} of each order)")
        return 0
    if args.action == "practice":
        if not args.file:
            raise InputError("accord gold practice: expected FILE (e.g. accord gold practice practice.jsonl --study S)")
        practice = add_practice(layout, args.file)
        print(json.dumps({"practice_units": len(practice.units), "path": str(layout.practice)}) if args.json else
              f"wrote {len(practice.units)} practice units to {layout.practice}")
        return 0
    key = load_gold(layout)
    if key is None:
        raise InputError(f"{layout.gold}: not found; add gold units with `accord gold add FILE --study S --rate R`")
    store = Store.for_study(layout.root)
    names = [a.name for a in store.annotators() if a.role == "annotator"]
    rows = [row.to_dict() for row in gold_accuracy(store.labels(role="independent"), key, annotators=names,
                                                   level=args.level)]
    if args.json:
        print(json.dumps({"interval": "wilson", "level": args.level, "annotators": rows}, indent=2, sort_keys=True))
        return 0
    print(f"accuracy on gold units ({args.level:.0%} Wilson score intervals)")
    for row in rows:
        if row["accuracy"] is None:
            print(f"  {row['annotator']}: -- ({row['reason']})")
        else:
            print(f"  {row['annotator']}: {row['accuracy']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] "
                  f"({row['correct']} of {row['n']})")
    return 0
