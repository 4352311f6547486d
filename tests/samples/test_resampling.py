"""Resampling settings and confidence intervals are validated where they are built, with one message shape
(parameter=value: what is allowed), whoever builds them: the engine, a gate policy, the quality settings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agreement.gate import load_policy
from agreement.panels import PanelSettings
from agreement.quality import QualitySettings
from samples import DEFAULT_LEVEL, ConfidenceInterval, Resampling
from samples.errors import InputError
from samples.resampling import MAX_RESAMPLES, MIN_RESAMPLES
from samples.seed import DEFAULT_SEED


def test_defaults_come_from_their_owners():
    settings = Resampling(n_resamples=MIN_RESAMPLES)
    assert (settings.seed, settings.level) == (DEFAULT_SEED, DEFAULT_LEVEL) == (DEFAULT_SEED, 0.95)
    assert Resampling(n_resamples=np.int64(MAX_RESAMPLES)).n_resamples == MAX_RESAMPLES
    assert Resampling(n_resamples=0, allow_zero=True).n_resamples == 0


@pytest.mark.parametrize("values,message", [
    ({"n_resamples": MIN_RESAMPLES - 1}, "n_resamples=99: expected an integer from 100 to 1000000"),
    ({"n_resamples": MAX_RESAMPLES + 1}, "n_resamples=1000001: expected an integer from 100 to 1000000"),
    ({"n_resamples": 0}, "n_resamples=0: expected an integer from 100 to 1000000"),
    ({"n_resamples": 1, "allow_zero": True}, r"n_resamples=1: expected an integer from 100 to 1000000 or 0 \(no "),
    ({"n_resamples": True}, "n_resamples=True: expected an integer"),
    ({"n_resamples": 150.5}, "n_resamples=150.5: expected an integer"),
    ({"n_resamples": 200, "seed": -1}, r"seed=-1: expected an integer from 0 to 2\*\*63-1"),
    ({"n_resamples": 200, "seed": 2**63}, "seed=9223372036854775808: expected an integer"),
    ({"n_resamples": 200, "level": 1.0}, "level=1.0: expected a confidence level strictly between 0 and 1"),
    ({"n_resamples": 200, "level": 0}, "level=0: expected a confidence level strictly between 0 and 1"),
    ({"n_resamples": 200, "level": "0.9"}, "level='0.9': expected a confidence level"),
])
def test_bad_settings_name_parameter_value_and_what_is_allowed(values, message):
    with pytest.raises(InputError, match=message):
        Resampling(**values)


def test_every_builder_goes_through_the_one_check(tmp_path):
    with pytest.raises(InputError, match="n_resamples=50: expected an integer from 100"):
        QualitySettings(tie_policy="exclude", level=0.95, n_resamples=50)
    with pytest.raises(InputError, match="level=1.5: expected a confidence level"):
        QualitySettings(tie_policy="exclude", level=1.5, n_resamples=500)
    with pytest.raises(InputError, match="seed=-3: expected an integer from 0"):
        PanelSettings(n_resamples=0, seed=-3)
    assert PanelSettings(n_resamples=0).n_resamples == 0  # analytic intervals only
    path = tmp_path / "policy.toml"
    head = ('[policy]\nname = "p"\ndescription = "d"\nlevel = {level}\ntie_policy = "exclude"\n'
            'n_resamples = {n}\nseed = {seed}\n\n[[criteria]]\ntype = "unscored_share"\nmax_share = 0.1\n')
    for (level, n, seed), message in [((0.95, 10, 1), "n_resamples=10: expected an integer from 100"),
                                      ((1.2, 500, 1), "level=1.2: expected a confidence level"),
                                      ((0.9, 500, -1), "seed=-1: expected an integer from 0")]:
        path.write_text(head.format(level=level, n=n, seed=seed))
        with pytest.raises(InputError, match=message) as error:
            load_policy(path)
        assert str(error.value).startswith(f"{path} [policy]: ")
    path.write_text(head.format(level=0.9, n=500, seed=7))
    assert {k: load_policy(path).settings[k] for k in ("level", "n_resamples", "seed")} == \
        {"level": 0.9, "n_resamples": 500, "seed": 7}


def test_confidence_interval_shape():
    ci = ConfidenceInterval(low=0.1, high=0.3, level=0.9, method="percentile bootstrap")
    assert ci.defined and (ci.low, ci.high, ci.level, ci.method) == (0.1, 0.3, 0.9, "percentile bootstrap")
    undefined = ConfidenceInterval.undefined(level=0.95, method="t")
    assert not undefined.defined and math.isnan(undefined.low) and math.isnan(undefined.high)
    with pytest.raises(ValueError, match="low=0.5 > high=0.2"):
        ConfidenceInterval(low=0.5, high=0.2, level=0.95, method="t")
    with pytest.raises(ValueError, match="level=95: expected a confidence level"):
        ConfidenceInterval(low=0.1, high=0.2, level=95, method="t")
    with pytest.raises(TypeError):
        ConfidenceInterval(0.1, 0.2, 0.95, "t")  # type: ignore[misc]  # keyword-only on purpose
