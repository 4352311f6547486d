"""The anytime verdict while people label: what the dashboard and `accord run` show, and whether labelling may stop.

Under ``[policy] monitoring = "anytime"`` a look may be taken after every label
(``agreement.anytime``), so the study owner can watch the verdict move and the
labelling can end the moment it is decided. ``anytime_state`` takes one look at the
labels as they are now (every backend, in the order people gave them) without writing
anything; ``study_decided`` reads the saved verdict (``accord gate``) and says whether
every gated judge's anytime verdict is ACCEPT or REJECT: then no more labels are needed,
and the coding app and Label Studio stop serving tasks. A fixed-n verdict never closes
labelling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agreement.anytime import ACCEPT, CONTINUE, REJECT, SequentialVerdict

COMPLETE_MESSAGE = "This study is complete: no more labels are needed."
"""What annotators are told once the anytime verdict is decided (never the verdict itself: they stay blind to it)."""


@dataclass(frozen=True, kw_only=True)
class AnytimeState:
    """One look at the anytime verdict of every judge; ``outcome`` combines them as the gate does."""

    outcome: str
    verdicts: tuple[SequentialVerdict, ...]
    labelling: str
    """Whether every planned label is in, and how that was decided (``agreement.anytime.labelling_complete``)."""
    not_applied: str | None = None
    """Why no sequential verdict is taken at all (``agreement.anytime.adaptive_order``)."""

    @property
    def decided(self) -> bool:
        """Every judge's verdict is ACCEPT or REJECT: no judge needs more labels."""
        return bool(self.verdicts) and all(v.outcome != CONTINUE for v in self.verdicts)


def anytime_state(root: str | Path, policy_path: str | Path, *, judges: list[str] | None = None,
                  cluster: str = "trajectory") -> AnytimeState | None:
    """The anytime verdict on the labels as they are now; None when the policy does not monitor anytime.

    Criteria with no sequential form are not evaluated here (they wait for the fixed-n gate at the end), so a
    look never REJECTs a study only because labelling has not ended.
    """
    from agreement.anytime import adaptive_order, label_arrival, labelling_complete, sequential_verdict
    from agreement.gate import load_policy
    from agreement.study_io import labels_table, load_study

    policy = load_policy(policy_path)
    if policy.settings.get("monitoring") != "anytime":
        return None
    study = load_study(root, cluster=cluster)
    _, why = labelling_complete(study)
    adaptive = adaptive_order(root)
    if adaptive:
        return AnytimeState(outcome=CONTINUE, verdicts=(), labelling=why, not_applied=adaptive)
    if not len(study.human) or not (study.human["role"] == "independent").any():
        return AnytimeState(outcome=CONTINUE, verdicts=(), labelling=why)  # no people's scheme to compare in yet
    table = labels_table(study)
    present = sorted(set(table.loc[table["source"] == "judge", "rater"]))
    names = judges or ([policy.settings["judge"]] if "judge" in policy.settings else present)
    if not (table["source"] == "human").any() or not names:
        return AnytimeState(outcome=CONTINUE, verdicts=(), labelling=why)
    arrival = label_arrival(study.human)
    verdicts = tuple(sequential_verdict(policy, table, judge, complete=False, arrival=arrival) for judge in names)
    outcomes = {v.outcome for v in verdicts}
    outcome = ACCEPT if outcomes == {ACCEPT} else REJECT if REJECT in outcomes else CONTINUE
    return AnytimeState(outcome=outcome, verdicts=verdicts, labelling=why)


def state_lines(state: AnytimeState) -> list[str]:
    """The look in words: the outcome, then per judge where it was decided or the labels still expected, then per
    criterion its decision, sequential method and interval."""
    if state.not_applied:
        return [f"anytime verdict: CONTINUE ({state.not_applied}); labelling: {state.labelling}"]
    if not state.verdicts:
        return [f"anytime verdict: CONTINUE (no human labels on judged units yet); labelling: {state.labelling}"]
    lines = [f"anytime verdict: {state.outcome}; labelling: {state.labelling}"]
    for v in state.verdicts:
        if v.decided_at is not None:
            lines.append(f"  {v.judge}: {v.outcome} at look {v.decided_at} (n = {v.units_at_decision} of "
                         f"{v.units} units labelled)")
        else:
            more = (f"about {v.further} more units expected" if v.further is not None
                    else "no estimate of the further units")
            lines.append(f"  {v.judge}: CONTINUE after {v.units} units; {more}")
        for row in criterion_rows(v):
            lines.append(f"    {row['decision']}{row['at']}  {row['criterion']}: {row['interval']} ({row['method']})")
    return lines


def criterion_rows(verdict: SequentialVerdict) -> list[dict[str, str]]:
    """Per criterion: decision, the look it was decided at, its sequential interval and method (for tables)."""
    rows = []
    for c in verdict.criteria:
        if c.decisions is None:
            rows.append({"judge": verdict.judge, "criterion": c.name, "decision": "AT THE END", "at": "",
                         "interval": "--", "method": c.method})
            continue
        at = c.decided_at()
        interval = (f"[{c.ci_low:.4f}, {c.ci_high:.4f}]" if math.isfinite(c.ci_low) and math.isfinite(c.ci_high)
                    else "--")
        rows.append({"judge": verdict.judge, "criterion": c.name,
                     "decision": str(c.decisions[-1]) if c.decisions.size else "UNDECIDED",
                     "at": f" at look {at + 1}" if at is not None else "", "interval": interval, "method": c.method})
    return rows


def study_decided(root: str | Path) -> Any:
    """The saved verdict when every judge in it has a decided anytime verdict (labelling may stop), else None."""
    from agreement.documents import VerdictDocument, read_document
    from samples import StudyLayout

    layout = StudyLayout.of(root)
    if not layout.verdict.is_file():
        return None
    document = read_document(VerdictDocument, layout)
    judges = list(document.judges.values())
    sequential = [j.sequential for j in judges]
    if not judges or any(s is None or s.get("outcome") not in (ACCEPT, REJECT) for s in sequential):
        return None
    return document
