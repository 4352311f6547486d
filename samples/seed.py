"""The one default seed: every sampled, blinded, resampled or simulated result is reproducible from it.

Every module and every CLI default reads it from here (tests/samples/test_seed.py holds
the source to that), so changing it is one line.
"""

DEFAULT_SEED = 20261129
