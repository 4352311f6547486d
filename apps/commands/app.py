"""Run the coding app (Streamlit) for a study: blind annotation in the browser."""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

from apps.streamlit_command import check_address, check_port_free, serve
from samples import InputError

STREAMLIT_HINT = "the coding app needs Streamlit: pip install 'accord[app]'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", required=True, help="study folder (reads blind/tasks.jsonl and blind/orders.json, writes its store: labels/store.sqlite or ACCORD_STORE_URL)")
    parser.add_argument("--port", type=int, default=8501, help="port on 127.0.0.1 (default 8501)")
    parser.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--json", action="store_true", help="print the load report as JSON before starting")


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("streamlit") is None:
        raise InputError(STREAMLIT_HINT)
    import json

    from annotate import AppBackend
    from samples import StudyLayout

    study = Path(args.study).resolve()
    layout = StudyLayout(study)
    if not layout.tasks.is_file():
        raise InputError(f"{layout.tasks}: not found; run `accord blind` first (the app only serves blinded tasks)")
    check_address(args.address)
    check_port_free(args.address, args.port)
    backend = AppBackend(study=study)
    report = backend.push_files(layout.blind_dir)
    if args.json:
        print(json.dumps({"study": str(study), "n_tasks": report.n_tasks, "created": report.created,
                          "already_present": report.already_present, "annotators": list(report.annotators),
                          "url": f"http://{args.address}:{args.port}"}), flush=True)
    else:
        print(f"accord app: {report.n_tasks} tasks ({report.created} new) for {len(report.annotators)} annotator(s); "
              f"open http://{args.address}:{args.port}", flush=True)
    app = Path(__file__).resolve().parents[1] / "coding_app.py"
    return serve(app, address=args.address, port=args.port, env={**os.environ, "ACCORD_STUDY": str(study)})
