"""Export the human labels table of the coding app store (csv, parquet or jsonl); labels of gold units are left out."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("export",), help="export: write the labels table")
    parser.add_argument("--study", required=True, help="study folder (its store: labels/store.sqlite or ACCORD_STORE_URL)")
    parser.add_argument("--format", choices=("csv", "parquet", "jsonl"), default="jsonl", help="file format (default jsonl)")
    parser.add_argument("--out", help="output file (default STUDY/labels/human.<format>)")
    parser.add_argument("--role", choices=("independent", "adjudication"), help="only this role (default both)")
    parser.add_argument("--store-moved", action="store_true",
                        help="rewrite labels/human.jsonl even from a store holding fewer labels than it (a store moved on purpose)")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    from annotate import Store, export_labels, load_gold, split_labels
    from samples import StudyLayout

    layout = StudyLayout.of(args.study)
    out = Path(args.out) if args.out else layout.app_labels.with_suffix(f".{args.format}")
    if out == layout.app_labels and args.format == "jsonl" and args.role is None:
        labels = _pull(layout, store_moved=args.store_moved)
    else:  # a copy out of the store, not the study's labels file
        store = Store.for_study(args.study)
        labels, _ = split_labels(store.labels(role=args.role), load_gold(layout))  # gold labels stay sealed
        if out == layout.app_labels:
            from annotate import check_not_fewer

            check_not_fewer(out, len(labels), source=store.location, study=layout.root, allowed=args.store_moved)
        export_labels(labels, out, format=args.format)
    roles = {role: sum(1 for row in labels if row.role == role) for role in ("independent", "adjudication")}
    if args.json:
        print(json.dumps({"path": str(out), "rows": len(labels), **roles}))
    else:
        print(f"wrote {len(labels)} label rows ({roles['independent']} independent, {roles['adjudication']} adjudication) to {out}")
    return 0


def _pull(layout: Any, *, store_moved: bool) -> list[Any]:
    """The study's labels file as the annotate stage writes it (``accord run``): the store's labels of sampled
    units, and those of gold units in their own sealed file."""
    from annotate import AppBackend
    from apps.drivers import get_stage
    from apps.upstream_stages import AnnotateSettings

    settings = AnnotateSettings(backend=lambda layout: AppBackend(study=layout.root), push=False,
                                store_moved=store_moved)
    return list(get_stage("annotate").run(layout, settings).detail.labels)
