"""The one default seed: every sampled, blinded, resampled or simulated result is reproducible from it.

Every module and every CLI default reads it from here (tests/samples/test_seed.py holds
the source to that), so changing it is one line.
"""

DEFAULT_SEED = 20261129

MAX_SEED = 2**63 - 1
"""Seeds are 0..2**63-1: every store and table that records one holds it as a 64-bit integer."""


def check_seed(seed: object) -> int:
    """The seed as an int, or an ``InputError`` naming it (negative, oversized, not an integer)."""
    import numpy as np

    from samples.errors import InputError

    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed <= MAX_SEED:
        raise InputError(f"seed={seed!r}: expected an integer from 0 to 2**63-1")
    return int(seed)
