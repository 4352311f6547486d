"""The acceptance gate: may this judge score the full benchmark?

A policy file (TOML) states every threshold; nothing here has a default threshold.
Each ``[[criteria]]`` table names a criterion type registered in ``agreement.criteria.CRITERIA``
(the built-ins, ``agreement.builtin_criteria``, register exactly as a third-party criterion would) and its
parameters.
A criterion that cannot be measured fails, with the reason. The verdict is ACCEPT
only when every criterion passes.

Policy layout::

    [policy]
    name = "binary-judge-strict"
    description = "..."
    level = 0.95                 # confidence level of every interval
    tie_policy = "exclude"       # human-majority ties (agreement.majority)
    n_resamples = 2000
    seed = 20261129

    [[criteria]]
    type = "agreement_floor"
    coefficient = "gwet_ac1"
    min_lower_bound = 0.6
    ...

Every criterion is a test of what it claims and states it: ``test`` (the
statistical test), ``value``, the interval (``ci_low``, ``ci_high``, ``ci_level``,
``ci_method``) and ``threshold``. Nothing passes on a point estimate alone unless
the policy says so for that criterion (``point_estimate = true``).

Every policy carries the built-in criteria ``BUILT_IN``: the judge must beat every
constant answer, the majority-class rule and any baseline judges the policy names
(``beats_baselines``), and its Cohen's kappa must be shown above 0 (``tracks_input``).
A policy's own table of either tightens it (a higher bound, more baselines or
coefficients); nothing drops or loosens it. Interval methods
and the sizes below which they are not trusted come from the coverage study
(``agreement.intervals``).

The verdict file (STUDY/gate/verdict.json) holds the verdict, every criterion's
test, value, interval, threshold and result, the policy's content and sha256, and the
fingerprints of the input files, so a score can cite the verdict it rests on.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from agreement.criteria import (
    BUILT_IN,
    CRITERIA,
    UNMEASURABLE,
    BuiltIn,
    Criterion,
    CriterionResult,
    Evidence,
    _number,
    _param,
    _unknown,
)
from samples import MAX_RESAMPLES, MIN_RESAMPLES, InputError, Resampling, sha256_hex

ACCEPT, REJECT, CONTINUE = "ACCEPT", "REJECT", "CONTINUE"


def registration_sentence(status: dict[str, Any]) -> str:
    """One line of the text verdict: registered before the labels, and versions gated on the sample."""
    yes = {True: "yes", False: "no"}
    return (f"preregistration: policy registered before the human labels: "
            f"{yes[status['policy_registered_before_labels']]}; judge's calls: "
            f"{yes[status['judge_registered_before_labels']]}; versions of this judge gated on this human sample: "
            f"{status['versions_gated_on_sample']}")


def _built_in(kind: str) -> BuiltIn:
    """The registered class of a built-in criterion type (``register_criterion`` checked its table method)."""
    return cast(BuiltIn, CRITERIA[kind])


@dataclass(frozen=True, kw_only=True)
class Policy:
    path: str
    text: str
    sha256: str
    name: str
    description: str
    settings: dict[str, Any]
    criteria: tuple[Criterion, ...]
    quality: Any = None
    """The ``[quality]`` flag rule (``agreement.quality.FlagRule``), None when the policy has none."""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "name": self.name, "description": self.description,
                "settings": self.settings, "content": self.text}


POLICY_SETTINGS = ("level", "tie_policy", "n_resamples", "seed", "judge", "weighted", "monitoring")
MONITORING = ("fixed", "anytime")
"""fixed: one look when labelling is done (fixed-n intervals); anytime: valid at every look (agreement.anytime)."""


def load_policy(path: str | Path) -> Policy:
    """Parse and validate a policy file; every problem names the file and the criterion."""
    from samples import read_settings

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: policy file not found")
    raw = read_settings(path, "policy file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    head = data.get("policy")
    if not isinstance(head, dict):
        raise InputError(f"{path}: missing [policy] table (name, description, level, tie_policy, n_resamples, seed)")
    where = f"{path} [policy]"
    name = _param(head, "name", where, str, allowed="a policy name")
    description = _param(head, "description", where, str, allowed="what the policy is for")
    try:  # the resampling settings are validated where they are built (samples.resampling)
        resampling = Resampling(
            level=_param(head, "level", where, _number, allowed="a confidence level in (0, 1)"),
            n_resamples=_param(head, "n_resamples", where, int,
                               allowed=f"an integer from {MIN_RESAMPLES} to {MAX_RESAMPLES}"),
            seed=_param(head, "seed", where, int, allowed="an integer seed"))
    except InputError as error:
        raise InputError(f"{where}: {error}") from None
    settings = {
        "level": resampling.level,
        "tie_policy": _param(head, "tie_policy", where, str,
                             check=lambda v: v in ("exclude", "needs-adjudication", "positive", "negative"),
                             allowed="exclude, needs-adjudication, positive or negative"),
        "n_resamples": resampling.n_resamples,
        "seed": resampling.seed,
    }
    if "judge" in head:
        settings["judge"] = _param(head, "judge", where, str, allowed="a judge name")
    settings["weighted"] = _param(head, "weighted", where, bool, allowed="true or false") if "weighted" in head \
        else False
    if "monitoring" in head:
        settings["monitoring"] = _param(head, "monitoring", where, str, check=lambda v: v in MONITORING,
                                        allowed="'fixed' (one look, the default) or 'anytime' (valid at every look)")
    _unknown(head, set(POLICY_SETTINGS) | {"description"}, where)
    tables = data.get("criteria")
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{path}: no [[criteria]]; a policy must state at least one criterion")
    built: dict[int, Criterion] = {}  # by position in the policy
    deferred: list[tuple[int, str, dict[str, Any], str]] = []
    for index, table in enumerate(tables, start=1):
        where = f"{path} criterion #{index}"
        kind = table.get("type") if isinstance(table, dict) else None
        build = CRITERIA.get_one(kind, where=f"{where}: type")  # type: ignore[arg-type]
        if kind in BUILT_IN:
            deferred.append((index, kind, table, where))
        else:
            built[index] = build(table, where)
    floors = [c.agreement_bound for c in built.values() if c.agreement_bound is not None]
    for index, kind, table, where in deferred:  # built-ins read the floors, wherever they stand
        built_in = _built_in(kind)
        built[index] = built_in(built_in.built_in_table(table, floors, where), where)
    criteria = [built[index] for index in sorted(built)]
    for kind in BUILT_IN:
        if kind not in {k for _, k, _, _ in deferred}:
            where = f"{path} built-in {kind}"
            built_in = _built_in(kind)
            criteria.append(built_in(built_in.built_in_table({}, floors, where), where))
    extra = sorted(set(data) - {"policy", "criteria", "quality"})
    if extra:
        raise InputError(f"{path}: unknown top-level table(s) {extra}; expected [policy], [[criteria]] and "
                         f"optionally [quality]")
    quality = _quality_rule(data, criteria, path)
    return Policy(path=str(path), text=raw.decode("utf-8"), sha256=sha256_hex(raw.decode("utf-8")), name=name,
                  description=description, settings=settings, criteria=tuple(criteria), quality=quality)


def _quality_rule(data: dict[str, Any], criteria: Sequence[Criterion], path: Path) -> Any:
    """The policy's ``[quality]`` flag rule; a criterion excluding flagged annotators needs one."""
    from agreement.quality import FlagRule

    rule = FlagRule.from_table(data["quality"], f"{path} [quality]") if "quality" in data else None
    if rule is None and any(c.exclude_flagged for c in criteria):
        raise InputError(f"{path}: a criterion has exclude_flagged = true but the policy has no [quality] table "
                         f"(coefficient, min_upper_bound, unmeasurable) saying who is flagged")
    return rule


