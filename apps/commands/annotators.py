"""Manage coding-app annotators: add (prints the token once), list, rotate, revoke."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("add", "list", "rotate", "revoke"), help="what to do")
    parser.add_argument("name", nargs="?", help="annotator name (add, rotate, revoke)")
    parser.add_argument("--study", required=True, help="study folder (its labels/store.sqlite)")
    parser.add_argument("--role", choices=("annotator", "adjudicator"), default="annotator", help="role for add (default annotator)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from annotate.store import Store
    from samples.errors import InputError

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
    token = store.add_annotator(args.name, args.role) if args.action == "add" else store.rotate_token(args.name)
    if args.json:
        print(json.dumps({"name": args.name, "role": args.role if args.action == "add" else None, "token": token}))
    else:
        print(f"token for {args.name} (shown once; only its hash is stored):\n{token}")
    return 0
