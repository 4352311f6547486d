"""Write the study report: self-contained HTML and Markdown with tables, plots, verdict, fingerprints.

Reads what validate, audit, gate and score saved in the study folder (whichever
exist) and writes STUDY/report/report.html, report.md and the plot PNGs.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder (after accord validate / audit / gate / score)")
    parser.add_argument("--out", help="output folder (default STUDY/report)")
    parser.add_argument("--json", action="store_true", help="print the written paths as JSON")


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from agreement import status
    from apps.builtin_stages import ReportSettings
    from apps.drivers import get_stage
    from samples import StudyLayout

    with status("rendering the report and its plots ..."):
        written = get_stage("report").run(StudyLayout.of(args.study),
                                          ReportSettings(out=Path(args.out) if args.out else None))
    body = written.document
    for line in body["stale"]:
        print(line, file=sys.stderr)
    if args.json:
        import json

        print(json.dumps(body, indent=2, sort_keys=True))
    else:
        print(f"wrote {body['paths']['html']} and {body['paths']['markdown']} ({len(body['paths']) - 2} plots)")
    return 0