def _measure(criterion: Criterion, evidence: Any, policy: Policy) -> CriterionResult:
    """A criterion on the evidence; with ``exclude_flagged`` on the evidence without the flagged annotators,
    its result naming them and why."""
    if not criterion.exclude_flagged:
        return criterion.evaluate(evidence)
    from dataclasses import replace

    from agreement.quality import flagged_annotators

    s = policy.settings
    flagged = flagged_annotators(evidence.table, policy.quality, tie_policy=s["tie_policy"], level=s["level"],
                                 n_resamples=s["n_resamples"], seed=s["seed"])
    result = criterion.evaluate(evidence.without_annotators(flagged) if flagged else evidence)
    named = "; ".join(f"{name} ({why})" for name, why in flagged.items()) or "none flagged"
    return replace(result, threshold=f"{result.threshold}; annotators flagged by the policy's quality rule left "
                                     f"out: {named}", details={**result.details, "excluded_annotators": flagged})


@dataclass(frozen=True, kw_only=True)
class Verdict:
    verdict: str
    judge: str
    results: tuple[CriterionResult, ...]
    policy: Policy
    fingerprints: dict[str, str]
    simulated: bool
    notes: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.verdict == ACCEPT

    def to_dict(self) -> dict[str, Any]:
        body = {"verdict": self.verdict, "judge": self.judge, "criteria": [r.to_dict() for r in self.results],
                "policy": self.policy.to_dict(), "fingerprints": self.fingerprints, "simulated": self.simulated,
                "notes": list(self.notes)}
        body["verdict_sha256"] = sha256_hex(body)
        return body


