"""The human majority label per unit, with an explicit, counted tie policy.

ISE Table 7 compares the judge with "the majority label of the three annotators";
with missing ratings or more than two categories a majority can be tied, and the
way ties are resolved changes the judge's agreement. So the policy is a required
argument (no hidden default) and every tie is counted:

- ``exclude``: tied units get no majority and leave the judge-vs-majority panel;
- ``needs-adjudication``: as ``exclude`` for the statistics, and the tied unit ids
  are listed for adjudication (the panel reports itself incomplete);
- ``positive`` / ``negative``: a tie becomes the positive (negative) label; binary
  schemes only, with the positive label named by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from samples import InputError

TIE_POLICIES = ("exclude", "needs-adjudication", "positive", "negative")


@dataclass(frozen=True, kw_only=True)
class MajorityVote:
    """Majority label codes per unit (-1 where there is none) and the counts behind them."""

    codes: np.ndarray
    """(n_units,) category code of the majority, -1 for unrated or unresolved tied units."""
    tied: np.ndarray
    """(n_units,) True where the top vote count is shared by two or more categories."""
    tie_policy: str
    voters: tuple[str, ...]
    n_units: int
    n_ties: int
    n_unrated: int
    """Units no voter rated."""
    n_single: int
    """Units with exactly one voter's rating (their 'majority' is that one label)."""
    tied_units: tuple[str, ...]
    """Ids of tied units, in unit order (the adjudication queue under needs-adjudication)."""

    @property
    def n(self) -> int:
        """Units that have a majority label."""
        return int((self.codes >= 0).sum())

    @property
    def needs_adjudication(self) -> bool:
        return self.tie_policy == "needs-adjudication" and self.n_ties > 0


def check_tie_policy(tie_policy: str, categories: Sequence[str], positive: str | None) -> int | None:
    """Validate the policy; return the category code a tie resolves to (None: unresolved)."""
    if tie_policy not in TIE_POLICIES:
        raise InputError(f"tie_policy={tie_policy!r}: expected one of {', '.join(TIE_POLICIES)}")
    if tie_policy in ("exclude", "needs-adjudication"):
        return None
    if len(categories) != 2:
        raise InputError(f"tie_policy={tie_policy!r} needs exactly two categories (a binary scheme), "
                         f"got {len(categories)}: {list(categories)}")
    if positive is None or positive not in categories:
        raise InputError(f"tie_policy={tie_policy!r} needs positive= one of the categories {list(categories)}, "
                         f"got {positive!r}")
    code = list(categories).index(positive)
    return code if tie_policy == "positive" else 1 - code


def vote_counts(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """(n_units, q) number of ratings per category from an (n_units, r) code matrix (-1 missing)."""
    codes = np.asarray(codes)
    rows = np.broadcast_to(np.arange(codes.shape[0])[:, None], codes.shape)
    present = codes >= 0
    flat = rows[present] * n_categories + codes[present]
    return np.bincount(flat, minlength=codes.shape[0] * n_categories).reshape(codes.shape[0], n_categories)


def majority_vote(codes: np.ndarray, *, units: Sequence[str] | np.ndarray, categories: Sequence[str], voters: Sequence[str],
                  tie_policy: str, positive: str | None = None) -> MajorityVote:
    """Majority of the voters' ratings per unit; ``codes`` holds only the voters' columns."""
    resolve_to = check_tie_policy(tie_policy, categories, positive)
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] != len(voters) or codes.shape[0] != len(units):
        raise ValueError(f"codes has shape {codes.shape}, expected ({len(units)}, {len(voters)})")
    counts = vote_counts(codes, len(categories))
    top = counts.max(axis=1)
    rated = top > 0
    tied = rated & ((counts == top[:, None]).sum(axis=1) > 1)
    majority = np.where(rated, counts.argmax(axis=1), -1)
    majority = np.where(tied, -1 if resolve_to is None else resolve_to, majority)
    n_ratings = (codes >= 0).sum(axis=1)
    return MajorityVote(
        codes=majority,
        tied=tied,
        tie_policy=tie_policy,
        voters=tuple(voters),
        n_units=len(units),
        n_ties=int(tied.sum()),
        n_unrated=int((~rated).sum()),
        n_single=int((n_ratings == 1).sum()),
        tied_units=tuple(str(u) for u in np.asarray(units, dtype=object)[tied]),
    )
