"""Family-bias audit: does a judge err differently on responses from different model families?

Per evaluated model: the score from judge labels and from the human reference (the
resolved reference by default: the adjudicated label where one exists, else the
majority) on the same units and bias = judge - human (cluster-bootstrap CIs); per
family: the bias contrast, raw and adjusted for each model's reference positive rate,
with t intervals over models, an exact (or 20,000-permutation) p, Holm-adjusted, and
partial correlations; rank preservation; an error matrix of every judge (with its
family) x response family. Reads a study (STUDY/audit/audit.json is written) or a --table with columns
unit, cluster, model, family, judge, human [, judge_name, weight]. Observational.

On a pairwise study (``[preference]``, e.g. the MT-Bench self-preference study) ``accord audit STUDY``
prints the self-preference answer from the study's preference document (the one the report shows):
the verdict, what was measured and the cells whose interval excludes 0 with their Holm-adjusted p.
"""

from __future__ import annotations

import argparse

from apps.commands import resamples
from samples import DEFAULT_LEVEL, DEFAULT_SEED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", nargs="?", help="study folder (or use --table)")
    parser.add_argument("--table", help="audit table (.csv or .jsonl) instead of a study")
    parser.add_argument("--judge", help="the judge audited (required for a study with several judges)")
    parser.add_argument("--positive", action="append", metavar="LABEL",
                        help="a label the audited score counts (repeatable), e.g. --positive ABSTAIN --positive HEDGE; "
                             "required for the family-bias audit (a pairwise study's self-preference needs none)")
    parser.add_argument("--model-field", default="backbone", help="stratum naming the evaluated model (default backbone)")
    parser.add_argument("--judge-family", action="append", default=[], metavar="JUDGE=FAMILY",
                        help="family of a judge, for the judge-family x response-family matrix (repeatable)")
    parser.add_argument("--model-family", action="append", default=[], metavar="MODEL=FAMILY",
                        help="family of an evaluated model (repeatable); default: the study file's [preference] "
                             "model_families (STUDY/study.json), else the units' family stratum")
    parser.add_argument("--tie-policy", default="exclude", help="human-majority ties (default exclude)")
    parser.add_argument("--cluster", default="trajectory",
                        help="what the bootstrap resamples: trajectory (default), case (one item across models: "
                             "the part of the trajectory id after '::') or a unit field, e.g. item_id")
    parser.add_argument("--reference", choices=("resolved", "human_majority"), default="resolved",
                        help="the human reference: resolved (the adjudicated label where one exists, else the "
                             "majority; the default) or human_majority (independent labels only)")
    parser.add_argument("--n-resamples", type=resamples, default=10_000, help="cluster bootstrap resamples (default 10000)")
    parser.add_argument("--n-permutations", type=resamples, default=20_000,
                        help="random permutations when exact enumeration is infeasible (default 20000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed (default {DEFAULT_SEED})")
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help=f"confidence level (default {DEFAULT_LEVEL})")
    parser.add_argument("--json", action="store_true", help="print the audit as JSON")


def _families(pairs: list[str], option: str = "--judge-family", name: str = "JUDGE") -> dict[str, str]:
    from samples import InputError

    out = {}
    for pair in pairs:
        key, sep, family = pair.partition("=")
        if not sep or not key or not family:
            raise InputError(f"{option} {pair!r}: expected {name}=FAMILY")
        out[key] = family
    return out


def _previous(path) -> str | None:
    """What an existing audit file held (its positive labels and reference), None when there is none."""
    import json

    if not path.is_file():
        return None
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "an unreadable earlier audit"
    return f"the earlier audit counted {body.get('positive')} against the {body.get('reference') or 'human majority'}"


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from agreement import family_audit as audit
    from agreement import format_audit, format_versus_majority, print_document, publish, read_audit_table, status
    from apps.builtin_stages import AuditSettings
    from apps.drivers import get_stage
    from samples import InputError, StudyLayout

    if (args.study is None) == (args.table is None):
        raise InputError("give a study folder or --table FILE (not both)")
    preference = _preference(args.study) if args.study else None
    if not args.positive:
        if preference is None:
            raise InputError("--positive LABEL: required for the family-bias audit (the study has no self-preference "
                             "results: a pairwise study's [preference] section, run by `accord run`)")
        return _print_preference(preference, as_json=args.json)
    families = _families(args.judge_family)
    settings = AuditSettings(judge=args.judge, positive=tuple(args.positive), tie_policy=args.tie_policy,
                             model_field=args.model_field, reference=args.reference, judge_families=families or None,
                             model_families=_families(args.model_family, "--model-family", "MODEL") or None,
                             n_resamples=args.n_resamples, n_permutations=args.n_permutations, seed=args.seed,
                             level=args.level, cluster=args.cluster)

    def text(_: object) -> str:
        extra = format_versus_majority(body["versus_majority"]) if body.get("versus_majority") else ""
        return format_audit(result, simulated=body["simulated"]) + extra

    if args.table:  # a table, not a study: no study stage
        out = Path(args.table).with_suffix(".audit.json")
        with status("auditing (cluster bootstrap and permutations) ..."):
            try:
                result = audit(read_audit_table(Path(args.table)), judge=args.judge, positive=args.positive,
                               n_resamples=args.n_resamples, n_permutations=args.n_permutations, seed=args.seed,
                               level=args.level, judge_families=families or None)
            except ValueError as error:
                raise InputError(str(error)) from None
        body = {**result.to_dict(), "simulated": False}
        previous = _previous(out)
        publish(out, body, as_json=args.json, text=text)
    else:
        out = StudyLayout.of(args.study).audit
        previous = _previous(out)
        with status("auditing (cluster bootstrap and permutations) ..."):
            written = get_stage("audit").run(StudyLayout.of(args.study), settings)
        body, result = written.document, written.detail
        print_document(out, body, as_json=args.json, text=text)
    if previous:  # the report and the gate read this file: say what was replaced
        import sys

        print(f"accord audit: replaced {out} ({previous})", file=sys.stderr)
    if preference is not None and not args.json:
        _print_preference(preference, as_json=False)
    return 0


def _preference(study: str):
    """The study's self-preference document (``accord run``'s preference stage), None when it has none."""
    from pathlib import Path

    from agreement import PreferenceDocument, read_document
    from samples import InputError

    if not Path(study).is_dir():
        raise InputError(f"{study}: no such study folder")
    return read_document(PreferenceDocument, study)


def _print_preference(document, *, as_json: bool) -> int:
    import json

    from agreement import summary_line

    line = summary_line(document.cells, document.level)
    if as_json:
        print(json.dumps({"self_preference": line, **document.model_dump(mode="json")}, indent=2, sort_keys=True))
    else:
        print(line)
    return 0
