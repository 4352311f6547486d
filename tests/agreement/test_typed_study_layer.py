"""What type-checking the study layer found (issue #27: mypy over gate, validation, plan, scoring).

Each test is a case the types said could happen and the code did not handle: a traceback where the
user's data is degenerate, now the state the rest of the study layer handles.
"""

from __future__ import annotations

import pandas as pd
import pytest

from agreement.study_io import labels_table, load_study
from agreement.validation import scheme_of, validated_units
from samples.errors import InputError
from samples.layout import StudyLayout
from tests.agreement.test_study_io import write_ise_study


def test_a_judge_without_human_labels_has_no_validated_units_and_says_why(tmp_path) -> None:
    write_ise_study(tmp_path)
    StudyLayout.of(tmp_path).app_labels.unlink()  # the judges' labels stay; nobody labelled
    table = labels_table(load_study(tmp_path))
    # Was AttributeError ('NoneType' object has no attribute 'positive'); the scorer turns this error into a note.
    with pytest.raises(InputError, match=r"judge 'identify@j': no human labels on the judge's units"):
        validated_units(table, "identify@j", tie_policy="exclude")


def test_labels_of_a_kind_without_a_default_scheme_get_the_scheme_they_fit() -> None:
    # Was KeyError(None): the kind's default scheme was looked up although the kind has none.
    categories, positive = scheme_of(["a_kind_nobody_registered"], pd.Series(["yes", "no", "yes", None]))
    assert categories is not None and set(categories) == {"yes", "no"} and positive == "yes"
    assert scheme_of(["a_kind_nobody_registered"], pd.Series(["maybe"])) == (None, None)
