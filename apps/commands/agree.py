"""Agreement panels for a labels table: humans, judge vs humans, judge pairs, reference report.

Reads a long table (one row per unit x rater; CSV, JSONL or Parquet). Raters named
with --judge are judges; every other rater is a human annotator, and only they form
the human majority and the human-human panel. Confidence intervals are percentile
bootstrap intervals (--bootstrap resamples, whole --cluster groups resampled when
given), or t intervals from the analytic SE with --bootstrap 0.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from apps.commands import resamples
from samples import DEFAULT_LEVEL, DEFAULT_SEED

NAMES = {"percent_agreement": "percent agreement", "fleiss_kappa": "Fleiss' kappa", "gwet_ac1": "Gwet's AC1",
         "krippendorff_alpha": "Krippendorff's alpha", "cohen_kappa": "Cohen's kappa",
         "conger_kappa": "Conger's kappa", "brennan_prediger": "Brennan-Prediger", "gwet_ac2": "Gwet's AC2",
         "scott_pi": "Scott's pi", "light_kappa": "Light's kappa"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", help="labels table: .csv, .jsonl or .parquet, one row per unit x rater")
    parser.add_argument("--unit", default="unit", help="unit id column (default: unit)")
    parser.add_argument("--rater", default="rater", help="rater column (default: rater)")
    parser.add_argument("--label", default="label", help="label column; empty = missing/unscored (default: label)")
    parser.add_argument("--cluster", help="cluster column (e.g. trajectory): CIs resample whole clusters")
    parser.add_argument("--weight", help="unit weight column (1/inclusion probability)")
    parser.add_argument("--judge", action="append", default=[], metavar="RATER",
                        help="a rater that is a judge (repeatable); the others are humans")
    parser.add_argument("--reference", default="majority", metavar="majority|RATER",
                        help="reference for the precision/recall report: the human majority or a rater")
    parser.add_argument("--categories", nargs="+", metavar="LABEL",
                        help="declared categories in order (unused ones matter for AC1 and weights)")
    parser.add_argument("--weights", default="identity",
                        help="agreement weights: identity (default), linear, quadratic, ordinal, radical, ratio, "
                             "circular or bipolar")
    parser.add_argument("--alpha-level", default="nominal",
                        help="Krippendorff's alpha metric: nominal (default), ordinal, interval or ratio")
    parser.add_argument("--bootstrap", type=resamples, default=10_000, metavar="N",
                        help="bootstrap resamples for the CIs (default 10000; 0 = analytic t intervals)")
    parser.add_argument("--seed", type=int, help=f"bootstrap seed (default: accord's DEFAULT_SEED, {DEFAULT_SEED})")
    parser.add_argument("--tie-policy", default="exclude",
                        help="a tied human majority is: exclude(d, the default), needs-adjudication (excluded and "
                             "listed), positive or negative (resolved to that label; binary only, with --positive); "
                             "ties are always counted")
    parser.add_argument("--positive", metavar="LABEL", help="the positive label, for --tie-policy positive|negative")
    parser.add_argument("--by", metavar="COLUMN", help="also give the judge-judge table per value of this column")
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help=f"confidence level (default {DEFAULT_LEVEL})")
    parser.add_argument("--coefficients", metavar="all|NAME,...",
                        help="human-human panel coefficients: 'all' (every registered coefficient; those that do "
                             "not fit the number of annotators are reported undefined with the reason) or a comma "
                             "list (default: percent agreement, Fleiss, AC1, Krippendorff; + Cohen's kappa for "
                             "two annotators)")
    parser.add_argument("--json", action="store_true", help="machine output: full precision, null + reason")


def run(args: argparse.Namespace) -> int:
    from samples import InputError

    if args.bootstrap < 0:
        raise InputError(f"--bootstrap {args.bootstrap}: expected 0 (analytic only) or a number of resamples")
    if args.bootstrap and args.bootstrap < 100:
        raise InputError(f"--bootstrap {args.bootstrap}: use at least 100 resamples, or 0 for analytic intervals")
    if not 0.0 < args.level < 1.0:
        raise InputError(f"--level {args.level}: expected a confidence level between 0 and 1")
    from agreement import PanelSettings, load_labels, panel_report, report_to_dict

    data = load_labels(args.table, unit=args.unit, rater=args.rater, label=args.label, cluster=args.cluster,
                       weight=args.weight, categories=args.categories)
    unknown = [j for j in args.judge if j not in data.raters]
    if unknown:
        raise InputError(f"--judge {unknown[0]}: no such rater in {args.table}; raters are {list(data.raters)}")
    if args.reference != "majority" and args.reference not in data.raters:
        raise InputError(f"--reference {args.reference}: expected 'majority' or a rater in {list(data.raters)}")
    if args.positive is not None and args.positive not in [str(c) for c in data.categories]:
        raise InputError(f"--positive {args.positive}: not a category; categories are {list(data.categories)}")
    positive = next((c for c in data.categories if str(c) == args.positive), None)
    subgroups = _read_column(args.table, args.unit, args.by) if args.by else None
    settings = PanelSettings(weights=args.weights, alpha_level=args.alpha_level, n_resamples=args.bootstrap,
                             cluster=args.cluster is not None, panel_coefficients=_coefficients(args.coefficients),
                             **({} if args.seed is None else {"seed": args.seed}))
    report = panel_report(data, judges=args.judge, tie_policy=args.tie_policy, positive=positive,
                          reference=args.reference, subgroups=subgroups, subgroup_name=args.by or "subgroup",
                          settings=settings)
    if args.json:
        import json

        print(json.dumps(report_to_dict(report, level=args.level), indent=1, allow_nan=False))
    else:
        print(render(report, level=args.level, cluster=args.cluster))
    return 0


def _coefficients(text: str | None) -> tuple[str, ...] | None:
    """--coefficients: None (the default set), 'all' (every registered coefficient) or a comma list."""
    if text is None:
        return None
    from agreement import COEFFICIENTS
    from samples import InputError

    names = list(COEFFICIENTS) if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in COEFFICIENTS]
    if unknown or not names:
        raise InputError(f"--coefficients {text}: unknown {unknown or 'empty list'}; expected 'all' or names from "
                         f"{', '.join(COEFFICIENTS)}")
    return tuple(names)


def _read_column(path: str, unit: str, column: str) -> dict[str, str]:
    """unit -> value of ``column`` (the --by subgroup), read straight from the table."""
    import csv
    import json
    from pathlib import Path

    from samples import InputError

    source = Path(path)
    suffix = source.suffix.lower()
    if suffix == ".csv":
        with source.open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
        if rows and column not in rows[0]:
            raise InputError(f"{path}: missing --by column {column!r} (columns: {', '.join(rows[0])})")
    elif suffix in (".jsonl", ".ndjson"):
        rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        import pandas as pd

        rows = pd.read_parquet(source).astype(str).to_dict("records")
    mapping: dict[str, str] = {}
    for line, row in enumerate(rows, start=2 if suffix == ".csv" else 1):
        if column not in row:
            raise InputError(f"{path}, line {line}: missing --by field {column!r}")
        value = str(row[column])
        if mapping.setdefault(str(row[unit]), value) != value:
            raise InputError(f"{path}, line {line}: unit {row[unit]!r} has two --by values "
                             f"({mapping[str(row[unit])]!r} and {value!r}); one value per unit expected")
    return mapping


# ---- plain-text rendering: aligned columns, no rich import (start-up matters) ----

def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _with_ci(result: Any, level: float, method: str) -> str:
    """value [CI]; method "se" prints value +/- SE instead (t quantiles would import scipy for every row)."""
    if not result.defined:
        return "undefined"
    if method == "se":
        return f"{_fmt(result.statistic)} +/-{_fmt(result.se)}"
    interval = result.confidence_interval(level, method)
    ci = f" [{_fmt(interval.low)}, {_fmt(interval.high)}]" if interval.defined else " [-]"
    return _fmt(result.statistic) + ci


def _table(headers: list[str], rows: list[list[str]], indent: str = "  ") -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += [indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def _undefined_notes(pairs: list[tuple[str, Any]]) -> list[str]:
    return [f"  {where} {NAMES.get(r.coefficient, r.coefficient)}: undefined ({r.undefined_reason})"
            for where, r in pairs if not r.defined]


def _pair_rows(panels: list[Any], label: Any, level: float, method: str) -> tuple[list[list[str]], list[str]]:
    rows, notes = [], []
    for panel in panels:
        res = panel.results
        kappa = res.get("cohen_kappa")
        kappa_cells = ([_with_ci(kappa, level, method), _fmt(kappa.prevalence_index), _fmt(kappa.bias_index)]
                       if kappa is not None else ["-", "-", "-"])
        ac1 = res.get("gwet_ac1")
        rows.append([*label(panel), str(panel.n_units), _with_ci(res["percent_agreement"], level, method),
                     *kappa_cells, _with_ci(ac1, level, method) if ac1 is not None else "-"])
        notes += _undefined_notes([(f"{panel.rater_a} vs {panel.rater_b}", r) for r in res.values()])
    return rows, notes


# Text tables list at most this many classes (open vocabularies have thousands); --json has all.
WIDE = 12
PAIR_HEADERS = ["n", "raw", "kappa", "PI", "BI", "AC1"]


def render(report: Any, *, level: float, cluster: str | None) -> str:
    """The report as aligned plain text."""
    s = report.settings
    method = "percentile" if s.n_resamples else "t"
    pct = f"{level:.0%}"
    if s.n_resamples:
        over = f"whole '{cluster}' clusters" if cluster else "units"
        ci = f"{pct} percentile bootstrap CIs, {s.n_resamples:,} resamples of {over}, seed {s.seed}"
    else:
        ci = f"{pct} t intervals from the analytic SE (df: units - 1, or clusters - 1)"
    out = [f"accord agree: {report.source}",
           f"{report.n_units} units, {report.n_ratings} ratings; categories: {', '.join(map(str, report.categories))}",
           f"humans ({len(report.humans)}): {', '.join(report.humans) or '-'}; "
           f"judges ({len(report.judges)}): {', '.join(report.judges) or '-'}",
           f"{ci}; weights {s.weights}; alpha {s.alpha_level}",
           "PI/BI: prevalence and bias index (Byrt, Bishop & Carlin 1993) beside each kappa"]
    missing = {r: m for r, m in report.missing_by_rater.items() if m}
    if missing:
        out.append("missing or unscored ratings: " + ", ".join(f"{r} {m}" for r, m in missing.items()))
    notes: list[str] = []
    m = report.majority
    if m is not None:
        out += ["", f"Human majority (tie policy {m.tie_policy}): {m.n} units with a majority label, "
                    f"{m.n_ties} tie(s), {m.n_unrated} unit(s) without a human rating, {m.n_single} with one"]
        if m.needs_adjudication:
            out.append("  needs adjudication: " + ", ".join(map(str, m.tied_units[:20]))
                       + (f" (+{m.n_ties - 20} more)" if m.n_ties > 20 else ""))
    h = report.human_panel
    if h is not None:
        out += ["", f"Human vs human ({len(h.raters)} annotators; {h.n_units} units, {h.n_pairable} with >= 2 "
                    f"ratings, {h.n_missing} missing ratings)"]
        rows = [["mean pairwise raw agreement", _fmt(h.mean_pairwise_agreement), "", "", "", ""]]
        for name, r in h.results.items():
            kappa = name == "fleiss_kappa"
            rows.append([NAMES.get(name, name), _with_ci(r, level, method), _fmt(r.se),
                         _fmt(h.prevalence_index) if kappa else "", _fmt(h.bias_index) if kappa else "",
                         str(r.n_units)])
        out.append(_table(["coefficient", f"value [{pct} CI]", "SE", "PI", "BI", "n"], rows))
        notes += _undefined_notes([("human vs human", r) for r in h.results.values()])
    if report.judges_vs_humans:
        out += ["", "Judge vs humans (vs the human majority with the CIs above; vs each annotator: "
                    "value +/- analytic SE)"]
        rows = []
        for jv in report.judges_vs_humans:
            if jv.vs_majority is not None:
                r, n = _pair_rows([jv.vs_majority], lambda p: [p.rater_a, "majority"], level, method)
                rows += r
                notes += n
            elif jv.undefined_reason:
                notes.append(f"  {jv.judge} vs majority: undefined ({jv.undefined_reason})")
            r, n = _pair_rows(list(jv.vs_annotators), lambda p: [p.rater_a, p.rater_b], level, "se")
            rows += r
            notes += n
            mean = jv.mean_vs_annotators
            rows.append([jv.judge, f"mean of {len(jv.vs_annotators)}", "", _fmt(mean["percent_agreement"]),
                         _fmt(mean.get("cohen_kappa")), "", "", _fmt(mean.get("gwet_ac1"))])
        out.append(_table(["judge", "vs", *PAIR_HEADERS], rows))
    for table in report.judge_pairs:
        where = "all units" if table.subgroup is None else table.subgroup
        out += ["", f"Judge vs judge ({where}: {table.n_units} units)"]
        rows, n = _pair_rows(list(table.pairs), lambda p: [p.rater_a, p.rater_b], level, method)
        notes += n
        for row, panel in zip(rows, table.pairs):
            cells = panel.disagreements()
            more = f"; +{len(cells) - WIDE} more" if len(cells) > WIDE else ""
            row.append("; ".join(f"{a}/{b} {c}" for a, b, c in cells[:WIDE]) + more)
        out.append(_table(["judge A", "judge B", *PAIR_HEADERS, "disagreements (A/B count)"], rows))
    for ref in report.references:
        kappa = ref.agreement.results.get("cohen_kappa")
        kappa_text = f", Cohen's kappa {_with_ci(kappa, level, method)}" if kappa is not None else ""
        out += ["", f"{ref.rater} against {ref.reference} ({ref.agreement.n_units} units): accuracy "
                    f"{_fmt(ref.accuracy)}{kappa_text}, macro F1 {_fmt(ref.macro_f1)}"]
        used = sorted((c for c in ref.per_class if c.support or c.predicted), key=lambda c: -c.support)
        rows = [[str(c.label), str(c.support), str(c.predicted), _fmt(c.precision), _fmt(c.recall), _fmt(c.f1)]
                for c in used[:WIDE]]
        out.append(_table(["class", "support", "predicted", "precision", "recall", "F1"], rows))
        if len(used) > WIDE:
            out.append(f"  ... {len(used) - WIDE} more classes (by support) in --json")
            continue
        cats = [str(c) for c in ref.agreement.categories]
        counts = ref.confusion.tolist()
        out.append(_table([f"{ref.reference} \\ {ref.rater}", *cats],
                          [[cats[i], *map(str, counts[i])] for i in range(len(cats))]))
        notes += [f"  {ref.rater} class {c.label}: {c.undefined_reason}" for c in used if c.undefined_reason]
    notes += [f"  {n}" for n in report.notes]
    if notes:
        out += ["", "Notes"] + notes
    return "\n".join(out)
