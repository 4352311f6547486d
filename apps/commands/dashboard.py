"""Open the study dashboard (Streamlit): the report's tables, plots and verdict, interactively.

Serves on 127.0.0.1 only. --print-command shows the streamlit command instead of
running it.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="study folder (after accord validate / audit / gate / score)")
    parser.add_argument("--port", type=int, default=8501, help="port on 127.0.0.1 (default 8501)")
    parser.add_argument("--print-command", action="store_true", help="print the streamlit command and exit")


def command(port: int) -> list[str]:
    from pathlib import Path

    from apps.streamlit_command import streamlit_command

    return streamlit_command(Path(__file__).resolve().parents[1] / "dashboard.py", address="127.0.0.1", port=port)


def run(args: argparse.Namespace) -> int:
    import importlib.util
    from pathlib import Path

    from samples import InputError

    if not Path(args.study).is_dir():
        raise InputError(f"{args.study}: study folder not found")
    import os

    cmd = command(args.port)
    study = str(Path(args.study).resolve())
    if args.print_command:
        print(f"ACCORD_STUDY={study} " + " ".join(cmd))
        return 0
    if importlib.util.find_spec("streamlit") is None:
        raise InputError("the dashboard needs Streamlit: pip install 'accord[app]'")
    from apps.streamlit_command import check_port_free, serve

    check_port_free("127.0.0.1", args.port)
    print(f"accord dashboard: http://127.0.0.1:{args.port}  (Ctrl-C to stop)", flush=True)
    return serve(Path(__file__).resolve().parents[1] / "dashboard.py", address="127.0.0.1", port=args.port,
                 env={**os.environ, "ACCORD_STUDY": study})
