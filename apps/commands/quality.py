"""Annotator quality: each annotator against the others, competence, time per unit, unsure share, flags.

Per unit kind and annotator, from the independent human labels: leave-one-out Cohen's
kappa and Gwet's AC1 against the majority of the other annotators (cluster-bootstrap
intervals by trajectory), Dawid-Skene and MACE competence (crowd-kit, the optional
`quality` extra), the median seconds per unit, the share of unsure flags and the
accuracy on the study's gold units (Wilson score interval; `accord gold`). With
--policy the settings (tie policy, level, resamples, seed) and the flag rule (the
policy's [quality] table) are the gate's, so the annotators flagged here are the ones
a `human_ceiling` criterion with `exclude_flagged = true` leaves out. Writes
STUDY/validation/quality.json.
"""

from __future__ import annotations

import argparse

from apps.commands import resamples
from samples import DEFAULT_LEVEL

DEFAULTS = {"tie_policy": "exclude", "n_resamples": 10_000, "level": DEFAULT_LEVEL}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder (sealed/key.jsonl, labels/*.jsonl, judges/labels.jsonl)")
    parser.add_argument("--policy", help="gate policy TOML: its settings and its [quality] flag rule")
    parser.add_argument("--cluster", default="trajectory",
                        help="what the bootstrap resamples: trajectory (default), case or a unit field (as accord run "
                             "does under the study file's [validation] cluster)")
    parser.add_argument("--tie-policy", help="without --policy: tied majority of the others: exclude (default), "
                                             "needs-adjudication, positive or negative")
    parser.add_argument("--n-resamples", type=resamples, help="without --policy: cluster bootstrap resamples (default 10000)")
    parser.add_argument("--level", type=float, help=f"without --policy: confidence level (default {DEFAULT_LEVEL})")
    parser.add_argument("--json", action="store_true", help="print the document as JSON")


def run(args: argparse.Namespace) -> int:
    from agreement import QualitySettings, format_quality, settings_from_policy, status
    from samples import InputError, StudyLayout

    given = {name: getattr(args, name) for name in DEFAULTS if getattr(args, name) is not None}
    if args.policy and given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise InputError(f"{flags}: the settings come from --policy {args.policy}; give one or the other")
    if args.policy:
        from agreement import load_policy

        settings = settings_from_policy(load_policy(args.policy))
    else:
        settings = QualitySettings(**{**DEFAULTS, **given})
    from apps.builtin_stages import QualityStageSettings
    from apps.drivers import get_stage

    layout = StudyLayout.of(args.study)
    with status(f"annotator quality of {layout.root} ({settings.n_resamples} cluster-bootstrap resamples) ..."):
        written = get_stage("quality").run(layout, QualityStageSettings(quality=settings, cluster=args.cluster))
    if args.json:
        import json

        from agreement import QualityDocument

        document = QualityDocument.model_validate(written.document)
        print(json.dumps(document.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        print(format_quality(written.detail))
        print(f"\nwrote {layout.quality}")
    return 0
