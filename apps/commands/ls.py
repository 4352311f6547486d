"""Label Studio backend: push blinded tasks to per-annotator projects, pull labels, show progress.

  accord ls push   --study DIR   per annotator an account and an organisation of their own (made in the server's
                                 /admin/ pages, sealed against every other user) with one project per unit kind;
                                 logins in DIR/labels/labelstudio_annotators.json (0600)
  accord ls pull   --study DIR   annotations -> DIR/labels/labelstudio.jsonl (HumanLabel rows; idempotent)
  accord ls status --study DIR   tasks and labelled tasks per annotator and project
  accord ls close  --study DIR   once the saved anytime verdict (accord gate) is decided for every judge: delete the
                                 tasks nobody labelled, so no annotator can open them (labels given are kept)

The server admin's API token comes from the environment variable ACCORD_LS_TOKEN
and, for push, that account's password from ACCORD_LS_ADMIN_PASSWORD (never the
command line, where other users could read them). README ("Label Studio blinding")
says what one organisation per annotator hides on Label Studio 1.23.2 and what not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    actions = parser.add_subparsers(dest="action", required=True, metavar="push|pull|status|close")
    for name, summary in (
        ("push", "create accounts and projects, import the blinded tasks (again: adds only what is missing)"),
        ("pull", "convert the annotations into the labels table (again: same table)"),
        ("status", "tasks and labelled tasks per annotator"),
        ("close", "the study's anytime verdict is decided: delete the tasks nobody labelled"),
    ):
        action = actions.add_parser(name, help=summary, description=summary)
        action.add_argument("--study", required=True, type=Path, help="the study folder")
        action.add_argument(
            "--url", default=None,
            help="Label Studio base URL (default: the one recorded by push, else $ACCORD_LS_URL, else http://127.0.0.1:8080)",
        )
        action.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        if name == "push":
            action.add_argument("--tasks", type=Path, default=None, help="blinded tasks (default STUDY/blind/tasks.jsonl)")
            action.add_argument("--orders", type=Path, default=None, help="annotator orders (default STUDY/blind/orders.json)")


def run(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from annotate import LABELSTUDIO_ADMIN_PASSWORD_ENV as ADMIN_PASSWORD_ENV
    from annotate import LABELSTUDIO_TOKEN_ENV as TOKEN_ENV
    from annotate import LabelStudioBackend
    from samples import InputError

    token = os.environ.get(TOKEN_ENV, "")
    if not token.strip():
        raise InputError(f"set {TOKEN_ENV} to the Label Studio API token of the server's admin account")
    with Progress(transient=True, disable=args.json or not sys.stderr.isatty()) as progress:
        bar = progress.add_task(f"Label Studio {args.action}", total=None)

        def on_progress(done: int, total: int, what: str) -> None:
            progress.update(bar, completed=done, total=total, description=f"{args.action}: {what}")

        backend = LabelStudioBackend(
            study=args.study, token=token, url=args.url, admin_password=os.environ.get(ADMIN_PASSWORD_ENV), on_progress=on_progress,
        )
        result = _ACTIONS[args.action](backend, args)
    _print(result, as_json=args.json)
    return 0


def _push(backend: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The annotate stage's push (``apps.upstream_stages``) to this server (closing it releases nothing)."""
    from apps.drivers import get_stage
    from apps.upstream_stages import AnnotateSettings
    from samples import StudyLayout

    settings = AnnotateSettings(backend=lambda layout: backend, pull=False, tasks=args.tasks,
                                orders=args.orders)
    report = get_stage("annotate").run(StudyLayout.of(args.study), settings).detail.pushed
    projects = report.details["projects"]
    lines = [
        (f"pushed {report.n_tasks} task(s) for {len(report.annotators)} annotator(s) to {backend.url}: "
         f"{report.created} imported, {report.already_present} already present"),
        *(f"  {name}: " + ", ".join(f"{kind} -> project {pid}" for kind, pid in kinds.items()) for name, kinds in projects.items()),
        f"annotator logins (mode 0600; give each person only their entry under 'annotators'): {report.details['credentials']}",
    ]
    if report.details["new_accounts"]:
        lines.append(f"new Label Studio accounts: {', '.join(report.details['new_accounts'])}")
    if report.details["revoked_memberships"]:
        lines.append(f"sealed the organisations: {report.details['revoked_memberships']} membership(s) revoked")
    if report.details["recreated_projects"]:
        lines.append("re-created after the server lost them (earlier labels kept): " + ", ".join(report.details["recreated_projects"]))
    return {
        "text": lines,
        "json": {
            "backend": report.backend, "url": backend.url, "n_tasks": report.n_tasks, "annotators": list(report.annotators),
            "created": report.created, "already_present": report.already_present, **report.details,
        },
    }


