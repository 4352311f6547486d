"""Importing judge verdicts people already have into a study's judge labels table.

A raw output (a cell such as ``YES``, or ``{"flag": 1, "first_recognition_turn": 3}``
from a JSONL file) goes through the same registered output parsers as a live
judge's reply (``judges.parsers``); without an output kind the cell must already be
one of the scheme's canonical labels. Anything unparseable is kept as an unscored
row with its reason, counted like any other. Rows are written as ``JudgeLabel``
rows to ``judges/imported/JUDGE.jsonl`` (one of the study's judge label files) with
a fingerprint naming the source file's sha256, so a changed file is a different
import. Either every row imports or nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from samples import (
    ANY_SCHEME,
    InputError,
    JudgeLabel,
    MatchColumns,
    StudyLayout,
    TableRow,
    UnitMatcher,
    check_columns,
    collect,
    file_sha256,
    get_scheme,
    import_rows,
    label_text,
    sha256_hex,
)

JUDGE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.@:+-]*$"


@dataclass(frozen=True, kw_only=True)
class JudgeImportReport:
    path: Path
    written: Path
    judge: str
    rows: int
    ok: int
    unscored: dict[str, int]
    outside: int = 0
    """Rows skipped by ``only_sample`` (about units the study does not have)."""


def _raw_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return label_text(value)


def judge_labels_from_rows(rows: Sequence[TableRow], matcher: UnitMatcher, *, judge: str, match: MatchColumns,
                           output_column: str, output_kind: str | None, parse_mode: str, scheme: str | None,
                           fingerprint: str) -> list[JudgeLabel]:
    from judges.parsers import PARSE_MODES, get_output_kind, parse_output
    from samples import DEFAULT_SCHEME

    if output_kind is not None:
        output_kind = get_output_kind(output_kind).name
    if parse_mode not in PARSE_MODES:
        raise InputError(f"--parse-mode {parse_mode!r}: expected one of {list(PARSE_MODES)}")

    scheme_of: dict[str, str] = {}  # unit kind -> its scheme: one registry look-up per kind, not per row
    canonical: dict[tuple[str, str], str | None] = {}  # (scheme, raw output) -> its label, read once per distinct cell

    def convert(row: TableRow) -> JudgeLabel:
        unit = matcher.unit_of(row, match)
        raw = _raw_text(row.get(output_column, required=False))
        base: dict[str, Any] = dict(unit_id=unit, judge=judge, fingerprint=fingerprint, raw_output=raw)
        if output_kind is not None:
            outcome = parse_output(output_kind, raw, mode=parse_mode)  # type: ignore[arg-type]
            return JudgeLabel(**base, label=outcome.label, label_strict=outcome.strict.label,
                              label_lenient=outcome.lenient.label, first_turn=outcome.first_turn,
                              parse_status=outcome.status, unscored_reason=outcome.reason)
        if raw is None or not raw.strip():
            return JudgeLabel(**base, label=None, parse_status="unscored", unscored_reason="empty")
        kind = matcher.kinds[unit]
        name = scheme or scheme_of.get(kind) or scheme_of.setdefault(kind, DEFAULT_SCHEME[kind])
        if (name, raw) not in canonical:
            canonical[name, raw] = raw if name == ANY_SCHEME else get_scheme(name).canonical(raw)
        label = canonical[name, raw]
        if label is None:
            return JudgeLabel(**base, label=None, parse_status="unscored",
                              unscored_reason=f"wrong_format: {raw!r} is not a {name} label {list(get_scheme(name).labels)}")
        return JudgeLabel(**base, label=label, label_strict=label, label_lenient=label, parse_status="ok")

    labels = collect(rows, convert)
    seen: dict[str, str] = {}
    problems = [f"{row.where}: a second verdict for unit {label.unit_id!r} (first at {seen[label.unit_id]})"
                for row, label in zip(rows, labels) if seen.setdefault(label.unit_id, row.where) != row.where]
    if problems:
        raise InputError(f"judge {judge!r}: duplicate verdicts; nothing was written", problems=problems)
    return labels


def import_judge_labels(path: str | Path, study: str | Path, *, judge: str, match: MatchColumns, output_column: str,
                        output_kind: str | None = None, parse_mode: str = "strict", scheme: str | None = None,
                        format: str | None = None, where: dict[str, str] | None = None,
                        rows: Sequence[TableRow] | None = None, only_sample: bool = False) -> JudgeImportReport:
    """Import one judge's verdicts from a table into ``study`` (replacing an earlier import of that judge).

    ``rows``: the table's rows already read (and selected) by the caller; ``path`` still names the source.
    """
    from samples import publish_import

    report, labels = judge_import(path, study, judge=judge, match=match, output_column=output_column,
                                  output_kind=output_kind, parse_mode=parse_mode, scheme=scheme, format=format,
                                  where=where, rows=rows, only_sample=only_sample)
    publish_import(study, [(report.written, labels)])
    return report


def judge_import(path: str | Path, study: str | Path, *, judge: str, match: MatchColumns, output_column: str,
                 output_kind: str | None = None, parse_mode: str = "strict", scheme: str | None = None,
                 format: str | None = None, where: dict[str, str] | None = None,
                 rows: Sequence[TableRow] | None = None, matcher: UnitMatcher | None = None,
                 only_sample: bool = False) -> tuple[JudgeImportReport, list[JudgeLabel]]:
    """The verdicts an import would write, every row checked, nothing written.

    ``only_sample``: rows about units the study does not have are skipped and counted (a judge run over
    the population is a superset of a labels-only study's units); without it they are errors.
    ``matcher``: units not yet published (``accord import table``).
    """
    import re

    if not re.match(JUDGE_NAME, judge):
        raise InputError(f"--judge {judge!r}: expected letters, digits and _ . @ : + - (starting with a letter or digit)")
    path, layout = Path(path), StudyLayout.of(study)
    rows = import_rows(path, format=format, rows=rows, where=where, scheme=scheme)
    check_columns(rows, {"--unit-column": [match.unit], "--trajectory-column": [match.trajectory],
                         "--kind-column": [match.kind], "--turn-column": [match.turn],
                         "--output-column": [output_column]}, source=path)
    matcher = matcher or UnitMatcher.for_study(layout)
    outside = 0
    if only_sample:
        kept = collect(rows, lambda row: row if matcher.knows(row, match) else None)
        outside = sum(row is None for row in kept)
        rows = [row for row in kept if row is not None]
        if not rows:
            raise InputError(f"{path}: none of its {outside} row(s) is about a unit of the study; nothing to import")
    fingerprint = sha256_hex(["import", judge, file_sha256(path), format, output_column, output_kind, parse_mode, scheme,
                              dict(sorted((where or {}).items()))])
    try:
        labels = judge_labels_from_rows(rows, matcher, judge=judge, match=match,
                                        output_column=output_column, output_kind=output_kind, parse_mode=parse_mode,
                                        scheme=scheme, fingerprint=fingerprint)
    except InputError as error:
        if only_sample or not any("is not a unit of the study" in p or "is not in the sealed key" in p
                                   for p in error.problems):
            raise
        raise InputError(f"{error}; a judge run over more units than the study's (the population): "
                         "--only-sample skips and counts those rows") from None
    labels.sort(key=lambda r: r.unit_id)
    target = layout.imported_judge_labels_dir / f"{judge}.jsonl"
    unscored: dict[str, int] = {}
    for label in labels:
        if label.parse_status != "ok":
            reason = (label.unscored_reason or "unknown").split(":")[0]
            unscored[reason] = unscored.get(reason, 0) + 1
    return JudgeImportReport(path=path, written=target, judge=judge, rows=len(labels),
                             ok=sum(label.parse_status == "ok" for label in labels),
                             unscored=dict(sorted(unscored.items())), outside=outside), labels
