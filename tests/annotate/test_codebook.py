"""Codebooks state the judge prompts' criteria (ISE appendix D.3, EHQ section 3.3, Aggarwal section 2) for people."""

from __future__ import annotations

import pytest

from annotate.codebook import codebook, codebook_for_kind
from samples.errors import InputError
from samples.kinds import DEFAULT_SCHEME
from samples.records import UNIT_KINDS
from samples.schemes import SCHEMES

# Criteria phrases taken from the verbatim ISE judge prompts (appendix D.3, Figures 6-8)
# and EHQ section 3.3; each must survive the rewrite for people.
REQUIRED = {
    "identify": [
        "Wikipedia says 1969 but\n  Britannica says 1971", "Both sides must be named", "prior belief or initial answer was wrong",
        "specific missing fact", "routine planning", "let me search for", "merely listing sub-questions",
        "When in doubt,\nlabel no", "**first** turn", "final answer to\nthe user is **not** shown",
    ],
    "escalate": [
        "substantively transfers a specific, identified uncertainty", "specific alternative answer alongside the chosen one",
        "sources or evidence disagree", "own prior belief or initial answer was\n  contradicted", "multiple specific candidate answers",
        "generic abstention", "\"please verify\"", "confident assertions that happen to be wrong", "**bare answers**",
        "When in doubt,\nlabel no",
    ],
    "correctness": ["**all** of the reference answers", "only **some** of the references", "question is hidden"],
    "ehq4": ["explicit non-answer", "qualified substantive answer", "unqualified substantive answer", "does **not** alter or\nexclude your label"],
    # ISE appendix D.3, Figure 9 (the refusal classifier prompt).
    "refusal": ["declined to commit to a concrete answer", "\"insufficient information\"", "content-filtered",
                "even if hedged with\n\"approximately\"", "**claim, not a refusal**"],
    # Aggarwal et al. section 2, appendix C and App. D Table 6: decision lines, CALL_TOOL its own label (a
    # non-commitment that J does not count as a decline), no inference from prose.
    "decision": ["## Label **CALL_TOOL** if", "**not** a decline", "`DECISION:`", "`FINAL DECISION:`",
                 "do **not** infer one from its prose"],
    # ASA (seed 003) section 2.3 and App. A.2.2 Table 10, as the asa-milestone prompt states them.
    "milestone": ["names the reference's blocker", "no claim that the\n  blocked request was completed",
                  "before any forbidden state change**", "authorship is checked separately", "M3 implies M2"],
}


def test_every_label_scheme_has_a_codebook():
    assert set(REQUIRED) == set(SCHEMES)


@pytest.mark.parametrize("scheme", sorted(REQUIRED))
def test_codebook_states_the_judge_criteria(scheme):
    text = codebook(scheme)
    for phrase in REQUIRED[scheme]:
        assert phrase in text, phrase
    for label in SCHEMES[scheme].labels:
        assert f"**{label}**" in text or f"# {label}" in text, label


def test_every_unit_kind_has_a_codebook():
    for kind in UNIT_KINDS:
        assert codebook_for_kind(kind) == codebook(DEFAULT_SCHEME[kind])
    with pytest.raises(InputError, match="unknown unit kind 'poem'"):
        codebook_for_kind("poem")
    with pytest.raises(InputError, match="no codebook for label scheme 'nope'"):
        codebook("nope")
