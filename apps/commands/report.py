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

    from agreement.report import build_report, write_report
    from agreement.scoring import refuse_other_calls
    from agreement.study_io import status

    refuse_other_calls(args.study)
    with status("rendering the report and its plots ..."):
        content = build_report(args.study)
        paths = write_report(args.study, args.out, content=content)
    for line in content.stale:
        print(line, file=sys.stderr)
    if args.json:
        import json

        body = {"paths": {k: str(v) for k, v in paths.items()}, "stale": content.stale}
        print(json.dumps(body, indent=2, sort_keys=True))
    else:
        print(f"wrote {paths['html']} and {paths['markdown']} ({len(paths) - 2} plots)")
    return 0
