"""Run every ``benchmarks/bench_*.py`` module and publish the collected rows.

Exit 1 when a benchmark module raised (its row says why); unmet targets are
reported in the table, not as a failing exit. ``results.json`` maps each area to its
rows, so ``--only AREA`` re-measures one area and keeps the others' last results.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from benchmarks import ROW_KEYS, failed_row

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def discover() -> list[str]:
    """Area names of every bench module, sorted (``bench_agreement`` -> ``agreement``)."""
    return sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(HERE)]) if m.name.startswith("bench_"))


def check_row(row: object, area: str) -> dict:
    """A row exactly as the harness contract says, or ValueError naming what is wrong."""
    if not isinstance(row, dict) or set(row) != set(ROW_KEYS):
        keys = sorted(row) if isinstance(row, dict) else type(row).__name__
        raise ValueError(f"bench_{area}: a row must have exactly the keys {list(ROW_KEYS)}, got {keys}")
    for key in ROW_KEYS:
        value = row[key]
        if key == "met":
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"bench_{area}: row {row['benchmark']!r}: 'met' must be true, false or null, got {value!r}")
        elif not isinstance(value, str):
            raise ValueError(f"bench_{area}: row {row.get('benchmark')!r}: {key!r} must be a string, got {value!r}")
    return {key: row[key] for key in ROW_KEYS}


def run_area(area: str, *, quick: bool) -> list[dict]:
    """One module's rows; a module that fails yields one failed row instead of stopping the run."""
    started = time.perf_counter()
    try:
        module = importlib.import_module(f"benchmarks.bench_{area}")
        rows = [check_row(row, area) for row in module.run(quick=quick)]
    except Exception as error:  # a broken benchmark must not hide the others' results
        traceback.print_exc(file=sys.stderr)
        rows = [failed_row(f"bench_{area}", error)]
    print(f"benchmarks: {area}: {len(rows)} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return rows


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    return str(value).replace("|", "\\|").replace("\n", " ") or "-"


def markdown_table(rows: Sequence[dict]) -> str:
    lines = ["| " + " | ".join(ROW_KEYS) + " |", "|" + "---|" * len(ROW_KEYS)]
    lines += ["| " + " | ".join(_cell(row[key]) for key in ROW_KEYS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def replace_between_markers(text: str, table: str) -> str | None:
    """``text`` with the part between the bench markers replaced, or None without markers."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return None
    return text[: start + len(START)] + "\n" + table + text[end:]


def previous_results(path: Path) -> dict[str, list[dict]]:
    """The last run's rows per area (empty when there is none in this format)."""
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--only", action="append", metavar="AREA", help="run only bench_AREA (repeatable)")
    parser.add_argument("--out", type=Path, default=HERE, help="folder for results.json and results.md")
    parser.add_argument("--readme", type=Path, default=README, help="README whose bench table is refreshed")
    args = parser.parse_args(argv)
    areas = discover()
    if args.only:
        unknown = sorted(set(args.only) - set(areas))
        if unknown:
            parser.error(f"--only: unknown area(s) {unknown}; choose from {areas}")
        areas = [a for a in areas if a in args.only]
    results_file = args.out / "results.json"
    by_area = previous_results(results_file) if args.only else {}
    by_area.update({area: run_area(area, quick=args.quick) for area in areas})
    by_area = {area: by_area[area] for area in sorted(by_area)}
    rows = [row for area_rows in by_area.values() for row in area_rows]
    args.out.mkdir(parents=True, exist_ok=True)
    results_file.write_text(json.dumps(by_area, indent=2) + "\n")
    table = markdown_table(rows)
    (args.out / "results.md").write_text("# Benchmark results\n\n" + table)
    if args.readme.is_file():
        updated = replace_between_markers(args.readme.read_text(), table)
        if updated is None:
            print(f"benchmarks: {args.readme} has no {START} ... {END} markers; table not inserted", file=sys.stderr)
        else:
            args.readme.write_text(updated)
    print(table)
    failed = [row["benchmark"] for area in areas for row in by_area[area] if row["accord"] == "error"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
