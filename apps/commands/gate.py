"""Acceptance gate: ACCEPT or REJECT each judge under a policy file (exit 0 accept, 1 reject).

Every threshold comes from the policy (see data/policies/README.md); a criterion
that cannot be measured, or whose sample is below the size at which its interval
was seen to cover, fails. Each criterion prints its test, value, interval (level,
method) and threshold. Writes STUDY/gate/verdict.json with the verdicts, the
policy (content and sha256), the fingerprints of the inputs and each judge's
operating characteristic (where the study's design sits on the policy's OC curve).
With ``--sequential`` (or a policy's ``monitoring = "anytime"``) the verdict is the
anytime gate's (agreement/anytime.py): CONTINUE (exit 1) until the evidence decides.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder")
    parser.add_argument("--cluster", default="trajectory",
                        help="what the bootstrap resamples: trajectory (default), case (one item across models: "
                             "the part of the trajectory id after '::') or a unit field, e.g. item_id")
    parser.add_argument("--policy", required=True, help="gate policy file (TOML), e.g. data/policies/strict.toml")
    parser.add_argument("--judge", action="append", metavar="NAME",
                        help="judge(s) to gate (repeatable; default: the policy's judge, else every judge)")
    parser.add_argument("--sequential", action="store_true",
                        help="the anytime-valid gate (as the policy's monitoring = \"anytime\"): ACCEPT, REJECT or "
                             "CONTINUE, valid however often it is looked at, with the look at which it was decided")
    parser.add_argument("--json", action="store_true", help="print the verdict file's content as JSON")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from agreement import print_document, status
    from apps.builtin_stages import GateSettings
    from apps.drivers import get_stage
    from samples import StudyLayout

    layout = StudyLayout.of(args.study)
    settings = GateSettings(policy=Path(args.policy), judges=tuple(args.judge) if args.judge else None,
                            sequential=args.sequential, cluster=args.cluster)
    with status(f"gating {layout.root} under {args.policy} ..."):
        written = get_stage("gate").run(layout, settings)
    print_document(layout.verdict, written.document, as_json=args.json, text=lambda _: written.detail)
    return 0 if written.document["verdict"] == "ACCEPT" else 1
