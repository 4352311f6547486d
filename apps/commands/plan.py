"""Plan a validation: units needed for a policy to accept a judge, and its operating characteristic.

Simulates whole studies under the design's assumptions and applies the policy's
criteria as the gate does (agreement.plan); prints the units needed per criterion
and for the policy at the target power, and P(ACCEPT) against the judge's true
agreement (the OC curve) as a table, optionally as a PNG (--plot).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", required=True, help="gate policy file (TOML), e.g. data/policies/strict.toml")
    parser.add_argument("--positive-rate", type=float, required=True, help="expected share of positive units")
    parser.add_argument("--judge-agreement", type=float, required=True,
                        help="the judge's expected true agreement with the human majority (on --coefficient)")
    parser.add_argument("--human-agreement", type=float, required=True,
                        help="expected raw (percent) agreement between two annotators")
    parser.add_argument("--annotators", type=int, required=True, help="annotators labelling every unit")
    parser.add_argument("--turns-per-trajectory", type=float, default=1.0,
                        help="mean units per trajectory (1 = independent units; default 1)")
    parser.add_argument("--icc", type=float, default=0.2,
                        help="intra-trajectory correlation of the positive label (default 0.2)")
    parser.add_argument("--coefficient", help="coefficient of --judge-agreement and of the OC curve's axis "
                                              "(default: the policy's first agreement_floor coefficient)")
    parser.add_argument("--unscored-rate", type=float, default=0.0, help="expected share of unscored judge rows")
    parser.add_argument("--power", type=float, default=0.8, help="target P(ACCEPT) for a judge of the design (0.8)")
    parser.add_argument("--units", type=int, help="units of the OC curve (default: the units the policy needs)")
    parser.add_argument("--studies", type=int, default=600, help="simulated studies per point (default 600)")
    parser.add_argument("--plot", metavar="PNG", help="write the OC curve to this PNG file")
    parser.add_argument("--sequential", action="store_true",
                        help="also: expected and 90th-percentile units to a decision under anytime monitoring "
                             "(agreement/anytime.py), at the design's agreement and at each floor")
    parser.add_argument("--max-units", type=int, default=1000,
                        help="with --sequential: labelling stops undecided at this many units (default 1000)")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def run(args: argparse.Namespace) -> int:
    import json

    from agreement import Design, format_plan, load_policy, plot_oc
    from agreement import plan_policy as plan
    from samples import InputError

    policy = load_policy(args.policy)
    coefficient = args.coefficient or next(
        (c.agreement_bound.coefficient for c in policy.criteria if c.agreement_bound is not None), "percent_agreement")
    if args.studies < 50:
        raise InputError(f"--studies {args.studies}: expected at least 50 simulated studies per point")
    design = Design(positive_rate=args.positive_rate, judge_agreement=args.judge_agreement,
                    human_agreement=args.human_agreement, annotators=args.annotators,
                    turns_per_trajectory=args.turns_per_trajectory, coefficient=coefficient, icc=args.icc,
                    unscored_rate=args.unscored_rate)
    result = plan(policy, design, power=args.power, units=args.units, studies=args.studies)
    if args.plot:
        plot_oc(result, args.plot)
    body, text = result.to_dict(), format_plan(result)
    if args.sequential:
        body["sequential"], more = _sequential(policy, design, result, args)
        text += "\n" + more
    print(json.dumps(body, indent=2) if args.json else text)
    return 0


def _sequential(policy, design, result, args) -> tuple[list[dict], str]:
    """Units to an anytime decision at the design's agreement and at each floor, beside the fixed-n answer."""
    from dataclasses import asdict

    from agreement import sequential_plan
    from samples import DEFAULT_SEED, InputError

    if not 10 <= args.max_units <= 100_000:
        raise InputError(f"--max-units {args.max_units}: expected 10 to 100000 units")
    agreements = sorted({design.judge_agreement, *result.floors})
    with _status("simulating anytime decisions ..."):
        points = sequential_plan(policy, design, agreements=agreements, max_units=args.max_units,
                                 studies=min(args.studies, 200), seed=DEFAULT_SEED)
    fixed = result.units_needed.get("policy")
    lines = [f"anytime monitoring (a look after every trajectory, {min(args.studies, 200)} simulated studies, "
             f"stopping undecided at {args.max_units} units; fixed-n design: "
             f"{fixed if fixed is not None else 'not reached'} units):"]
    for p in points:
        lines.append(f"  true {design.coefficient} {p.agreement:.3f}: mean {p.mean_units:.0f} units, 90th percentile "
                     f"{p.p90_units:.0f}; ACCEPT {p.accept:.0%}, REJECT {p.reject:.0%}, undecided {p.undecided:.0%}")
    return [asdict(p) for p in points], "\n".join(lines)


def _status(message: str):
    from agreement import status

    return status(message)