def _pull(backend: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The annotate stage's pull from this server, keeping the server's report of what changed."""
    from apps.drivers import get_stage
    from apps.upstream_stages import AnnotateSettings
    from samples import StudyLayout

    reporting = _Reporting(backend)
    settings = AnnotateSettings(backend=lambda layout: reporting, push=False, wait=False)
    get_stage("annotate").run(StudyLayout.of(args.study), settings)
    report = reporting.report
    lines = [
        (f"pulled {len(report.labels)} label(s) from {backend.url} into {report.path} "
         f"(added {report.added}, updated {report.updated}, unchanged {report.unchanged}, removed {report.removed}, "
         f"kept for re-created tasks {report.kept})"),
    ]
    if report.ignored:
        lines.append(f"{len(report.ignored)} annotation(s) are not labels and were left out:")
        lines.extend(f"  {reason}" for reason in report.ignored)
    return {
        "text": lines,
        "json": {
            "url": backend.url, "path": str(report.path), "n_labels": len(report.labels), "added": report.added,
            "updated": report.updated, "unchanged": report.unchanged, "removed": report.removed, "kept": report.kept,
            "ignored": list(report.ignored),
        },
    }


def _status(backend: Any, args: argparse.Namespace) -> dict[str, Any]:
    status = backend.status()
    lines = [f"{status.n_tasks} task(s) pushed to {backend.url}"]
    for name, assigned in status.assigned.items():
        lines.append(f"  {name}: {status.labelled[name]} of {assigned} labelled")
        for kind, project in status.details["projects"].get(name, {}).items():
            lines.append(f"    {kind}: {project['labelled']} of {project['tasks']} ({project['url']})")
    return {
        "text": lines,
        "json": {"backend": status.backend, "n_tasks": status.n_tasks, "labelled": dict(status.labelled),
                 "assigned": dict(status.assigned), **status.details},
    }


def _close(backend: Any, args: argparse.Namespace) -> dict[str, Any]:
    from agreement import study_decided
    from samples import InputError, StudyLayout

    if study_decided(args.study) is None:
        raise InputError(f"{StudyLayout.of(args.study).verdict}: no decided anytime verdict for every judge (accord "
                         f"gate {args.study} --policy P --sequential); the tasks stay open")
    closed = backend.close_remaining()
    lines = [f"closed {sum(closed.values())} unlabelled task(s) on {backend.url}: the study is decided",
             *(f"  {name}: {n}" for name, n in closed.items())]
    return {"text": lines, "json": {"url": backend.url, "closed": closed}}


class _Reporting:
    """The server's backend as the annotate stage pulls from it, keeping the pull's report (added, updated, ...)."""

    def __init__(self, backend: Any) -> None:
        self.backend, self.name, self.report = backend, backend.name, None

    def pull(self) -> list[Any]:
        self.report = self.backend.pull_report()
        return list(self.report.labels)

    def close(self) -> None:
        self.backend.close()


_ACTIONS = {"push": _push, "pull": _pull, "status": _status, "close": _close}


def _print(result: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result["json"], indent=1, sort_keys=True))
    else:
        print("\n".join(result["text"]))