def evaluate(policy: Policy, evidence: Evidence, *, fingerprints: dict[str, str], simulated: bool,
             notes: tuple[str, ...] = ()) -> Verdict:
    results = tuple(_measure(c, evidence, policy) for c in policy.criteria)
    verdict = ACCEPT if results and all(r.passed for r in results) else REJECT
    return Verdict(verdict=verdict, judge=evidence.judge, results=results, policy=policy,
                   fingerprints=fingerprints, simulated=simulated, notes=notes)


def format_value(result_type: str, value: float | None, *, digits: int = 3) -> str:
    """A criterion's value as shown: an integer where its registered type ``counts`` (units, versions)."""
    if value is None or not math.isfinite(value):
        return "--"
    kind = CRITERIA.get(result_type)
    return str(int(value)) if kind is not None and kind.counts else f"{value:.{digits}f}"


_BOUND_SUFFIXES = (", lower bound", ", upper bound")


def measurable(c: Any) -> bool:
    """Whether a criterion (result or record) has a number to show: a finite value and no ``UNMEASURABLE`` reason."""
    return (c.value is not None and math.isfinite(c.value)) and not (c.reason or "").startswith(UNMEASURABLE)


def criterion_line(c: Any) -> str:
    """One criterion as every view prints it (CLI, run summary, report cards, dashboard): the estimate by its
    name, its interval, the bound compared and the result, e.g. "gwet_ac1 vs human majority 0.313, 95% CI
    [0.140, 0.487]; needs lower CI bound >= 0.3: FAIL". An unmeasurable criterion shows its reason, no number.
    ``c``: a ``CriterionResult`` or the verdict document's record of one (the same fields)."""
    estimate = next((c.name[:-len(s)] for s in _BOUND_SUFFIXES if c.name.endswith(s)), c.name)
    result = "PASS" if c.passed else "FAIL"
    reason = c.reason or ""
    if not measurable(c):
        return f"{estimate}: {reason or 'cannot be measured'}; needs {c.threshold}: {result}"
    text = f"{estimate} {format_value(c.type, c.value)}"
    low, high = c.ci_low, c.ci_high
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        level = f"{c.ci_level:.0%} " if c.ci_level else ""
        text += f", {level}CI [{low:.3f}, {high:.3f}]"
    return f"{text}; needs {c.threshold}: {result}" + (f" ({reason})" if reason else "")


def format_verdict(verdict: Verdict) -> str:
    """Plain-text verdict: one line per criterion (``criterion_line``), then its test and interval method."""
    lines = [f"{verdict.verdict}: judge {verdict.judge!r} under policy {verdict.policy.name!r} "
             f"(sha256 {verdict.policy.sha256[:12]})"]
    for note in verdict.notes:
        lines.append(f"NOTE: {note}")
    for r in verdict.results:
        lines.append(f"  {criterion_line(r)}")
        method = f"; interval: {r.ci_method}" if r.ci_method and math.isfinite(r.ci_low) else ""
        lines.append(f"        test: {r.test}{method}")
    return "\n".join(lines)


def study_operating_point(policy: Policy, evidence: Any) -> dict[str, Any]:
    """The study's own design on the policy's OC curve (``agreement.plan.operating_point``)."""
    from agreement.plan import operating_point

    floor = next((c.agreement_bound for c in policy.criteria if c.agreement_bound is not None), None)
    coefficient = floor.coefficient if floor else "percent_agreement"
    if getattr(evidence, "section", None) is None:
        return {"undefined_reason": "no human labels on the judge's units"}
    report = evidence.section.report
    estimate = evidence.agreement(coefficient, floor.reference if floor else "human_majority")
    majority = report.majority
    if (estimate is None or majority is None or report.human_panel is None or not estimate.n
            or not math.isfinite(estimate.statistic)):
        return {"undefined_reason": f"needs a defined {coefficient} vs a human majority of at least two annotators"}
    codes = majority.codes[majority.codes >= 0]
    positive = evidence.section.positive
    if positive is None:
        return {"undefined_reason": "the planner models binary labels only"}
    rate = float(np.mean(codes == list(report.categories).index(positive)))
    if not 0 < rate < 1:  # the planner simulates both labels: one label everywhere leaves no curve to read
        return {"undefined_reason": f"the human majority gives every unit the same label ({positive!r} on "
                                    f"{rate:.0%} of {codes.size} units): the planner needs both labels"}
    clusters = evidence.table.loc[evidence.table["source"] == "human", ["unit", "cluster"]].drop_duplicates("unit")[
        "cluster"].nunique()
    unscored, total = evidence.unscored()
    return operating_point(policy, units=int(estimate.n), annotators=len(report.humans), positive_rate=rate,
                           human_agreement=float(report.human_panel.mean_pairwise_agreement),
                           turns_per_trajectory=estimate.n / max(1, clusters), observed=float(estimate.statistic),
                           coefficient=coefficient, unscored_rate=unscored / total if total else 0.0)


