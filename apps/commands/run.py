"""Run a study file end to end: every automated stage in order, skipping what is already done.

  accord run STUDY.toml [--output DIR] [--simulate-annotators | --interactive] [--base-url URL] [--json]

Stages (ingest, judge, sample, blind, annotate, validate, audit, gate, score,
report; plus the demo generators) are skipped when their input fingerprints match
the ones recorded in STUDY/state.json and their outputs are unchanged, so a second
run performs no judge call and no resampling. The run stops at the human stage,
with instructions, while annotators still have tasks to label (exit 0); run it
again when they are done. Exit 1 when the gate rejects a judge, 2 on a bad study file.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="the study file (study.toml)")
    parser.add_argument("--output", help="study folder to write (default: the study file's `output`)")
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
    import json
    import sys

    from rich.console import Console

    from apps.stages import Context, run_study
    from apps.study import load_study_file
    from samples.errors import InputError

    study = load_study_file(args.study, output=args.output)
    simulate = args.simulate_annotators or (study.annotation.simulate and not args.interactive)
    if simulate and not study.annotation.simulated_panel:
        raise InputError(f"{study.path}: --simulate-annotators needs annotation.simulated_panel "
                         "{name = flip_prob} for the blinding annotators")
    from samples.jsonl import writable_folder

    writable_folder(study.output, "output")  # before the first line: a bad output is one line, nothing else
    console = Console(stderr=True, force_terminal=None if sys.stderr.isatty() else False, quiet=args.quiet)
    console.print(f"accord run: study {study.study.name!r} -> {study.output}")
    result = run_study(Context(study=study, console=console, base_url=args.base_url, simulate=simulate,
                                 store_moved=args.store_moved))
    if args.json:
        print(json.dumps({"study": str(study.path), "output": str(study.output), "stages": result.stages,
                          "waiting": result.waiting, "verdict": result.verdict}, indent=2, sort_keys=True))
    from samples.layout import StudyLayout

    layout = StudyLayout(study.output)
    if not args.json:
        for line in decision_lines(layout):
            print(f"{study.study.name}: {line}")
    if result.waiting is not None:
        return 0
    if not args.json:
        for line in verdict_lines(layout) + preference_lines(layout):
            print(f"{study.study.name}: {line}")
    console.print(f"gate verdict: [bold]{result.verdict}[/]; report: {layout.report_html}")
    return 1 if result.verdict == "REJECT" else 0


def decision_lines(layout) -> list[str]:
    """The study's decision figures (``[decisions]``: Aggarwal's tables and baselines), every run."""
    from agreement.decisions import summary_lines
    from agreement.documents import DecisionDocument, read_document

    document = read_document(DecisionDocument, layout)
    return [] if document is None else summary_lines(document)


def preference_lines(layout) -> list[str]:
    """The self-preference answer of a pairwise study (``[preference]``), as `accord audit` prints it."""
    from agreement.documents import PreferenceDocument, read_document
    from agreement.preference import summary_line

    document = read_document(PreferenceDocument, layout)
    return [] if document is None else [summary_line(document.cells, document.level)]


def verdict_lines(layout) -> list[str]:
    """One line per gated judge: its verdict and the criterion that decided it (the report's cards)."""
    from agreement.documents import ValidationDocument, VerdictDocument, read_document
    from agreement.report import verdict_cards

    verdict = read_document(VerdictDocument, layout)
    if verdict is None:
        return []
    cards = verdict_cards(verdict, read_document(ValidationDocument, layout))
    return [f"{c.verdict} {c.judge}: {c.line}" for c in cards]
