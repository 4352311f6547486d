"""A simulated three-annotator panel: seeded labels submitted through the coding app's store.

``make demo`` cannot wait for people, so three *simulated* annotators label the
blinded tasks. They are not people and their labels are never called human: every
label is stored with ``backend="simulated"`` and a note saying so, and
``SIMULATED_NOTICE`` is the sentence every output built from them must carry.

Noise model (documented, seeded, order-independent):

1. A *latent* label comes from a transparent rule on exactly what an annotator sees
   (the blinded task text; ``latent_label``):

   * Identify (``identify_trajectory``, ``identify_turn``): "yes" when a turn's own
     words (its reasoning and text, not the tool result it quotes) match
     ``RECOGNITION_CUES`` (names a contradiction, disagreement, a prior belief
     that was wrong, or a fact that could not be found; ISE Figure 7's criteria as
     keywords). The first such turn is the first recognition turn. ``identify_turn``
     looks at the focus turn only (its text; the context turns are not labelled).
   * Escalate (``escalate_final``): "yes" when the final answer matches
     ``ESCALATION_CUES`` (states that sources disagree or names an alternative;
     ISE Figure 8).
   * Correctness: "correct" when every reference answer occurs in the prediction as
     a whole phrase after EHQ's text normalisation (ISE Figure 6: all references
     must be covered).
   * Response (EHQ four classes): ABSTAIN when ``ABSTAIN_CUES`` match and nothing
     else is said, HEDGE when ``HEDGE_CUES`` match, otherwise CONFIDENT_WRONG. The
     blinded response shows no gold answer, so a simulated coder cannot confirm a
     correct one; in the demo this is right by construction for FEQ and CCQ
     (no substantive answer can be correct) and for PCQ and HNQ whenever the tiny
     models are wrong.

2. Each annotator keeps the latent label with probability ``1 - flip_prob`` and
   otherwise replaces it by one of the scheme's other labels, chosen uniformly (an
   ``identify_trajectory`` "yes" made this way gets a uniformly drawn first turn;
   ``identify_turn`` has no first turn). Draws are
   hashes of (seed, annotator, task id), so a label does not depend on task order,
   on the other annotators or on the process.

Submissions use deterministic submission ids, so running the panel again adds
nothing (the store's submit is idempotent by submission id).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apps.demo.items import DEFAULT_SEED
from samples import (
    DEFAULT_SCHEME,
    SIMULATED,
    BlindTask,
    InputError,
    Registry,
    first_turn_offered,
    get_scheme,
    sha256_hex,
)

if TYPE_CHECKING:
    from annotate import Store

SIMULATED_NOTICE = (
    "SIMULATED LABELS: these labels were produced by a simulated annotator panel "
    "(a seeded rule-plus-noise model), not by people."
)
SIMULATED_NOTE = "simulated annotator (not a human label)"

RECOGNITION_CUES = re.compile(
    r"\b(contradict\w*|conflict\w*|disagree\w*|inconsisten\w*|discrepan\w*|"
    r"(?:sources?|passages?) (?:say|says|give|gives|report|reports|state|states) (?:different|two)|"
    r"different (?:answers?|values?|dates?|years?|numbers?|names?)|"
    r"(?:i|we) (?:was|were) wrong|(?:cannot|can't|could not|couldn't) find|no (?:results?|information) (?:for|on|about))",
    re.IGNORECASE,
)
ESCALATION_CUES = re.compile(
    r"\b(contradict\w*|conflict\w*|disagree\w*|inconsisten\w*|discrepan\w*|"
    r"(?:sources?|passages?) (?:say|says|give|gives|report|reports|state|states) (?:different|two)|"
    r"different (?:answers?|values?|dates?|years?|numbers?|names?)|"
    r"(?:one|another|the other|the second|the first) (?:source|passage) (?:says|states|reports|gives))",
    re.IGNORECASE,
)
ABSTAIN_CUES = re.compile(
    r"\b(i (?:do not|don't) know|i (?:cannot|can't) (?:answer|determine|say)|not enough information|"
    r"no (?:information|answer)|unknown|(?:is|was) not (?:provided|stated|mentioned|available))\b",
    re.IGNORECASE,
)
HEDGE_CUES = re.compile(
    r"\b(perhaps|possibly|probably|likely|maybe|might|may|i think|i believe|not sure|uncertain|approximately)\b",
    re.IGNORECASE,
)
# samples.units.render_turn puts tool calls and their (possibly multi-line) results last in a turn.
_TOOL_PART = re.compile(r"^\[tool call\].*\Z", re.MULTILINE | re.DOTALL)
_CORRECTNESS = re.compile(r"^Reference answers:\n(?P<refs>.*?)\n\nPredicted answer:\n(?P<prediction>.*)\Z", re.DOTALL)
_NUMBERED = re.compile(r"^\d+\. (?P<ref>.*)$", re.MULTILINE)


@dataclass(frozen=True, kw_only=True)
class SimulatedAnnotator:
    """One simulated annotator: a store account name and a label-flip probability."""

    name: str
    flip_prob: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"SimulatedAnnotator: name must be a non-empty string, got {self.name!r}")
        if isinstance(self.flip_prob, bool) or not isinstance(self.flip_prob, int | float) or not 0 <= self.flip_prob < 1:
            raise InputError(f"SimulatedAnnotator {self.name!r}: flip_prob must be in [0, 1), got {self.flip_prob!r}")


# Three annotators of decreasing reliability, like a careful, an average and a hurried coder.
DEFAULT_PANEL: tuple[SimulatedAnnotator, ...] = (
    SimulatedAnnotator(name="sim-annotator-1", flip_prob=0.05),
    SimulatedAnnotator(name="sim-annotator-2", flip_prob=0.10),
    SimulatedAnnotator(name="sim-annotator-3", flip_prob=0.20),
)


@dataclass(frozen=True, kw_only=True)
class Latent:
    label: str
    first_turn: int | None = None


@dataclass(frozen=True, kw_only=True)
class PanelReport:
    """What the panel submitted; ``notice`` must accompany anything built from these labels."""

    seed: int
    submitted: Mapping[str, int]
    already_present: Mapping[str, int]
    flipped: Mapping[str, int]
    latent_counts: Mapping[str, int]
    flip_probs: Mapping[str, float]
    notice: str = field(default=SIMULATED_NOTICE)


def _own_words(turn: str) -> str:
    """A rendered turn without its tool calls and results: what the agent itself said."""
    return _TOOL_PART.sub("", turn)


def _latent_identify_trajectory(task: BlindTask) -> Latent:
    turns = list(task.turns or [task.text])
    hits = [i for i, turn in enumerate(turns) if RECOGNITION_CUES.search(_own_words(turn))]
    return Latent(label="yes", first_turn=hits[0]) if hits else Latent(label="no")


def _latent_identify_turn(task: BlindTask) -> Latent:
    # The task text is the focus turn itself; ``turns`` (when attached) is its context.
    if RECOGNITION_CUES.search(_own_words(task.text)):
        return Latent(label="yes")  # the kind has no first turn (samples.kinds)
    return Latent(label="no")


def _latent_escalate_final(task: BlindTask) -> Latent:
    return Latent(label="yes" if ESCALATION_CUES.search(task.text) else "no")


def _latent_correctness(task: BlindTask) -> Latent:
    from ehq.evaluation.correctness import contains_normalized_phrase

    parsed = _CORRECTNESS.match(task.text)
    if parsed is None:
        raise InputError(f"task {task.task_id}: correctness text is not 'Reference answers: ... Predicted answer: ...'")
    references = [m["ref"] for m in _NUMBERED.finditer(parsed["refs"])]
    covered = bool(references) and all(contains_normalized_phrase(parsed["prediction"], r) for r in references)
    return Latent(label="correct" if covered else "incorrect")


def _latent_response(task: BlindTask) -> Latent:
    if ABSTAIN_CUES.search(task.text) and len(task.text.split()) <= 12:
        return Latent(label="ABSTAIN")
    return Latent(label="HEDGE" if HEDGE_CUES.search(task.text) else "CONFIDENT_WRONG")


LATENT_RULES: Registry[Callable[[BlindTask], Latent]] = Registry("simulated-annotator rule")
"""Unit kind -> the careful simulated coder's rule for it (a third party's kind registers its own)."""
for _kind, _rule in (("identify_trajectory", _latent_identify_trajectory), ("identify_turn", _latent_identify_turn),
                     ("escalate_final", _latent_escalate_final), ("correctness", _latent_correctness),
                     ("response", _latent_response)):
    LATENT_RULES.register(_kind, _rule)


def latent_label(task: BlindTask) -> Latent:
    """The rule-based label a careful simulated coder gives ``task`` (see the module docstring)."""
    return LATENT_RULES.get_one(task.kind, where=f"task {task.task_id}")(task)


def _uniform(seed: int, annotator: str, task_id: str, purpose: str) -> float:
    return int(sha256_hex([seed, annotator, task_id, purpose])[:13], 16) / 16**13


def simulate_label(task: BlindTask, annotator: SimulatedAnnotator, *, seed: int = DEFAULT_SEED) -> tuple[Latent, bool]:
    """(label given, whether it was flipped from the latent label) for one annotator and task."""
    latent = latent_label(task)
    if _uniform(seed, annotator.name, task.task_id, "flip") >= annotator.flip_prob:
        return latent, False
    labels = get_scheme(DEFAULT_SCHEME[task.kind]).labels
    others = [label for label in labels if label != latent.label]
    label = others[int(_uniform(seed, annotator.name, task.task_id, "pick") * len(others))]
    first_turn = None
    if first_turn_offered(task.kind) and label == get_scheme(DEFAULT_SCHEME[task.kind]).positive:
        first_turn = int(_uniform(seed, annotator.name, task.task_id, "turn") * max(len(task.turns or []), 1))
    return Latent(label=label, first_turn=first_turn), True


def _token(store: Store, name: str) -> str:
    """A fresh token for a panel account: created on first use, rotated afterwards.

    An existing account that holds any non-simulated label belongs to a person: refused.
    """
    if not any(a.name == name for a in store.annotators()):
        return store.add_annotator(name)
    human = [label for label in store.labels(annotator=name) if label.backend != SIMULATED]
    if human:
        raise InputError(f"annotator {name!r} in {store.location} has {len(human)} label(s) from people; "
                         "the simulated panel will not label as them (choose other panel names)")
    return store.rotate_token(name)


def run_panel(store: Store, *, annotators: Sequence[SimulatedAnnotator] = DEFAULT_PANEL,
              seed: int = DEFAULT_SEED) -> PanelReport:
    """Every annotator labels every task in their stored order, through ``store.submit``.

    The tasks and per-annotator orders must already be loaded (``store.load_tasks``
    with the blinded sample's ``orders.json``), under these annotators' names.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed: expected an integer, got {seed!r}")
    names = [a.name for a in annotators]
    if not annotators or len(set(names)) != len(names):
        raise InputError(f"annotators: expected distinct simulated annotators, got {names}")
    orders = store.orders()
    missing = [name for name in names if not orders.get(name)]
    if missing:
        raise InputError(f"annotators {missing}: no task order in the store {store.location}; "
                         f"blind the sample with these annotator names and load its orders first")
    tasks = {task_id: store.task(task_id) for name in names for task_id in orders[name]}
    other = sorted({f"{t.kind} ({store.task_scheme(i)})" for i, t in tasks.items()
                    if store.task_scheme(i) != DEFAULT_SCHEME[t.kind]})
    if other:
        raise InputError(f"the simulated panel codes each kind under its default scheme only; the store codes {other}: "
                         "have people code them, or drop [annotation] schemes for a simulated run")
    latent_counts = Counter(f"{task.kind}:{latent_label(task).label}" for task in tasks.values())
    submitted: Counter[str] = Counter()
    present: Counter[str] = Counter()
    flipped: Counter[str] = Counter()
    for annotator in annotators:
        token = _token(store, annotator.name)
        for task_id in orders[annotator.name]:
            given, was_flipped = simulate_label(tasks[task_id], annotator, seed=seed)
            flipped[annotator.name] += int(was_flipped)
            result = store.submit(
                token, task_id, given.label, first_turn=given.first_turn, note=SIMULATED_NOTE, backend=SIMULATED,
                submission_id="sim-" + sha256_hex([seed, annotator.name, task_id])[:32],
            )
            (submitted if result.created else present)[annotator.name] += 1
    return PanelReport(seed=seed, submitted=dict(submitted), already_present=dict(present), flipped=dict(flipped),
                       latent_counts=dict(sorted(latent_counts.items())),
                       flip_probs={a.name: a.flip_prob for a in annotators})
