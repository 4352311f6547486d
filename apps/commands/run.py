"""Run a study file end to end: every automated stage in order, skipping what is already done.

  accord run STUDY.toml [--output DIR] [--simulate-annotators | --interactive] [--base-url URL] [--json]
  accord run STUDY.toml STUDY.toml ... [--jobs N] [--quiet]

Stages (ingest, judge, sample, blind, annotate, validate, audit, gate, score,
report; plus the demo generators) are skipped when their input fingerprints match
the ones recorded in STUDY/state.json and their outputs are unchanged, so a second
run performs no judge call and no resampling. The run stops at the human stage,
with instructions, while annotators still have tasks to label (exit 0); run it
again when they are done. Exit 1 when the gate rejects a judge, 2 on a bad study file.

Several study files run one after another in one process (the libraries load once), or
``--jobs N`` side by side in N worker processes; each study's lines are printed together,
in the order the files were given, as soon as it and every study before it are done. Every
study file is read before any study runs; the exit status is the worst of the studies' (2 over 1 over 0).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", nargs="+", help="the study file (study.toml); several run in turn or side by side")
    parser.add_argument("--output", help="study folder to write (default: the study file's `output`; one study only)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="studies run side by side, each in its own worker process (default 1: one after another)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--simulate-annotators", action="store_true",
                      help="let the study's simulated panel label (demo; its labels are never called human)")
    mode.add_argument("--interactive", action="store_true",
                      help="wait for people in the coding app even if the study asks for the simulated panel")
    parser.add_argument("--base-url", help="a running llama-server for `local` judges and demo generators "
                                           "(default: the study's local_models.server_name, started if needed)")
    parser.add_argument("--store-moved", action="store_true",
                        help="the coding app's store location changed on purpose: go on with the new store even if it "
                             "holds fewer labels than labels/human.jsonl (else: move them with accord store copy)")
    parser.add_argument("--quiet", action="store_true", help="no stage progress; only each judge's verdict line")
    parser.add_argument("--json", action="store_true", help="print what each stage did as JSON")


def run(args: argparse.Namespace) -> int:
    from samples import InputError

    if args.jobs < 1:
        raise InputError(f"--jobs: expected a number of worker processes >= 1, got {args.jobs}")
    if args.output is not None and len(args.study) > 1:
        raise InputError(f"--output names one study folder; {len(args.study)} study files were given "
                         "(each writes to its study file's `output`)")
    # Every study file is read and checked before any folder is made: a bad one is one line and nothing runs.
    studies = [_prepare(path, args) for path in args.study]
    folders: dict[Any, Any] = {}
    for study, _ in studies:
        if study.output in folders:
            raise InputError(f"{study.path} and {folders[study.output]} both write to {study.output}; expected one "
                             "study folder per study file")
        folders[study.output] = study.path
    from samples import writable_folder

    for study, _ in studies:
        writable_folder(study.output, "output")  # before the first line: a bad output is one line, nothing else
    if len(studies) == 1:
        code, document = _run_study(studies[0], args)
        _print_json(args, document)
        return code
    if args.jobs == 1:
        results = [_one_of_several(prepared, args) for prepared in studies]
    else:
        results = _side_by_side(studies, args)
    _print_json(args, [document for _, document in results if document is not None])
    codes = {code for code, _ in results}
    return 2 if 2 in codes else 1 if 1 in codes else 0


def _prepare(path: str, args: argparse.Namespace) -> tuple[Any, bool]:
    """The loaded study file and whether its simulated panel labels."""
    from apps.study import load_study_file
    from samples import InputError

    study = load_study_file(path, output=args.output)
    simulate = args.simulate_annotators or (study.annotation.simulate and not args.interactive)
    if simulate and not study.annotation.simulated_panel:
        raise InputError(f"{study.path}: --simulate-annotators needs annotation.simulated_panel "
                         "{name = flip_prob} for the blinding annotators")
    return study, simulate


def _print_json(args: argparse.Namespace, document: Any) -> None:
    """``--json``: what each stage did (a list of these for several studies)."""
    import json

    if args.json:
        print(json.dumps(document, indent=2, sort_keys=True))


def _run_study(prepared: tuple[Any, bool], args: argparse.Namespace, *,
               start_server: bool = True) -> tuple[int, dict[str, Any]]:
    """One study, every stage; its lines printed; its exit status (0, or 1: a judge rejected) and --json document."""
    import sys

    from rich.console import Console

    from apps.stages import Context, run_study
    from samples import StudyLayout

    study, simulate = prepared
    console = Console(stderr=True, force_terminal=None if sys.stderr.isatty() else False, quiet=args.quiet)
    console.print(f"accord run: study {study.study.name!r} -> {study.output}")
    result = run_study(Context(study=study, console=console, base_url=args.base_url, simulate=simulate,
                               store_moved=args.store_moved, start_server=start_server))
    document = {"study": str(study.path), "output": str(study.output), "stages": result.stages,
                "waiting": result.waiting, "verdict": result.verdict}
    layout = StudyLayout(study.output)
    if not args.json:
        for line in decision_lines(layout):
            print(f"{study.study.name}: {line}")
    if result.waiting is not None:
        return 0, document
    if not args.json:
        for line in verdict_lines(layout) + preference_lines(layout):
            print(f"{study.study.name}: {line}")
    console.print(f"gate verdict: [bold]{result.verdict}[/]; report: {layout.report_html}")
    return (1 if result.verdict == "REJECT" else 0), document


def _one_of_several(prepared: tuple[Any, bool], args: argparse.Namespace, *,
                    start_server: bool = True) -> tuple[int, dict[str, Any] | None]:
    """A study among several: an input error in it is its one line and exit 2; the others still run."""
    import sys

    from samples import InputError

    try:
        return _run_study(prepared, args, start_server=start_server)
    except InputError as error:
        print(f"accord run: error: {error}", file=sys.stderr)
        return 2, None


def _captured(task: tuple[tuple[Any, bool], argparse.Namespace]) -> tuple[int, dict[str, Any] | None, str, str]:
    """In a worker process: one study run with its printed lines kept, for the parent to print in order. A worker
    never starts llama-server (two would race for one instance name): a study needing one says so."""
    import contextlib
    import io

    prepared, args = task
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code, document = _one_of_several(prepared, args, start_server=False)
    return code, document, out.getvalue(), err.getvalue()


def _side_by_side(studies: list[tuple[Any, bool]], args: argparse.Namespace) -> list[tuple[int, dict[str, Any] | None]]:
    """``--jobs N``: the studies in N forked workers (each loads the libraries once and takes the next study when
    it is done); each study's lines printed as soon as it and every study before it are done."""
    import multiprocessing
    import sys

    results = []
    with multiprocessing.get_context("fork").Pool(min(args.jobs, len(studies)), initializer=_worker_signals) as pool:
        for code, document, out, err in pool.imap(_captured, [(prepared, args) for prepared in studies]):
            sys.stdout.write(out)
            sys.stdout.flush()
            sys.stderr.write(err)
            results.append((code, document))
        pool.close()
        pool.join()
    return results  # an interrupt leaves the block early: the pool's exit ends the workers (SIGTERM)


def _worker_signals() -> None:
    """Workers leave Ctrl-C to the parent (which ends them) and die quietly when it does (the forked CLI handler
    would turn SIGTERM into a traceback)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_DFL)


def decision_lines(layout) -> list[str]:
    """The study's decision figures (``[decisions]``: Aggarwal's tables and baselines), every run."""
    from agreement import DecisionDocument, read_document, summary_lines

    document = read_document(DecisionDocument, layout)
    return [] if document is None else summary_lines(document)


def preference_lines(layout) -> list[str]:
    """The self-preference answer of a pairwise study (``[preference]``), as `accord audit` prints it."""
    from agreement import PreferenceDocument, read_document, summary_line

    document = read_document(PreferenceDocument, layout)
    return [] if document is None else [summary_line(document.cells, document.level)]


def verdict_lines(layout) -> list[str]:
    """One line per gated judge: its verdict and the criterion that decided it (the report's cards)."""
    from agreement import ValidationDocument, VerdictDocument, read_document, verdict_cards

    verdict = read_document(VerdictDocument, layout)
    if verdict is None:
        return []
    cards = verdict_cards(verdict, read_document(ValidationDocument, layout))
    return [f"{c.verdict} {c.judge}: {c.line}" for c in cards]
