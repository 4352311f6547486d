"""The study owner's live view during labelling: progress, running agreement, the adjudication queue, quality
and accuracy on gold units.

Read from what the backends keep, never from a stage document, so it moves while
people label: the one human labels table every command reads
(``agreement.study_io.read_human_labels``: the coding app's store as it is now, every
other backend's labels file), the store's orders or ``blind/orders.json``, mapped to
units through the sealed key (the owner's view: strata are shown here and
never to annotators). ``live_stamp`` lists the files whose modification times key the
dashboard's cache (the store's write-ahead log included), so a new label shows on the
next rerun without restarting the app. Gold accuracy is computed here (``annotate.gold``,
the sealed gold key and the gold labels) and handed to ``agreement.quality`` as figures,
since ``agreement`` never imports ``annotate``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from agreement import Estimate, Table, annotator_quality_table, fmt_ci
from samples import InputError, StudyLayout

LIVE_RESAMPLES = 1_000
"""Most cluster-bootstrap resamples of the running agreement and quality while people label (a preview, not the
verdict; a fresh validation.json or quality.json is shown instead when there is one)."""


@dataclass(frozen=True, kw_only=True)
class LiveView:
    tables: list[Table] = field(default_factory=list)
    queue: int = 0
    """Units whose independent labels disagree and that no adjudication settled yet."""
    adjudicated: int = 0
    notes: list[str] = field(default_factory=list)


def live_stamp(folder: str | Path) -> tuple[tuple[str, float], ...]:
    """Modification times of every file the live view reads, and the store's data version."""
    from annotate import Store

    layout = StudyLayout.of(folder)
    paths = [layout.key, layout.orders, layout.resolved_study, layout.gold, layout.gold_labels, layout.verdict,
             layout.validation, *layout.human_label_files()]
    policy = _policy_path(layout)
    if policy is not None:
        paths.append(policy)
    stamp = tuple((str(p), p.stat().st_mtime) for p in paths if p.is_file())
    if not Store.exists_for_study(layout):
        return stamp
    store = Store.for_study(layout)
    try:
        return (*stamp, ("store", float(hash(store.data_version()))))
    finally:
        store.close()


def _policy_path(layout: StudyLayout) -> Path | None:
    """The gate policy of the study: as `accord run` resolved it, else the one its verdict names (None: neither)."""
    policy = None
    if layout.resolved_study.is_file():
        try:
            policy = json.loads(layout.resolved_study.read_text(encoding="utf-8")).get("gate", {}).get("policy")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            policy = None
    if not policy and layout.verdict.is_file():  # `accord gate STUDY --policy FILE` by hand
        from agreement import VerdictDocument, read_document

        policy = read_document(VerdictDocument, layout).policy.path
    return Path(policy) if policy and Path(policy).is_file() else None


def anytime_look(folder: str | Path) -> Any:
    """The anytime verdict on the labels as they are now (``agreement.monitor.AnytimeState``), under the study's
    gate policy; None when the study has no policy yet or its policy does not monitor anytime."""
    from agreement import anytime_state

    layout = StudyLayout.of(folder)
    policy = _policy_path(layout)
    if policy is None or not layout.key.is_file():
        return None
    return anytime_state(layout.root, policy)


def _store_orders(layout: StudyLayout) -> dict[str, list[str]]:
    """The coding-app store's orders (gold units placed in them), or {} when the study has no store."""
    from annotate import Store

    if not Store.exists_for_study(layout):
        return {}
    store = Store.for_study(layout)
    try:
        return store.orders()
    finally:
        store.close()


