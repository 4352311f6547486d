"""Manage coding-app annotators: add (prints the token once), list, rotate, revoke.

An annotator added after blinding gets a seeded order of the existing tasks (the one
`accord blind` would have given that name), without re-blinding and without changing
anyone else's order.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from annotate import Store
    from samples import StudyLayout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("add", "list", "rotate", "revoke"), help="what to do")
    parser.add_argument("name", nargs="?", help="annotator name (add, rotate, revoke)")
    parser.add_argument("--study", required=True, help="study folder (its store: labels/store.sqlite or ACCORD_STORE_URL)")
    parser.add_argument("--role", choices=("annotator", "adjudicator"), default="annotator", help="role for add (default annotator)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from annotate import Store
    from samples import InputError, StudyLayout

    store = Store.for_study(args.study)
    if args.action == "list":
        orders = store.orders()
        counts = store.counts()
        rows = [
            {"name": a.name, "role": a.role, "active": a.revoked_at is None, "assigned": len(orders.get(a.name, [])),
             "labelled": counts.get(a.name, 0), "created_at": a.created_at}
            for a in store.annotators()
        ]
        if args.json:
            print(json.dumps(rows))
        else:
            for row in rows:
                state = "active" if row["active"] else "revoked"
                print(f"{row['name']:<20} {row['role']:<12} {state:<8} {row['labelled']}/{row['assigned']} labelled")
        return 0
    if not args.name:
        raise InputError(f"annotators {args.action}: a NAME is required")
    if args.action == "revoke":
        store.revoke(args.name)
        print(json.dumps({"name": args.name, "revoked": True}) if args.json else f"revoked {args.name}'s token; their labels are kept")
        return 0
    if args.action == "rotate":
        token = store.rotate_token(args.name)
        print(json.dumps({"name": args.name, "role": None, "token": token}) if args.json
              else f"token for {args.name} (shown once; only its hash is stored):\n{token}")
        return 0
    token, assigned = add(store, StudyLayout.of(args.study), args.name, args.role)
    if args.json:
        print(json.dumps({"name": args.name, "role": args.role, "token": token, "assigned": assigned}))
    else:
        print(f"token for {args.name} (shown once; only its hash is stored):\n{token}")
        if assigned:
            print(f"{args.name} has {assigned} task(s) to label in the coding app")
    return 0


def add(store: Store, layout: StudyLayout, name: str, role: str) -> tuple[str, int]:
    """Add an annotator; after blinding, give a new annotator their seeded order. Returns (token, tasks assigned).

    Everything that could refuse (the name, the blinded files, the blinding seed, the
    store's tasks) is checked before the annotator is created, so a refusal leaves the
    store as it was and a printed token always works.
    """
    from annotate import blinding_seed, check_name, load_orders, load_tasks
    from samples import InputError, check_generation, study_schemes

    check_name(name)
    if role != "annotator" or not layout.tasks.is_file():
        return store.add_annotator(name, role), 0
    check_generation(layout, "blind")  # the tasks and orders of one blind run, never a mix
    tasks = load_tasks(layout.tasks)
    orders = load_orders(layout.orders, tasks)
    seed = blinding_seed(layout)
    if seed is None and name not in orders:
        raise InputError(f"{layout.blind_audit}: no blinding seed recorded; {name!r} was not named at blind time and "
                         f"a late annotator's order is seeded by it (rerun accord blind, or add {name!r} there)")
    schemes = study_schemes(layout)
    store.load_tasks(tasks, orders, schemes=schemes)
    token = store.add_annotator(name, role)
    store.load_tasks(tasks, orders, late_seed=seed, schemes=schemes)
    return token, len(store.order(name))
