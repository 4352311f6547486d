"""Label Studio backend: push of 1,000 tasks (target < 15 s) and pull of 3 annotators x 1,000 labels (< 10 s).

A real Label Studio 1.23.2 server (its own venv, fresh data dir) is started for the
run. Push is timed end to end as `accord ls push` does it: the annotator's
invite-link account, their project with the kind's labeling config and the
import of the blinded tasks. The peer is the bare label-studio-sdk doing only the
unavoidable part (create a project, import the same payload). Pull is timed over
three annotators' projects of 1,000 labelled tasks each, written to the labels
table; the peer is the SDK's documented export helper (`projects.exports.as_json`,
an export snapshot per project with its default options) fetching the same
annotations without converting them. Both sides are mostly Label Studio
serialising its export, so on a busy machine both scale with its load.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

from annotate.labelstudio import (
    LabelStudioBackend,
    display_payload,
    labeling_config,
    load_labelstudio_credentials,
    load_labelstudio_state,
)
from benchmarks.measure import ratio_text, seconds_text
from samples.kinds import DEFAULT_SCHEME
from samples.records import BlindTask
from samples.seed import DEFAULT_SEED

PUSH_TARGET_S = 15.0
PULL_TARGET_S = 10.0
ANNOTATORS = ("bench-a", "bench-b", "bench-c")
KIND = "identify_trajectory"
SEED = DEFAULT_SEED
REPEATS = 3


def _tasks(n: int) -> list[BlindTask]:
    """Identify tasks of realistic size: six numbered turns of about 400 characters each."""
    rng = random.Random(SEED)
    words = "search result says the source reports figure year however according missing cannot find verify".split()
    return [
        BlindTask(
            task_id=f"b_{i:05d}", kind=KIND, text="(turns)",
            turns=[f"[turn {j}] " + " ".join(rng.choice(words) for _ in range(60)) for j in range(6)],
        )
        for i in range(n)
    ]


def _ratio(peer_s: float, ours_s: float) -> str:
    return ratio_text(peer_s, ours_s) if ours_s <= peer_s else f"{ours_s / peer_s:.1f}x slower"


def _timed(function):
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def _label_everything(server, study: Path) -> None:
    """Each annotator labels every task of their project (bulk, through their own account).

    Open-source Label Studio creates annotations one request at a time (about 0.3 s
    each on this machine), so the setup imports the labels as predictions and has
    each annotator convert them to their own annotations in one Data Manager
    action, then removes the predictions so the export is what a real study's is.
    """
    from label_studio_sdk import LabelStudio

    state = load_labelstudio_state(study)
    logins = load_labelstudio_credentials(study)
    for position, name in enumerate(ANNOTATORS):
        project = state.annotators[name].projects[KIND]
        result = [{"from_name": "label", "to_name": "display", "type": "choices", "value": {"choices": [("yes", "no")[position % 2]]}}]
        if position % 2 == 0:
            result.append({"from_name": "first_turn", "to_name": "display", "type": "number", "value": {"number": 2}})
        owner = LabelStudio(base_url=server.url, api_key=logins.owners[name].api_token)
        owner.projects.import_predictions(
            project.project_id, request=[{"task": task_id, "result": result, "model_version": "bench"} for task_id in project.tasks.values()]
        )
        annotator = LabelStudio(base_url=server.url, api_key=logins.annotators[name].api_token)
        annotator.actions.create(id="predictions_to_annotations", project=project.project_id, selected_items={"all": True, "excluded": []})
        owner.actions.create(id="delete_tasks_predictions", project=project.project_id, selected_items={"all": True, "excluded": []})


def run(quick: bool = False) -> list[dict]:
    from label_studio_sdk import LabelStudio

    from tests.support.labelstudio import REPO, running_server

    n = 200 if quick else 1000
    tasks = _tasks(n)
    order = [task.task_id for task in tasks]
    rows: list[dict] = []
    with running_server(pid_file=REPO / ".run" / "labelstudio-bench.pid") as server, tempfile.TemporaryDirectory() as folder:
        sdk = LabelStudio(base_url=server.url, api_key=server.token)

        def peer_push() -> None:
            project = sdk.projects.create(title="peer push", label_config=labeling_config(KIND, DEFAULT_SCHEME[KIND]))
            sdk.projects.import_tasks(project.id, request=[{"data": {"task_id": t.task_id, "display": display_payload(t)}} for t in tasks])

        single = Path(folder) / "single"
        single.mkdir()
        push_s, report = _timed(lambda: LabelStudioBackend(study=single, token=server.token, url=server.url, admin_password=server.admin_password).push(tasks, {"bench-solo": order}))
        peer_push_s, _ = _timed(peer_push)
        if report.created != n:
            raise RuntimeError(f"push imported {report.created} of {n} tasks")
        rows.append({
            "benchmark": f"Label Studio push, {n:,} tasks to 1 annotator",
            "accord": seconds_text(push_s),
            "peer": f"{seconds_text(peer_push_s)} (label-studio-sdk: create project + import only)",
            "ratio": _ratio(peer_push_s, push_s),
            "target": f"< {PUSH_TARGET_S:.0f} s",
            "met": push_s < PUSH_TARGET_S,
            "notes": "accord includes making the annotator's account, organisation and owner in /admin/ (two sign-ins, "
                     "password hashing), sealing them, the codebook instructions and the state file",
        })

        study = Path(folder) / "three"
        study.mkdir()
        backend = LabelStudioBackend(study=study, token=server.token, url=server.url, admin_password=server.admin_password)
        push3_s, _ = _timed(lambda: backend.push(tasks, {name: order for name in ANNOTATORS}))
        _label_everything(server, study)
        first_pull_s, pulled = _timed(backend.pull_report)
        if len(pulled.labels) != n * len(ANNOTATORS) or pulled.ignored:
            raise RuntimeError(f"pull returned {len(pulled.labels)} labels, expected {n * len(ANNOTATORS)}; ignored: {pulled.ignored[:3]}")

        def peer_pull() -> int:
            state, logins = load_labelstudio_state(study), load_labelstudio_credentials(study)
            return sum(
                len(LabelStudio(base_url=server.url, api_key=logins.owners[name].api_token).projects.exports.as_json(
                    state.annotators[name].projects[KIND].project_id))
                for name in ANNOTATORS
            )

        # Pull is run again and again during a study. Right after the bulk labelling the
        # server's exports are markedly slower for a while (the peer's too), so report the
        # median of alternating repeats for both sides and the first pull in the notes.
        pull_times, peer_times = [], []
        for _ in range(1 if quick else REPEATS):
            peer_s, exported = _timed(peer_pull)
            if exported != n * len(ANNOTATORS):
                raise RuntimeError(f"the peer exported {exported} tasks, expected {n * len(ANNOTATORS)}")
            peer_times.append(peer_s)
            pull_times.append(_timed(backend.pull_report)[0])
        pull_s, peer_pull_s = statistics.median(pull_times), statistics.median(peer_times)
        rows.append({
            "benchmark": f"Label Studio pull, {len(ANNOTATORS)} annotators x {n:,} labels",
            "accord": seconds_text(pull_s),
            "peer": f"{seconds_text(peer_pull_s)} (label-studio-sdk exports.as_json snapshots, no conversion)",
            "ratio": _ratio(peer_pull_s, pull_s),
            "target": f"< {PULL_TARGET_S:.0f} s",
            "met": pull_s < PULL_TARGET_S,
            "notes": f"median of {len(pull_times)} pulls; the first pull after labelling took {seconds_text(first_pull_s)}; "
                     f"push of the same {len(ANNOTATORS)} x {n:,} tasks took {seconds_text(push3_s)}; "
                     "most of the pull is Label Studio serialising its export",
        })
    return rows
