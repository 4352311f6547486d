"""The numbered context (the unit's turns 0..i) that units of some kinds need in their judge message.

Apart from ``samples.sampler`` so that judging a study (``accord judge run``, every judge run a test
starts as a process) attaches it without importing numpy and pandas.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from samples.errors import InputError


def turn_contexts(trajectories_path: Path, wanted: set[str]) -> dict[str, list[str]]:
    """Numbered turns of the wanted trajectories (one streaming pass), for the context of kinds
    that need it (``samples.kinds``: identify_turn)."""
    from samples.jsonl import read_models
    from samples.records import Trajectory
    from samples.units import numbered_turns

    if not wanted:
        return {}
    if not trajectories_path.is_file():
        raise InputError(f"{trajectories_path}: needed for the numbered context of identify_turn units (run `accord ingest`)")
    found = {t.id: numbered_turns(t) for t in read_models(trajectories_path, Trajectory) if t.id in wanted}
    lost = sorted(wanted - set(found))
    if lost:
        raise InputError(f"{trajectories_path}: trajectories {lost[:5]} of the units are missing (units and trajectories differ)")
    return found


def with_context(units: Iterable[Any], trajectories: str | Path, *, kinds: Iterable[str] | None = None) -> list[Any]:
    """``units`` with the numbered context attached (``turns``, the unit's turns 0..i) where the
    kind needs it for its judge message and it is missing; reads ``trajectories`` (the study's
    trajectories.jsonl) once, only when some unit needs it. ``kinds`` limits it to the kinds
    that will be judged (population units stay small until then: see ``samples.units``)."""
    from samples.kinds import get_kind

    units = list(units)
    wanted = None if kinds is None else set(kinds)

    def needs(unit: Any) -> bool:
        return unit.turns is None and get_kind(unit.kind).needs_context and (wanted is None or unit.kind in wanted)

    missing = {u.trajectory_id for u in units if needs(u)}
    if not missing:
        return units
    contexts = turn_contexts(Path(trajectories), missing)
    return [_with_turns(u, contexts[u.trajectory_id]) if needs(u) else u for u in units]


def _with_turns(unit: Any, all_turns: Sequence[str]) -> Any:
    """The unit with ``turns`` = its context, from all numbered turns of its trajectory."""
    from samples.kinds import context_turns

    return unit.model_copy(update={"turns": context_turns(all_turns, unit.focus_turn)})