def first_turn_document(study: Any, judge: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Human first recognition turns against the judge's t* (``agreement.panels.study_first_turns``)."""
    from agreement.panels import study_first_turns

    result = study_first_turns(study, judge, n_resamples=settings["n_resamples"], seed=settings["seed"],
                               level=settings["level"])
    if isinstance(result, str):
        return {"undefined_reason": result}
    return {"n": result.n, "n_human_only": result.n_human_only, "n_judge_only": result.n_judge_only,
            **{name: getattr(result, name).to_dict()
               for name in ("exact", "within_one", "mean_absolute_difference", "mean_difference")}}


def judge_sample_fingerprint(table: Any, judge: str) -> str:
    """sha256 of a judge's labels on the sampled units: a score checks they did not change since the gate."""
    rows = table.loc[(table["source"] == "judge") & (table["rater"] == judge), ["unit", "label"]].sort_values("unit")
    return sha256_hex([[u, lab if isinstance(lab, str) else None]
                       for u, lab in zip(rows["unit"].tolist(), rows["label"].tolist())])


CALL_SHOWN = ("unit_kind", "provider", "model", "prompt_sha256", "rule", "output", "parse_mode", "params",
              "fingerprint")
"""Parts of a validated call the text verdict prints (the verdict file keeps all of them)."""


def check_policy_labels(policy: Policy, evidence: Any) -> None:
    """Every label the policy names is a label of the scheme the judge's units are compared in: a
    criterion must never pass on a label nobody can give (a case typo turned REJECT into ACCEPT)."""
    kinds, labels = evidence.kinds, evidence.scheme_labels
    for index, criterion in enumerate(policy.criteria, start=1):
        unknown = [x for x in criterion.labels if x not in labels]
        if unknown:
            raise InputError(f"{policy.path} criterion #{index} ({criterion.name}): label(s) {unknown} are not in "
                             f"the labels of unit kind(s) {kinds} that judge {evidence.judge!r} is gated on: "
                             f"{list(labels)}")


def gate_study(study: Any, policy_path: str | Path, *, judges: list[str] | None = None,
               sequential: bool = False) -> tuple[dict[str, Any], str]:
    """Evaluate the policy for each judge of a study; return the verdict document and its text.

    Under ``monitoring = "anytime"`` (or ``sequential``) each judge's verdict is the
    anytime gate's (``agreement.anytime``): ACCEPT, REJECT or CONTINUE, with the look
    at which it was decided; the fixed-n results stand beside it.
    """
    from agreement.identity import judge_identity, unit_kinds
    from agreement.preregistration import human_sample_sha256, record_gating, registration_status
    from agreement.study_io import SIMULATED_NOTE, labels_table
    from agreement.validation import GateEvidence
    from samples import StudyLayout

    policy = load_policy(policy_path)
    table = labels_table(study)
    present = sorted(set(table.loc[table["source"] == "judge", "rater"].unique()))
    names = judges or ([policy.settings["judge"]] if "judge" in policy.settings else present)
    if not names:
        raise InputError(f"{study.root}: no judge labels on the sampled units; nothing to gate")
    s = policy.settings
    notes = (SIMULATED_NOTE,) if study.simulated else ()
    verdicts, texts = {}, []
    layout = StudyLayout.of(study.root)
    gated = []
    unit_kind = unit_kinds(study)
    for judge in names:
        kinds = set(table.loc[(table["source"] == "judge") & (table["rater"] == judge), "kind"].unique())
        mine = table.loc[table["kind"].isin(kinds) & ((table["source"] == "human") | (table["rater"] == judge)),
                         ["unit", "source"]]  # the two columns read: a 1e5-unit table is taken per judge
        identity = judge_identity(study, judge, kinds=unit_kind, units=set(mine["unit"].unique()))
        human_sample = human_sample_sha256(mine)
        registration = registration_status(study, policy, judge, identity, human_sample)
        evidence = GateEvidence(table, judge=judge, tie_policy=s["tie_policy"], level=s["level"],
                                n_resamples=s["n_resamples"], seed=s["seed"], weighted=s["weighted"],
                                registration=registration)
        check_policy_labels(policy, evidence)
        verdict = evaluate(policy, evidence, fingerprints=study.fingerprints, simulated=study.simulated, notes=notes)
        body = verdict.to_dict()
        body["judge_sample_sha256"] = judge_sample_fingerprint(table, judge)
        body["judge_identity"] = identity
        body["preregistration"] = registration
        gated.append((human_sample, judge, identity["sha256"]))
        body["operating_characteristic"] = study_operating_point(policy, evidence)
        body["first_turn_agreement"] = first_turn_document(study, judge, s)
        oc = body["operating_characteristic"]
        calls = "; ".join(", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k in CALL_SHOWN)
                          for c in body["judge_identity"]["calls"])
        text = (format_verdict(verdict) + f"\n  operating characteristic: "
                f"{oc.get('sentence') or oc.get('undefined_reason')}\n  validated call(s): {calls}"
                f"\n  {registration_sentence(registration)}")
        if sequential or s.get("monitoring") == "anytime":
            body, text = _with_sequential(study, policy, table, judge, verdict, body, text)
        verdicts[judge] = body
        texts.append(text)
    for human_sample, judge, identity_sha in gated:  # only once every judge was gated: no half-written history
        record_gating(layout, human_sample, judge, identity_sha)
    outcomes = {v["verdict"] for v in verdicts.values()}
    overall = ACCEPT if outcomes == {ACCEPT} else REJECT if REJECT in outcomes else CONTINUE
    document = {"verdict": overall, "judges": verdicts, "policy": policy.to_dict(), "fingerprints": study.fingerprints,
                "simulated": study.simulated, "notes": list(notes), "cluster": study.cluster}
    return document, "\n\n".join(texts)


def _with_sequential(study: Any, policy: Policy, table: Any, judge: str, verdict: Verdict, body: dict[str, Any],
                     text: str) -> tuple[dict[str, Any], str]:
    """The judge's verdict replaced by the anytime gate's outcome; the fixed-n verdict kept beside it."""
    from agreement.anytime import adaptive_order, label_arrival, labelling_complete, sequential_verdict

    complete, why = labelling_complete(study)
    adaptive = adaptive_order(study.root)
    if adaptive:
        outcome = body["verdict"] if complete else CONTINUE
        body = {**body, "fixed_n_verdict": body["verdict"], "verdict": outcome,
                "sequential": {"outcome": outcome, "labelling": why, "not_applied": adaptive}}
        return body, text + f"\n  anytime: {outcome} ({adaptive})\n    labelling: {why}"
    result = sequential_verdict(policy, table, judge, complete=complete,
                                end_results={r.name: r.passed for r in verdict.results},
                                arrival=label_arrival(study.human))
    body = {**body, "fixed_n_verdict": body["verdict"], "verdict": result.outcome,
            "sequential": {**result.to_dict(), "labelling": why}}
    return body, text + "\n" + format_sequential(result, why)


def format_sequential(result: Any, labelling: str) -> str:
    """The anytime gate's lines: the outcome, where it was decided, and each criterion's sequential method."""
    if result.decided_at is not None:
        head = (f"  anytime ({result.level:.0%}, valid at every look): {result.outcome} at look {result.decided_at} "
                f"({result.units_at_decision} of {result.units} units)")
    else:
        more = f"; about {result.further} more units expected" if result.further is not None else ""
        head = f"  anytime ({result.level:.0%}, valid at every look): CONTINUE after {result.units} units{more}"
    lines = [head, f"    labelling: {labelling}"]
    for c in result.criteria:
        if c.decisions is None:
            lines.append(f"    {c.name}: {c.method}")
            continue
        decision = c.decisions[-1] if c.decisions.size else "UNDECIDED"
        at = c.decided_at()
        where = f" at look {at + 1}" if at is not None else ""
        interval = (f", sequence [{c.ci_low:.4f}, {c.ci_high:.4f}]"
                    if math.isfinite(c.ci_low) and math.isfinite(c.ci_high) else "")
        lines.append(f"    {decision}{where}  {c.name}: {format_value(c.type, c.statistic)}{interval}; "
                     f"needs {c.threshold} ({c.method})")
    return "\n".join(lines)
