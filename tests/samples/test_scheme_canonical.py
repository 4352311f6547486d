"""LabelScheme.canonical: a typed label as the scheme spells it, from a case-folded map built once (issue #27)."""

from __future__ import annotations

from samples.schemes import LabelScheme


def test_canonical_ignores_case_and_space_and_refuses_what_folds_alike():
    scheme = LabelScheme(name="t", labels=("Yes", "yes", "No", "maybe"), positive="Yes", description="")
    assert scheme.canonical(" NO ") == "No" and scheme.canonical("Maybe") == "maybe"
    assert scheme.canonical("YES") is None  # "Yes" and "yes" fold alike: ambiguous, not a guess
    assert scheme.canonical("nope") is None
    # The map is cached on the object; equality and hashing stay those of the fields.
    assert scheme == LabelScheme(name="t", labels=("Yes", "yes", "No", "maybe"), positive="Yes", description="")
    assert hash(scheme) == hash(LabelScheme(name="t", labels=("Yes", "yes", "No", "maybe"), positive="Yes",
                                            description=""))
