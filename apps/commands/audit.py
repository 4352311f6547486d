"""Family-bias audit: does a judge err differently on responses from different model families?

Per evaluated model: the score from judge labels and from the human majority on the
same units and bias = judge - human (cluster-bootstrap CIs); per family: the bias
contrast with an exact (or 20,000-permutation) p over models, Holm-adjusted, and
partial correlations; rank preservation; a judge-family x response-family error
matrix. Reads a study (STUDY/audit/audit.json is written) or a --table with columns
unit, cluster, model, family, judge, human [, judge_name, weight]. Observational.
"""

from __future__ import annotations

import argparse

from apps.commands import resamples


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", nargs="?", help="study folder (or use --table)")
    parser.add_argument("--table", help="audit table (.csv or .jsonl) instead of a study")
    parser.add_argument("--judge", help="the judge audited (required for a study with several judges)")
    parser.add_argument("--positive", action="append", required=True, metavar="LABEL",
                        help="a label the audited score counts (repeatable), e.g. --positive ABSTAIN --positive HEDGE")
    parser.add_argument("--model-field", default="backbone", help="stratum naming the evaluated model (default backbone)")
    parser.add_argument("--judge-family", action="append", default=[], metavar="JUDGE=FAMILY",
                        help="family of a judge, for the judge-family x response-family matrix (repeatable)")
    parser.add_argument("--tie-policy", default="exclude", help="human-majority ties (default exclude)")
    parser.add_argument("--n-resamples", type=resamples, default=10_000, help="cluster bootstrap resamples (default 10000)")
    parser.add_argument("--n-permutations", type=resamples, default=20_000,
                        help="random permutations when exact enumeration is infeasible (default 20000)")
    parser.add_argument("--seed", type=int, default=20261129, help="seed (default 20261129)")
    parser.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--json", action="store_true", help="print the audit as JSON")


def _families(pairs: list[str]) -> dict[str, str]:
    from samples.errors import InputError

    out = {}
    for pair in pairs:
        judge, sep, family = pair.partition("=")
        if not sep or not judge or not family:
            raise InputError(f"--judge-family {pair!r}: expected JUDGE=FAMILY")
        out[judge] = family
    return out


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from agreement.audit import audit, audit_study, format_audit, read_audit_table
    from agreement.study_io import load_study, publish, status
    from samples.errors import InputError
    from samples.layout import StudyLayout

    if (args.study is None) == (args.table is None):
        raise InputError("give a study folder or --table FILE (not both)")
    if args.n_resamples < 100 or args.n_permutations < 100:
        raise InputError("--n-resamples and --n-permutations: expected at least 100")
    families = _families(args.judge_family)
    settings = dict(positive=args.positive, n_resamples=args.n_resamples, n_permutations=args.n_permutations,
                    seed=args.seed, level=args.level, judge_families=families or None)
    with status("auditing (cluster bootstrap and permutations) ..."):
        if args.table:
            try:
                result = audit(read_audit_table(Path(args.table)), judge=args.judge, **settings)
            except ValueError as error:
                raise InputError(str(error)) from None
            body, out = {**result.to_dict(), "simulated": False}, Path(args.table).with_suffix(".audit.json")
        else:
            study = load_study(args.study)
            result, body = audit_study(study, judge=args.judge, tie_policy=args.tie_policy,
                                       model_field=args.model_field, **settings)
            out = StudyLayout.of(study.root).audit
    from agreement.documents import AuditDocument

    publish(out, body, as_json=args.json, text=lambda _: format_audit(result, simulated=body["simulated"]),
            model=None if args.table else AuditDocument)
    return 0