def live_labels(layout: StudyLayout, key: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Every human label now (``agreement.study_io.read_human_labels``: the store as it is, the other backends'
    files), with unit_id, and the orders (the store's, else ``blind/orders.json``)."""
    from agreement import read_human_labels

    human = read_human_labels(layout, key)
    orders = _store_orders(layout)
    if not orders and layout.orders.is_file():
        try:
            orders = {str(k): [str(t) for t in v] for k, v in json.loads(layout.orders.read_text("utf-8")).items()}
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError):
            raise InputError(f"{layout.orders}: expected a JSON object {{annotator: [task_id, ...]}}") from None
    return human, orders


def _progress(human: pd.DataFrame, orders: dict[str, list[str]], key: pd.DataFrame) -> tuple[Table, Table]:
    independent = human[human["role"] == "independent"]
    done = {(a, t) for a, t in zip(independent["annotator"].astype(str), independent["task_id"])}
    rows = []
    for annotator in sorted(set(orders) | {a for a, _ in done}):
        order = orders.get(annotator, [])
        labelled = sum((annotator, t) in done for t in order)
        share = f"{100 * labelled / len(order):.0f}%" if order else "--"
        rows.append([annotator, str(len(order)), str(labelled), share,
                     str(sum(1 for a, _ in done if a == annotator) - labelled)])
    per_annotator = Table(title="Progress per annotator", header=["annotator", "assigned", "labelled", "done",
                                                                   "labelled outside the order"], rows=rows)
    stratum_of = key.drop_duplicates("task_id").set_index("task_id")
    stratum_of = (stratum_of["stratum"] if "stratum" in stratum_of else pd.Series("all", index=stratum_of.index))
    assigned: dict[str, list[int]] = {}
    for annotator, order in orders.items():
        for task in order:
            cell = assigned.setdefault(str(stratum_of.get(task, "unknown")), [0, 0])
            cell[0] += 1
            cell[1] += (annotator, task) in done
    strata = [[s, str(a), str(d), f"{100 * d / a:.0f}%" if a else "--"] for s, (a, d) in sorted(assigned.items())]
    per_stratum = Table(title="Progress per stratum", header=["stratum", "assigned labels", "labelled", "done"],
                        rows=strata)
    return per_annotator, per_stratum


def _queue(human: pd.DataFrame) -> tuple[int, int]:
    """(units awaiting adjudication, adjudicated units) among units whose independent labels disagree."""
    independent = human[human["role"] == "independent"]
    distinct = independent.groupby("unit_id")["label"].nunique()
    disagreeing = set(distinct[distinct > 1].index)
    settled = set(human.loc[human["role"] == "adjudication", "unit_id"])
    return len(disagreeing - settled), len(disagreeing & settled)


def _study(layout: StudyLayout, key: pd.DataFrame, human: pd.DataFrame) -> Any:
    from agreement import Study

    judge = pd.DataFrame({c: [] for c in ("unit_id", "judge", "label", "parse_status", "sample_index",
                                          "unscored_reason", "source_file")})
    return Study(root=layout.root, key=key, human=human, judge=judge)


def _fresh(model: Any, layout: StudyLayout) -> Any:
    """The study's document of ``model`` when no input changed since it was written, else None."""
    from agreement import read_document, stale_reasons

    document = read_document(model, layout) if model.path(layout).is_file() else None
    return document if document is not None and not stale_reasons(document, layout) else None


def _validated_agreement(layout: StudyLayout) -> Table | None:
    """The running human-human agreement as validation.json states it, when no input changed since (the numbers
    every other view shows); None when there is no such document or it is stale."""
    from agreement import ValidationDocument

    document = _fresh(ValidationDocument, layout)
    if document is None:
        return None
    rows = []
    for section in document.sections:
        panel = section.human_panel
        extra = (panel.model_extra or {}) if panel is not None else {}
        for name, result in (panel.results if panel is not None else {}).items():
            rows.append([section.kind, name, fmt_ci(result), f"{extra.get('n_pairable')} of {extra.get('n_units')}"])
    return Table(title="Running human-human agreement", header=["unit kind", "coefficient", "estimate [CI]",
                                                                 "units with two labels"], rows=rows,
                 note=f"independent labels; {layout.relative(layout.validation)} (the intervals the gate uses)")


def _agreement(table: pd.DataFrame, level: float, n_resamples: int, seed: int) -> Table:
    from agreement import PanelSettings, human_panel, rating_data, scheme_of

    rows = []
    humans = table[table["source"] == "human"]
    for kind, part in humans.groupby("kind", sort=True):
        raters = sorted(set(part["rater"]))
        if len(raters) < 2:
            rows.append([str(kind), "--", f"-- (needs two annotators, got {len(raters)})", str(part["unit"].nunique())])
            continue
        categories, _ = scheme_of([str(kind)], part["label"])
        data = rating_data(part.assign(weight=1.0), weighted=False, categories=categories)
        panel = human_panel(data, raters, settings=PanelSettings(n_resamples=n_resamples, seed=seed))
        from agreement import result_brief as _result_brief

        for name, result in panel.results.items():
            brief = _result_brief(result, level)
            rows.append([str(kind), name, _brief_text(brief), f"{panel.n_pairable} of {panel.n_units}"])
    return Table(title="Running human-human agreement", header=["unit kind", "coefficient", "estimate [CI]",
                                                                 "units with two labels"], rows=rows,
                 note=f"independent labels so far, not validated yet (accord validate); {level:.0%} intervals "
                      f"({n_resamples} cluster-bootstrap resamples)")


def gold_estimates(layout: StudyLayout, *, level: float,
                   annotators: Sequence[str] = ()) -> dict[str, dict[str, Estimate]] | None:
    """Unit kind -> annotator -> accuracy on the gold units of that kind (``annotate.gold.gold_accuracy``) as
    ``Estimate``s for ``agreement.quality.run_quality``; None when the study has no gold units."""
    from annotate import study_gold_accuracy

    by_kind = study_gold_accuracy(layout, level=level, annotators=annotators)
    if by_kind is None:
        return None
    out: dict[str, dict[str, Estimate]] = {}
    for kind, rows in by_kind.items():
        out[kind] = {}
        for row in rows:
            ci = row.confidence_interval()
            out[kind][row.annotator] = Estimate(statistic=row.statistic, n=row.n, ci_low=ci.low, ci_high=ci.high,
                                                level=ci.level, method="accuracy on gold, Wilson",
                                                undefined_reason=row.reason, details={"correct": row.correct})
    return out


def _gold_table(gold: dict[str, dict[str, Estimate]]) -> Table:
    rows = [[kind, annotator, str(e.n), str(e.details["correct"]),
             e.format() if e.defined else f"-- ({e.undefined_reason})"]
            for kind, by_annotator in sorted(gold.items()) for annotator, e in sorted(by_annotator.items())]
    level = next((e.level for by in gold.values() for e in by.values()), 0.95)
    return Table(title="Gold units", header=["unit kind", "annotator", "gold units labelled", "correct",
                                             "gold accuracy [CI]"], rows=rows,
                 note=f"independent labels on known-answer units (sealed gold key); {level:.0%} Wilson score "
                      "intervals; gold labels never enter agreement, validation or the gate")


def _brief_text(brief: dict[str, Any]) -> str:
    from agreement import Interval

    return fmt_ci(Interval(**brief))


def live_view(folder: str | Path) -> LiveView:
    """The live tables of a study being labelled (an InputError when it has no sealed key yet)."""
    from agreement import QualityDocument, QualitySettings, quality_table, read_key, run_quality, settings_from_policy

    layout = StudyLayout.of(folder)
    if not layout.key.is_file():
        raise InputError(f"{layout.key}: missing; the live view starts once the study is blinded (accord blind)")
    key = read_key(layout)
    human, orders = live_labels(layout, key)
    per_annotator, per_stratum = _progress(human, orders, key)
    queue, adjudicated = _queue(human)
    notes = []
    policy = _policy_path(layout)
    if policy is not None:
        from agreement import load_policy

        settings = settings_from_policy(load_policy(policy))
    else:
        settings = QualitySettings(tie_policy="exclude", level=0.95, n_resamples=LIVE_RESAMPLES)
        notes.append("no gate policy found (study.json from accord run): quality without a flag rule, "
                     "agreement with default settings")
    tables = [per_annotator, per_stratum]
    gold = gold_estimates(layout, level=settings.level, annotators=sorted(orders))
    if gold is None:
        notes.append("no gold units, so no gold accuracy (accord gold add)")
    else:
        tables.append(_gold_table(gold))
    study = _study(layout, key, human)
    if (human["role"] == "independent").any():
        # A preview while people label: at most LIVE_RESAMPLES resamples, unless a fresh document holds the numbers.
        preview = replace(settings, n_resamples=min(settings.n_resamples, LIVE_RESAMPLES))
        tables.append(_validated_agreement(layout)
                      or _agreement(quality_table(study), preview.level, preview.n_resamples, preview.seed))
        document = _fresh(QualityDocument, layout) or QualityDocument.model_validate(run_quality(study, preview, gold))
        tables.append(annotator_quality_table(document))
    else:
        notes.append("no independent labels yet")
    return LiveView(tables=tables, queue=queue, adjudicated=adjudicated, notes=notes)

