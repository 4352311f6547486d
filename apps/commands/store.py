"""The coding-app store: status (engine, migrations, rows and content hashes) and copy (a study's SQLite file into a database, checked).

`accord store copy --study S` moves the labels of a study that started on its SQLite file
to the database that ACCORD_STORE_URL (or the study file's `[annotation] options.store`,
or `--to`) names: one transaction into an empty store, then every table's row count and
content hash compared with the source; on a mismatch nothing is kept. Passwords never go
in the URL (PGPASSWORD or ~/.pgpass).
"""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("status", "copy"), help="status: what the store holds; copy: SQLite file -> database")
    parser.add_argument("--study", required=True, help="study folder")
    parser.add_argument("--to", help="copy: the target store's URL (default: ACCORD_STORE_URL, else the study file's "
                                     "[annotation] options.store); no password in it")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from annotate import Store, check_store_url, copy_store, store_location, with_study_schema
    from samples import InputError, StudyLayout

    layout = StudyLayout.of(args.study)
    if not layout.root.is_dir():
        raise InputError(f"--study {args.study!r}: not a folder")
    if args.action == "status":
        if args.to:
            raise InputError("--to: only for copy")
        store = Store.for_study(layout)
        tables = store.fingerprint()
        body = {"engine": store.engine.name, "location": store.location, "migrations": store.applied_migrations(),
                "integrity": store.integrity_check(),
                "tables": {name: {"rows": t.rows, "sha256": t.sha256} for name, t in tables.items()}}
    else:
        target_url = check_store_url(args.to, where="--to") if args.to else store_location(layout)  # a password first
        if not layout.store.is_file():
            raise InputError(f"{layout.store}: no SQLite store to copy (the study has not used its file)")
        if not isinstance(target_url, str):
            raise InputError(f"no target store: set ACCORD_STORE_URL or the study file's [annotation] options.store "
                             f"to the database URL, or give --to (the study's store is still {layout.store})")
        source = Store.open(layout.store, layout=layout)
        target = Store.open(with_study_schema(target_url, layout), layout=layout)
        tables = copy_store(source, target)
        body = {"source": source.location, "target": target.location,
                "tables": {name: {"rows": t.rows, "sha256": t.sha256} for name, t in tables.items()}}
    if args.json:
        print(json.dumps(body, indent=2))
        return 0
    if args.action == "status":
        print(f"{body['engine']} store {body['location']}: migrations {', '.join(body['migrations'])}; "
              f"integrity {body['integrity']}")
    else:
        print(f"copied {body['source']} -> {body['target']}; every table's rows and content hash match:")
    for name, table in body["tables"].items():
        print(f"  {name:<17} {table['rows']:>7} rows  sha256 {table['sha256'][:16]}")
    if args.action == "copy" and not args.to:
        print("the study now uses the database store (its SQLite file is kept as it was)")
    elif args.action == "copy":
        print(f"to use it: ACCORD_STORE_URL={body['target']} (or [annotation] options.store in the study file)")
    return 0
