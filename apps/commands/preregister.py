"""Register the policy, the judges' calls and the sample before the first human label.

Appends a record to STUDY/preregistration.jsonl: the policy (content and sha256), each
judge's calls on the sampled units (prompt sha, model, parameters, parser, unit kind),
the sample files' sha256, the time and the number of human labels already in the study.
Every later `accord gate` says whether the policy and each judge were registered before
the labels they are gated on, and how many versions of the judge have been gated on the
same human sample; a policy's `preregistration` criterion can require both.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder (sampled and judged, not yet labelled by people)")
    parser.add_argument("--policy", required=True, help="the gate policy file (TOML) the judges will be gated under")
    parser.add_argument("--judge", action="append", required=True, metavar="NAME",
                        help="a judge whose calls are registered (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")


def run(args: argparse.Namespace) -> int:
    import json

    from agreement import load_policy, preregister
    from samples import StudyLayout

    record = preregister(args.study, load_policy(args.policy), args.judge)
    if args.json:
        print(json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True))
        return 0
    when = "before the first human label" if record.human_labels == 0 else \
        f"AFTER {record.human_labels} human labels (gates will say the judges were not registered before them)"
    print(f"registered policy {record.policy['sha256'][:12]} and judges {sorted(record.judges)} at "
          f"{record.registered_at}, {when}, in {StudyLayout.of(args.study).preregistration}")
    return 0
