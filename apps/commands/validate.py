"""Validate a study's judges against its human annotators (agreement, baselines, per-class report).

Joins the sealed key, every backend's human labels (labels/human.jsonl from the coding
app, labels/labelstudio.jsonl from Label Studio, labels/imported/*.jsonl) and
judges/labels.jsonl; reports per unit kind: human-human agreement (independent labels
only), each judge vs the initial human majority and vs the resolved reference
(adjudicated label, else the majority) side by side with the adjudication counts, vs
each annotator, judge pairs overall and per setting/split with directional
disagreements, per-class precision/recall/F1, unscored counts and degenerate
baselines, each with cluster-bootstrap CIs by trajectory. Writes
STUDY/validation/validation.json, which lists the codebook versions the human labels were
given under; ``--by-codebook`` adds one validation per version (``by_codebook``).
"""

from __future__ import annotations

import argparse

from apps.commands import resamples
from samples import DEFAULT_LEVEL, DEFAULT_SEED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder (sealed/key.jsonl, labels/*.jsonl, judges/labels.jsonl)")
    parser.add_argument("--cluster", default="trajectory",
                        help="what the bootstrap resamples: trajectory (default), case (one item across models: "
                             "the part of the trajectory id after '::') or a unit field, e.g. item_id")
    parser.add_argument("--judge", action="append", metavar="NAME", help="validate only these judges (repeatable)")
    parser.add_argument("--tie-policy", default="exclude",
                        help="tied human majority: exclude (default), needs-adjudication, positive or negative")
    parser.add_argument("--weighted", action="store_true",
                        help="reweight every estimate by 1/inclusion probability of the sample design")
    parser.add_argument("--n-resamples", type=resamples, default=10_000, help="cluster bootstrap resamples (default 10000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help=f"confidence level (default {DEFAULT_LEVEL})")
    parser.add_argument("--by-codebook", action="store_true",
                        help="also validate the human labels of each codebook version on their own")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")


def run(args: argparse.Namespace) -> int:
    from agreement import ehq_text, format_validation, print_document, status
    from apps.builtin_stages import ValidateSettings
    from apps.drivers import get_stage
    from samples import StudyLayout

    settings = ValidateSettings(cluster=args.cluster, judges=tuple(args.judge) if args.judge else None,
                                tie_policy=args.tie_policy, weighted=args.weighted, n_resamples=args.n_resamples,
                                seed=args.seed, level=args.level, by_codebook=args.by_codebook)
    layout = StudyLayout.of(args.study)
    with status(f"validating {layout.root} ({args.n_resamples} cluster-bootstrap resamples) ..."):
        written = get_stage("validate").run(layout, settings)
    body, (result, splits) = written.document, written.detail

    def text(_: dict) -> str:
        parts = [format_validation(result)]
        if len(body["codebook_versions"]) > 1:
            parts.append("\nnote: human labels were given under " + ", ".join(
                f"codebook {v[:12]} ({n})" for v, n in body["codebook_versions"].items())
                + ("" if args.by_codebook else "; --by-codebook validates each version on its own"))
        for split in splits:
            parts.append(f"\n#### codebook {split.version[:12]}: {split.n_labels} labels on {split.n_units} units")
            parts.append(format_validation(split.result))
        ehq = ehq_text(layout)
        if ehq:
            parts.append(f"\n#### EHQ (the [ehq] stage, {layout.ehq})\n{ehq}")
        return "\n".join(parts)

    print_document(layout.validation, body, as_json=args.json, text=text)
    return 0
