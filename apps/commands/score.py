"""Score the benchmark with an accepted judge: ISE accuracy, Identify, Solve, Escalate per cell.

Runs only when the gate verdict (STUDY/gate/verdict.json) accepted every judge used
and their sampled labels are unchanged; --force scores anyway and stamps every
output UNACCEPTED. Each rate has a 10,000-resample percentile bootstrap CI and, on
the conflict rows, Rogan-Gladen and PPI++ corrections from the human-validated
sample. Writes STUDY/score/score.json.
"""

from __future__ import annotations

import argparse

from apps.commands import resamples
from samples import DEFAULT_LEVEL, DEFAULT_SEED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder (trajectories.jsonl, units.jsonl, judges/labels.jsonl, gate/)")
    parser.add_argument("--identify-judge", required=True, help="judge over identify_trajectory units")
    parser.add_argument("--escalate-judge", required=True, help="judge over escalate_final units")
    parser.add_argument("--correctness-judge", help="judge over correctness units (c_i)")
    parser.add_argument("--correctness-field", help="or: Trajectory.metadata field with c_i (bool or score)")
    parser.add_argument("--force", action="store_true", help="score without an accepted verdict (stamped UNACCEPTED)")
    parser.add_argument("--tie-policy", help="human-majority ties for the corrections (default: the gate policy's)")
    parser.add_argument("--reference", choices=("resolved", "human_majority"), default="resolved",
                        help="human reference of the corrections: resolved (the adjudicated label where one exists, "
                             "else the majority; the default) or human_majority")
    parser.add_argument("--n-resamples", type=resamples, default=10_000, help="bootstrap resamples (default 10000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help=f"confidence level (default {DEFAULT_LEVEL})")
    parser.add_argument("--json", action="store_true", help="print the score document as JSON")


def run(args: argparse.Namespace) -> int:
    import sys

    from agreement import GateRefusal, ehq_text, format_score, print_document, status
    from apps.builtin_stages import ScoreSettings
    from apps.drivers import get_stage
    from samples import StudyLayout

    settings = ScoreSettings(identify_judge=args.identify_judge, escalate_judge=args.escalate_judge,
                             correctness_judge=args.correctness_judge, correctness_field=args.correctness_field,
                             force=args.force, tie_policy=args.tie_policy, reference=args.reference,
                             n_resamples=args.n_resamples, seed=args.seed, level=args.level)
    layout = StudyLayout.of(args.study)
    try:
        with status(f"scoring {args.study} ({args.n_resamples} bootstrap resamples per rate) ..."):
            written = get_stage("score").run(layout, settings)
    except GateRefusal as refusal:
        print(f"accord score: not scored: {refusal} (use --force to score anyway, stamped UNACCEPTED)",
              file=sys.stderr)
        return 1
    ehq = ehq_text(layout)

    def text(body: dict) -> str:
        return format_score(body) + (f"\n\nEHQ (the [ehq] stage, {layout.ehq})\n{ehq}" if ehq else "")

    print_document(layout.score, written.document, as_json=args.json, text=text)
    return 0
